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
	// Backend is, live, what holds the gang: who makes its PodGroup and the PodGroup's API
	// version (none offline, nor for a gang not in effect). The gang's state is State.
	Backend *gangBackend `json:"backend,omitempty"`
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
	// live says the gangs were read from a cluster: the table shows what holds each and its
	// state (each group's State).
	live bool
	// backends hold the gangs, in the order of groups (live; nil for a gang not in effect).
	backends []*gangBackend
	// held is, for a pod that names its PodGroup itself (shown as none), what holds that
	// PodGroup and its state.
	held *heldGang
}

// heldGang is a gang workmap does not form: the PodGroup a pod names itself.
type heldGang struct {
	backend *gangBackend
	state   *definitions.GangState
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
for Jobs and bare pods). For a pod, the one gang it joins is shown, or why it has none.

Live, each gang also shows what holds it (BACKEND): a PodGroup workmap-scheduler makes
(scheduling.x-k8s.io), a native PodGroup (scheduling.k8s.io) for Kubernetes' own gang
scheduling, or an operator's PodGroup: one the pods name themselves, or one of the gang's
name that another controller made (operator NAME: who, from its app.kubernetes.io/managed-by
label or its controller); and its STATE: the
PodGroup's phase, the scheduler's last reason for a gang that waits, that the PodGroup is not
made yet, or why the gang is not in effect. -o json|yaml carry both (backend, state).

TOPOLOGY is where a gang's pods must or should be placed (rack required, hostname preferred),
"-" when unconstrained. -o wide adds TOPOLOGY SOURCE (definition, or annotation: the
workload's workmap.dev/topology-required or -preferred) and, live, DOMAIN: the domain the
scheduler placed a constrained gang in (cloud.example.com/rack=r2). -o json|yaml carry them as
topology and state.domain.`,
		Example: `  workmap groups jobset/train -n ml
  workmap groups job/train-workers-0 -n ml
  workmap groups pod/train-workers-0-0-x7k2p -n ml
  workmap groups -f examples/jobset-leader-workers.yaml
  # Where each gang is placed: its topology, where that comes from, the domain chosen
  workmap groups jobset/train -n ml -o wide
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
					g, err := gangsOfWorkload(w)
					if err != nil {
						return err
					}
					all = append(all, g)
				}
			} else {
				ref, err := workloadArgOf(args)
				if err != nil {
					return err
				}
				r, err := o.workloadReader()
				if err != nil {
					return err
				}
				r.gangs.Reasons = true // one events list per waiting gang says why it waits
				g, err := r.ReadGangs(contextOf(cmd), ref)
				if err != nil {
					return err
				}
				all = append(all, g)
			}
			if out.isText() {
				printGroups(o.out, all, out.format() == "wide")
				return nil
			}
			gangs, refs := gangDocuments(all)
			return out.printDocument(o.out, definitions.NewList(gangs), refList(refs))
		},
	}
	addSourceFlags(cmd, &files)
	out = addOutputFlags(cmd, &o.output, "", "", "tree", "wide")
	return cmd
}

