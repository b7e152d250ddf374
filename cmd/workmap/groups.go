package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"
	schedulingv1alpha1 "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// GangKind is the kind of one gang's document in `groups -o json|yaml`.
const GangKind = "Gang"

// gang is one PodGroup the workmap scheduler forms, as `groups -o json|yaml` prints it: the
// workload, the PodGroup's name, where the gang comes from, and the gang.
type gang struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Workload   definitions.ObjectRef `json:"workload"`
	PodGroup   string                `json:"podGroup"`
	// Source is what forms the gang: "definition" (a definition's gang hints) or "native" (a
	// Go grouper, for Jobs and bare pods).
	Source string `json:"source"`
	definitions.Group
}

// workloadGangs are the gangs of one workload, from the grouper's one model of them.
type workloadGangs struct {
	workload definitions.ObjectRef
	source   grouper.Source
	groups   []definitions.Group
	// podGroups are the PodGroups the gangs become, in the order of groups; roles the tree's
	// roles each holds.
	podGroups []string
	roles     [][]string
	// note says, for a live object that is not its own top owner or for a pod, how it is
	// grouped.
	note string
	// none is shown in the PODGROUP column when there are no gangs (the default: pods
	// schedule one by one).
	none string
}

func newGroupsCommand(o *options) *cobra.Command {
	var files []string
	var out *outputFlags
	cmd := &cobra.Command{
		Use:               "groups (KIND/NAME | -f FILE)",
		ValidArgsFunction: o.completeWorkload,
		Short:             "Show the gangs (PodGroups with minMember) the workmap scheduler forms for a workload, or for one pod",
		Long: `Show the gangs (PodGroups with minMember) the workmap scheduler forms.

A live object is grouped exactly as workmap-scheduler groups its pods: its owner chain is
followed to the top-level workload (a Job of a JobSet shows the JobSet's gangs), and the
workload's gangs come from the same groupers (a definition's gang hints, or the built-in ones
for Jobs and bare pods). For a pod, the one gang it joins is shown, or why it has none.`,
		Example: `  workmap groups jobset/train -n ml
  workmap groups job/train-workers-0 -n ml
  workmap groups pod/train-workers-0-0-x7k2p -n ml
  workmap groups -f examples/jobset-leader-workers.yaml
  # A List of Gang documents; -o name names the PodGroups
  workmap groups jobset/train -n ml -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			var all []workloadGangs
			if len(files) > 0 {
				ws, err := o.workloads(cmd.Context(), files, args)
				if err != nil {
					return err
				}
				for _, w := range ws {
					all = append(all, gangsOfWorkload(w))
				}
			} else {
				g, err := o.liveGangs(cmd.Context(), args)
				if err != nil {
					return err
				}
				all = append(all, g)
			}
			if out.isText() {
				printGroups(o.out, all)
				return nil
			}
			var gangs []gang
			var refs []*unstructured.Unstructured
			for _, w := range all {
				for i, g := range w.groups {
					gangs = append(gangs, gang{APIVersion: definitions.DocumentAPIVersion, Kind: GangKind, Workload: w.workload, PodGroup: w.podGroups[i], Source: string(w.source), Group: g})
					refs = append(refs, nameRef(schedulingv1alpha1.SchemeGroupVersion.String(), "PodGroup", w.workload.Namespace, w.podGroups[i]))
				}
			}
			return out.printDocument(o.out, definitions.NewList(gangs), refList(refs))
		},
	}
	addSourceFlags(cmd, &files)
	out = addOutputFlags(cmd, &o.output, "", "", "tree")
	return cmd
}

// gangsOfWorkload are the gangs of a workload expanded offline, through the grouper's model.
// A manifest with generateName has no name yet: its PodGroups are named after the prefix
// (`rayjob-sample-*-cluster`).
func gangsOfWorkload(w *definitions.Workload) workloadGangs {
	ref := w.Workload
	return newWorkloadGangs(ref, grouper.SourceDefinition, grouper.WorkloadGangs(w),
		grouper.PodGroupsOf(ref.Namespace, ref.DisplayName(), w.Groups, grouper.OwnerReference(w)))
}

func newWorkloadGangs(ref definitions.ObjectRef, source grouper.Source, gangs grouper.Gangs, podGroups []*schedulingv1alpha1.PodGroup) workloadGangs {
	wg := workloadGangs{workload: ref, source: source}
	if gangs == nil {
		return wg
	}
	wg.groups = gangs.Groups()
	namer, _ := gangs.(grouper.RoleNamer)
	for i, pg := range podGroups {
		wg.podGroups = append(wg.podGroups, pg.Name)
		roles := wg.groups[i].Members
		if namer != nil {
			roles = namer.GroupRoles(wg.groups[i])
		}
		wg.roles = append(wg.roles, roles)
	}
	return wg
}

func printGroups(out io.Writer, all []workloadGangs) {
	for _, w := range all {
		if w.note != "" {
			fmt.Fprintln(out, w.note)
		}
	}
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tPODGROUP\tSCOPE\tMIN MEMBER\tROLES\tTIMEOUT")
	for _, w := range all {
		if len(w.groups) == 0 {
			none := w.none
			if none == "" {
				none = "<none: pods schedule one by one>"
			}
			fmt.Fprintf(tw, "%s/%s\t%s\t\t\t\t\n", w.workload.Kind, w.workload.DisplayName(), none)
			continue
		}
		for i, g := range w.groups {
			timeout := "-"
			if g.TimeoutSeconds != nil {
				timeout = fmt.Sprintf("%ds", *g.TimeoutSeconds)
			}
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%d\t%s\t%s\n", w.workload.Kind, w.workload.DisplayName(), w.podGroups[i], scopeText(g), g.MinMember, strings.Join(w.roles[i], ","), timeout)
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
