package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeCommand runs `workmap serve` in-process against a cluster that cannot be reached:
// it serves anyway, says so in the page, shows the namespaces -n and -A ask for, and stops
// cleanly when its context ends. (The pages over a live cluster are tested in webview.)
func TestServeCommand(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: from-kubeconfig}}]
current-context: c
`), 0o600))
	tests := map[string]struct {
		args      []string
		wantScope string
	}{
		"every namespace by default":   {wantScope: "all namespaces"},
		"-n shows one namespace":       {args: []string{"-n", "ml"}, wantScope: "namespace ml"},
		"-A wins over -n":              {args: []string{"-n", "ml", "-A"}, wantScope: "all namespaces"},
		"the kubeconfig's is not used": {args: []string{"--context", "c"}, wantScope: "all namespaces"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, w := io.Pipe()
			cmd := newRootCommand(w, io.Discard)
			cmd.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0", "--kubeconfig", kubeconfig}, tc.args...))
			done := make(chan error, 1)
			go func() { done <- cmd.ExecuteContext(ctx); w.Close() }()

			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err)
			url := strings.Fields(line)[2]
			require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), line)
			require.Eventually(t, func() bool {
				body := fetch(t, url)
				return strings.Contains(body, "cannot reach the cluster at https://127.0.0.1:1") && strings.Contains(body, tc.wantScope)
			}, 10*time.Second, 50*time.Millisecond)

			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not stop")
			}
		})
	}
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
