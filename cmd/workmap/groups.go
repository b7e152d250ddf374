package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	schedulingv1alpha1 "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// GangKind is the kind of one gang's document in `groups -o json|yaml`.
const GangKind = "Gang"

// gang is one PodGroup the workmap scheduler would create, as `groups -o json|yaml` prints
// it: the workload, the PodGroup's name, and the gang.
type gang struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Workload   definitions.ObjectRef `json:"workload"`
	PodGroup   string                `json:"podGroup"`
	definitions.Group
}

func newGroupsCommand(o *options) *cobra.Command {
	var files []string
	var out *outputFlags
	cmd := &cobra.Command{
		Use:   "groups (KIND/NAME | -f FILE)",
		Short: "Show the gangs (PodGroups with minMember) the workmap scheduler would form for a workload",
		Example: `  workmap groups jobset/train -n ml
  workmap groups -f examples/jobset-leader-workers.yaml
  # A List of Gang documents; -o name names the PodGroups
  workmap groups jobset/train -n ml -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			ws, err := o.workloads(cmd.Context(), files, args)
			if err != nil {
				return err
			}
			if out.isText() {
				printGroups(o.out, ws)
				return nil
			}
			var gangs []gang
			var refs []*unstructured.Unstructured
			for _, w := range ws {
				for _, g := range w.Groups {
					name := g.PodGroupName(w.Workload.Name)
					gangs = append(gangs, gang{APIVersion: definitions.DocumentAPIVersion, Kind: GangKind, Workload: w.Workload, PodGroup: name, Group: g})
					refs = append(refs, nameRef(schedulingv1alpha1.SchemeGroupVersion.String(), "PodGroup", w.Workload.Namespace, name))
				}
			}
			return out.printDocument(o.out, definitions.NewList(gangs), refList(refs))
		},
	}
	addSourceFlags(cmd, &files)
	out = addOutputFlags(cmd, &o.output, "", "", "tree")
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