// gangsOfWorkload are the gangs of a workload expanded offline, as the scheduler will form
// them: through the grouper's model of the definition's gangs, or the built-in grouper of the
// kind (a Job, a bare pod). A manifest with generateName has no name yet: its PodGroups are
// named after the prefix (`rayjob-sample-*-cluster`).
func gangsOfWorkload(w *definitions.Workload) (workloadGangs, error) {
	ref := w.Workload
	gangs, source, err := grouper.GangsOfManifest(grouper.DefaultNatives(), w)
	if err != nil {
		return workloadGangs{}, err
	}
	return newWorkloadGangs(ref, source, gangs,
		grouper.PodGroupsOf(ref.Namespace, ref.DisplayName(), gangs.Groups(), grouper.OwnerReference(w))), nil
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

// gangDocuments are the Gang documents of `groups -o json|yaml`, and the PodGroups they name
// for -o name (each of its backend's API version; scheduling.x-k8s.io offline).
func gangDocuments(all []workloadGangs) ([]gang, []*unstructured.Unstructured) {
	var gangs []gang
	var refs []*unstructured.Unstructured
	for _, w := range all {
		for i, g := range w.groups {
			d := gang{APIVersion: definitions.DocumentAPIVersion, Kind: GangKind, Workload: w.workload, PodGroup: w.podGroups[i], Source: string(w.source), Group: g}
			apiVersion := schedulingv1alpha1.SchemeGroupVersion.String()
			if w.live {
				d.Backend = w.backends[i]
			}
			if d.Backend != nil {
				apiVersion = d.Backend.APIVersion
			}
			gangs = append(gangs, d)
			refs = append(refs, nameRef(apiVersion, "PodGroup", w.workload.Namespace, w.podGroups[i]))
		}
	}
	return gangs, refs
}

// printGroups prints the gangs as a table, with each gang's topology; live, with what holds
// each gang and its state. wide adds where each gang's topology comes from and, live, the
// domain it was placed in.
func printGroups(out io.Writer, all []workloadGangs, wide bool) {
	live := false
	for _, w := range all {
		if w.note != "" {
			fmt.Fprintln(out, w.note)
		}
		live = live || w.live
	}
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	header := "WORKLOAD\tPODGROUP\tSCOPE\tMIN MEMBER\tROLES\tTIMEOUT\tTOPOLOGY"
	if wide {
		header += "\tTOPOLOGY SOURCE"
		if live {
			header += "\tDOMAIN"
		}
	}
	if live {
		header += "\tBACKEND\tSTATE"
	}
	fmt.Fprintln(tw, header)
	for _, w := range all {
		if len(w.groups) == 0 {
			none := w.none
			if none == "" {
				none = "<none: pods schedule one by one>"
			}
			row := fmt.Sprintf("%s/%s\t%s\t\t\t\t\t", w.workload.Kind, w.workload.DisplayName(), none)
			if wide {
				row += "\t"
				if live {
					row += "\t" + heldDomain(w.held)
				}
			}
			if live {
				row += "\t" + heldText(w.held)
			}
			fmt.Fprintln(tw, row)
			continue
		}
		for i, g := range w.groups {
			timeout := "-"
			if g.TimeoutSeconds != nil {
				timeout = fmt.Sprintf("%ds", *g.TimeoutSeconds)
			}
			row := fmt.Sprintf("%s/%s\t%s\t%s\t%d\t%s\t%s\t%s", w.workload.Kind, w.workload.DisplayName(), w.podGroups[i], scopeText(g), g.MinMember, strings.Join(w.roles[i], ","), timeout, orDash(topologyText(g.Topology)))
			if wide {
				source := "-"
				if g.Topology != nil {
					source = g.Topology.Source
				}
				row += "\t" + source
				if live {
					row += "\t" + domainText(g.State)
				}
			}
			if live {
				row += "\t" + liveGangText(w, i)
			}
			fmt.Fprintln(tw, row)
		}
	}
	tw.Flush()
}

// orDash is s, or "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// domainText is the DOMAIN cell of a live gang: the domain the scheduler placed it in
// (cloud.example.com/rack=r2), "-" for none (unconstrained, not placed yet, not read).
func domainText(s *definitions.GangState) string {
	if s == nil || !s.Found {
		return "-"
	}
	return orDash(s.Domain)
}

// heldDomain is the DOMAIN cell of a gang workmap does not form (empty for none).
func heldDomain(h *heldGang) string {
	if h == nil {
		return ""
	}
	return domainText(h.state)
}

// liveGangText are the BACKEND and STATE cells of a live gang ("-" for what was not read).
func liveGangText(w workloadGangs, i int) string {
	var backend *gangBackend
	if i < len(w.backends) {
		backend = w.backends[i]
	}
	state := "-"
	if s := w.groups[i].State; s != nil {
		state = gangStatus(s)
	}
	return backend.String() + "\t" + state
}

// heldText are the BACKEND and STATE cells of a gang workmap does not form (empty for none).
func heldText(h *heldGang) string {
	if h == nil {
		return "\t"
	}
	state := "-"
	if h.state != nil {
		state = gangStatus(h.state)
	}
	return h.backend.String() + "\t" + state
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
