package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The variables that name prebuilt binaries of this repository's commands (`make unit` passes
// those in bin/); without one the harness builds that command once per test process.
const (
	EnvSchedulerBinary = "WORKMAP_SCHEDULER"
	EnvWebhookBinary   = "WORKMAP_WEBHOOK"
	EnvCLIBinary       = "WORKMAP_CLI"
)

// builtCommands holds, per command name, the build of that command for this test process.
var builtCommands sync.Map // string → func() (string, error)

// commandBinary returns the binary of one of this repository's commands (./cmd/NAME): the file
// $env names when set, else one built the first time a test of this process asks for it, into a
// temporary folder (left behind: a test process has no hook that runs after its last test).
func commandBinary(name, env string) (string, error) {
	if b := os.Getenv(env); b != "" {
		return b, nil
	}
	build, _ := builtCommands.LoadOrStore(name, sync.OnceValues(func() (string, error) { return buildCommand(name) }))
	return build.(func() (string, error))()
}

func buildCommand(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// SchedulerBinary returns the workmap-scheduler binary to run: $WORKMAP_SCHEDULER, else one
// built from this repository once per test process.
func SchedulerBinary() (string, error) {
	return commandBinary("workmap-scheduler", EnvSchedulerBinary)
}

// WebhookBinary is workmap-webhook: $WORKMAP_WEBHOOK, else one built once per test process.
func WebhookBinary(t testing.TB) string {
	t.Helper()
	return mustCommandBinary(t, "workmap-webhook", EnvWebhookBinary)
}

// CLIBinary is the workmap CLI: $WORKMAP_CLI, else one built once per test process.
func CLIBinary(t testing.TB) string {
	t.Helper()
	return mustCommandBinary(t, "workmap", EnvCLIBinary)
}

func mustCommandBinary(t testing.TB, name, env string) string {
	t.Helper()
	bin, err := commandBinary(name, env)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
