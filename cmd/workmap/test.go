package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/workmap/workmap/definitions/fixtures"
)

func newTestCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "test DIR",
		Short: "Run definition fixtures: recorded workloads and the result their definition must give",
		Long: `Runs every fixture (*.yaml) under DIR against the embedded catalog, overridden by
--definitions. A fixture holds a root object, its child objects and pods, and the expected
state, reason, pods, GPUs, roles and gangs; see docs/writing-definitions.md.`,
		Example: `  workmap test --definitions my-definition.yaml testdata/my-kind/`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := o.registry()
			if err != nil {
				return err
			}
			files, err := fixtures.Files(args[0])
			if err != nil {
				return err
			}
			if len(files) == 0 {
				return fmt.Errorf("no fixtures (*.yaml) under %s", args[0])
			}
			// Every fixture gets one line, and a malformed one does not stop the others.
			failed := 0
			for _, file := range files {
				f, err := fixtures.Load(file)
				if err != nil {
					failed++
					fmt.Fprintf(o.out, "ERROR %v\n", err)
					continue
				}
				res, err := fixtures.Run(reg, f)
				if err != nil {
					failed++
					fmt.Fprintf(o.out, "ERROR %s: %v\n", f.Source, err)
					continue
				}
				if res.Passed() {
					fmt.Fprintf(o.out, "ok    %s (%s)\n", f.Source, res.Workload.Status.State)
					continue
				}
				failed++
				fmt.Fprintf(o.out, "FAIL  %s\n", f.Source)
				for _, msg := range res.Failures {
					fmt.Fprintf(o.out, "      %s\n", msg)
				}
			}
			fmt.Fprintf(o.out, "%d passed, %d failed\n", len(files)-failed, failed)
			if failed > 0 {
				return fmt.Errorf("%d of %d fixtures failed", failed, len(files))
			}
			return nil
		},
	}
}
