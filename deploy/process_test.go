package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// startComponent runs one of workmap's binaries as its Deployment would (in its own folder
// and HOME), logging to a file that is printed when the test fails; it is killed when the test
// ends. exited receives the process's end (put it back when read, for the cleanup).
func startComponent(t *testing.T, name, binary string, args ...string) (exited chan error, logText func() string) {
	t.Helper()
	dir := t.TempDir()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	logText = func() string {
		out, _ := os.ReadFile(logPath)
		return string(out)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.Dir = dir
	require.NoError(t, cmd.Start())
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s log:\n%s", name, logText())
		}
	})
	return exited, logText
}
