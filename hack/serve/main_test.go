package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrintBuilds: `serve -print-builds` names the tool modules of the operators its
// -operators flag selects, which `make serve` builds, so that `-operators=none` on a fresh
// machine does not wait for six operators to compile and a list builds only those.
func TestPrintBuilds(t *testing.T) {
	every := "lws kuberay training-operator mpi-operator kserve milvus-operator"
	tests := map[string]struct {
		only    string
		want    string
		wantErr string
	}{
		"all (the default)":       {only: "all", want: every},
		"none":                    {only: "none", want: ""},
		"an empty list is none":   {only: "", want: ""},
		"serve's names, mapped":   {only: "lws,pytorchjob,milvus", want: "lws training-operator milvus-operator"},
		"spaces around the names": {only: "mpijob, kserve", want: "mpi-operator kserve"},
		"an unknown name":         {only: "kuberay,nosuch", wantErr: `-operators: unknown operator "nosuch" (known: lws,kuberay,pytorchjob,mpijob,kserve,milvus)`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			selected, err := selectOperators(tc.only)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, tools(selected))
		})
	}
}

// TestOperatorsHaveTheirBuilds: every operator serve starts is one the Makefile builds for
// the tests (OPERATORS), from a tool module hack/build-operator.sh knows.
func TestOperatorsHaveTheirBuilds(t *testing.T) {
	root := filepath.Join("..", "..")
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^OPERATORS := (.*)$`).FindSubmatch(makefile)
	require.NotNil(t, m, "the Makefile sets no OPERATORS")
	script, err := os.ReadFile(filepath.Join(root, "hack", "build-operator.sh"))
	require.NoError(t, err)
	require.ElementsMatch(t, strings.Fields(string(m[1])), strings.Fields(tools(operators)), "the Makefile's OPERATORS and serve's operators")
	for _, o := range operators {
		require.FileExists(t, filepath.Join(root, "hack", "tools", o.tool, "go.mod"), o.flag)
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(o.tool)+`\)`, string(script), "hack/build-operator.sh has no case for %s", o.tool)
	}
}
