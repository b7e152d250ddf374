package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildCommand returns the binary of one of this repository's commands (./cmd/NAME): the file
// $env names when set, else one built into the test's folder.
func buildCommand(t testing.TB, name, env string) string {
	t.Helper()
	if b := os.Getenv(env); b != "" {
		return b
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

// EnvWebhookBinary and EnvCLIBinary name prebuilt workmap-webhook and workmap binaries
// (`make unit` passes those in bin/); without them each test builds its own.
const (
	EnvWebhookBinary = "WORKMAP_WEBHOOK"
	EnvCLIBinary     = "WORKMAP_CLI"
)

// WebhookBinary is workmap-webhook: $WORKMAP_WEBHOOK, else one built for the test.
func WebhookBinary(t testing.TB) string {
	t.Helper()
	return buildCommand(t, "workmap-webhook", EnvWebhookBinary)
}

// CLIBinary is the workmap CLI: $WORKMAP_CLI, else one built for the test.
func CLIBinary(t testing.TB) string {
	t.Helper()
	return buildCommand(t, "workmap", EnvCLIBinary)
}
