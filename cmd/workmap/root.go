package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// options are the flags shared by every command.
type options struct {
	out, errOut    io.Writer
	definitionDirs []string
	output         string
}

func newRootCommand(out, errOut io.Writer) *cobra.Command {
	o := &options{out: out, errOut: errOut}
	name := "workmap"
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		name = "kubectl workmap"
	}
	root := &cobra.Command{
		Use:           name,
		Short:         "Show AI workloads on Kubernetes as trees of roles, pods and GPUs",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.PersistentFlags().StringSliceVar(&o.definitionDirs, "definitions", nil, "files or directories of WorkloadDefinitions that override the embedded catalog")
	root.AddCommand(newTreeCommand(o), newLintCommand(o), newTestCommand(o))
	return root
}
