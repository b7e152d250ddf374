package harness

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/workmap/workmap/internal/needs"
)

// EnvBinDir names the folder holding the control-plane binaries.
const EnvBinDir = "WORKMAP_K8S_BIN"

// defaultBinDir is where `make controlplane` puts the binaries, relative to the repository.
const defaultBinDir = "bin/k8s-v1.36.3"

var requiredBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"}

// RepoRoot returns the repository root (the folder holding go.mod) above the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// BinDir returns the folder of control-plane binaries, or skips the test when they are absent.
func BinDir(t T) string {
	t.Helper()
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			needs.Skip(t, "control-plane binaries not found (%v): run `make controlplane` or set %s", err, EnvBinDir)
		}
		dir = filepath.Join(root, defaultBinDir)
	}
	for _, b := range requiredBinaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			needs.Skip(t, "control-plane binary %s missing in %s: run `make controlplane` (or set %s) to run this test", b, dir, EnvBinDir)
		}
	}
	return dir
}
