package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/workmap/workmap/definitions"
)

// podGroup is one PodGroup that would be created, as `groups` prints it.
type podGroup struct {
	Workload string `json:"workload"`
	PodGroup string `json:"podGroup"`
	definitions.Group
}

func newGroupsCommand(o *options) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "groups (KIND/NAME | -f FILE)",
		Short: "Show the gangs (PodGroups with minMember) the workmap scheduler would form for a workload",
		Example: `  workmap groups jobset/train -n ml
  workmap groups -f examples/jobset-leader-workers.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := o.workloads(cmd.Context(), files, args)
			if err != nil {
				return err
			}
			var all []podGroup
			for _, w := range ws {
				for _, g := range w.Groups {
					all = append(all, podGroup{Workload: w.Workload.Kind + "/" + w.Workload.Name, PodGroup: g.PodGroupName(w.Workload.Name), Group: g})
				}
			}
			switch o.output {
			case "json", "yaml":
				if all == nil {
					all = []podGroup{}
				}
				return o.printDocument(all)
			case "", "tree":
				printGroups(o.out, ws)
				return nil
			}
			return fmt.Errorf("unknown output format %q: use json or yaml", o.output)
		},
	}
	addSourceFlags(cmd, &files)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml")
	return cmd
}

func printGroups(out io.Writer, ws []*definitions.Workload) {
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tPODGROUP\tSCOPE\tMIN MEMBER\tMEMBERS\tTIMEOUT")
	for _, w := range ws {
		if len(w.Groups) == 0 {
			fmt.Fprintf(tw, "%s/%s\t<none: pods schedule one by one>\t\t\t\t\n", w.Workload.Kind, w.Workload.Name)
			continue
		}
		for _, g := range w.Groups {
			timeout := "-"
			if g.TimeoutSeconds != nil {
				timeout = fmt.Sprintf("%ds", *g.TimeoutSeconds)
			}
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%d\t%s\t%s\n", w.Workload.Kind, w.Workload.Name, g.PodGroupName(w.Workload.Name), scopeText(g), g.MinMember, strings.Join(g.Members, ","), timeout)
		}
	}
	tw.Flush()
}

func scopeText(g definitions.Group) string {
	switch {
	case g.Replica != nil:
		return fmt.Sprintf("%s %d", g.Scope, *g.Replica)
	case g.Instance != "":
		return fmt.Sprintf("%s %s", g.Scope, g.Instance)
	}
	return string(g.Scope)
}
