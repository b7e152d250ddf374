// Command workmap shows AI workloads on Kubernetes as trees of roles, pods and GPUs, using
// workload definitions instead of per-framework code. Installed as kubectl-workmap it is
// also a kubectl plugin (`kubectl workmap ...`).
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
