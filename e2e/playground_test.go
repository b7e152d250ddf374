package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/e2e/harness"
)

// TestPlaygroundLeavesNoProcess: `make serve` and `make demo`, stopped the ways a user stops
// them — Ctrl-C (SIGINT to the terminal's process group), closing the terminal (SIGHUP to the
// group), `kill` of make's process (SIGTERM to make alone) — leave none of the processes they
// started running: no control-plane component, operator, scheduler or workmap serve.
func TestPlaygroundLeavesNoProcess(t *testing.T) {
	root, err := harness.RepoRoot()
	require.NoError(t, err)
	tests := map[string]struct {
		target string
		// ready is the line of output after which it is stopped.
		ready string
		// group: the signal goes to make's whole process group, as a terminal sends it;
		// otherwise to make's process alone.
		signal syscall.Signal
		group  bool
	}{
		"make serve, Ctrl-C":                    {target: "serve", ready: "Press Ctrl-C to stop.", signal: syscall.SIGINT, group: true},
		"make serve, the terminal closed":       {target: "serve", ready: "Press Ctrl-C to stop.", signal: syscall.SIGHUP, group: true},
		"make serve, kill of make":              {target: "serve", ready: "Press Ctrl-C to stop.", signal: syscall.SIGTERM},
		"make demo, kill of make while it runs": {target: "demo", ready: "==> Starting workmap-scheduler", signal: syscall.SIGTERM},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("make", "--no-print-directory", tc.target, "SERVE_FLAGS=-operators=none", "SERVE_ADDR="+freeAddr(t))
			cmd.Dir = root
			cmd.Env = withoutMake(os.Environ())
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a process group of its own, as a shell's job
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			cmd.Stderr = cmd.Stdout
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			lines := make(chan string, 1024)
			go func() {
				scanner := bufio.NewScanner(out)
				for scanner.Scan() {
					select {
					case lines <- scanner.Text():
					default: // nobody reads any more
					}
				}
				exited <- cmd.Wait()
			}()
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

			var seen []string
			deadline := time.After(5 * time.Minute)
		waitReady:
			for {
				select {
				case l := <-lines:
					seen = append(seen, l)
					if strings.Contains(l, tc.ready) {
						break waitReady
					}
				case err := <-exited:
					t.Fatalf("make %s exited before %q (%v):\n%s", tc.target, tc.ready, err, strings.Join(seen, "\n"))
				case <-deadline:
					t.Fatalf("make %s never printed %q:\n%s", tc.target, tc.ready, strings.Join(seen, "\n"))
				}
			}
			started := descendants(t, cmd.Process.Pid)
			require.NotEmpty(t, started)
			t.Logf("make %s runs %d processes; sending %s", tc.target, len(started), tc.signal)

			target := cmd.Process.Pid
			if tc.group {
				target = -target
			}
			require.NoError(t, syscall.Kill(target, tc.signal))
			select {
			case <-exited:
			case <-time.After(2 * time.Minute):
				t.Fatalf("make %s still runs 2 minutes after %s", tc.target, tc.signal)
			}
			for len(lines) > 0 {
				seen = append(seen, <-lines)
			}
			require.Contains(t, strings.Join(seen, "\n"), fmt.Sprintf("==> %s: tearing down the control plane", tc.signal),
				"stopped by the signal, not run to its end")
			require.Eventually(t, func() bool { return len(alive(started)) == 0 }, 10*time.Second, 100*time.Millisecond,
				"processes left running after make %s got %s: %v", tc.target, tc.signal, alive(started))
		})
	}
}

// freeAddr is a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// withoutMake drops the variables of an enclosing make (`make test`), which would change how
// the inner make runs.
func withoutMake(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "MAKEFLAGS=") && !strings.HasPrefix(e, "MFLAGS=") && !strings.HasPrefix(e, "MAKELEVEL=") {
			out = append(out, e)
		}
	}
	return out
}

// descendants are the processes below pid (by parent), each with its command name.
func descendants(t *testing.T, pid int) map[int]string {
	children := map[int][]int{}
	names := map[int]string{}
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		name, ppid, _, ok := procStat(p)
		if ok {
			children[ppid] = append(children[ppid], p)
			names[p] = name
		}
	}
	out := map[int]string{}
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		out[p] = names[p]
		queue = append(queue, children[p]...)
	}
	return out
}

// alive are the processes of ps still running (a zombie, whose parent is gone, is not).
func alive(ps map[int]string) []string {
	var out []string
	for p, name := range ps {
		if n, _, state, ok := procStat(p); ok && n == name && state != "Z" {
			out = append(out, fmt.Sprintf("%d %s", p, name))
		}
	}
	return out
}

// procStat reads a process's command name, parent and state from /proc.
func procStat(pid int) (name string, ppid int, state string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, "", false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", 0, "", false
	}
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 2 {
		return "", 0, "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	return s[open+1 : closing], ppid, fields[0], err == nil
}
