// Command workmap shows AI workloads on Kubernetes as trees of roles, pods and GPUs, using
// workload definitions instead of per-framework code. Installed as kubectl-workmap it is
// also a kubectl plugin (`kubectl workmap ...`).
//
// Each command reads its arguments, reads what it shows, and prints it. What it shows from a
// live cluster it reads through one workloadReader (reader.go): Read (read.go) gives one
// workload whole, kinds resolved as kubectl resolves them (kinds.go); -f reads manifests
// offline.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
)

func main() {
	// A command lives for well under a second and holds one listing at a time: collecting
	// garbage at 4× the live heap rather than 2× saves a good part of its CPU on a workload of a
	// thousand pods. GOGC in the environment still decides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if err := newRootCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
