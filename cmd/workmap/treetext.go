package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// textOptions tune the tree's text: colour, -o wide, and the time pods' ages are taken at.
type textOptions struct {
	color bool
	// wide shows everything: roles without pods, every instance, 0 GPUs, each pod's owner,
	// age and restarts, and per role the requests of one pod and where its template is.
	wide bool
	now  time.Time
}

// collapseRun is the shortest run of like instances the tree shows as one line.
const collapseRun = 4

var stateColor = map[v1alpha1.State]string{
	v1alpha1.StateRunning: "32", v1alpha1.StateCompleted: "32",
	v1alpha1.StatePending: "33", v1alpha1.StateInitializing: "33", v1alpha1.StateSuspended: "33", v1alpha1.StateDegraded: "33",
	v1alpha1.StateFailed: "31", v1alpha1.StateUnknown: "35",
}

// printTree writes a workload as a tree of its roles, their replicas and live pods, then its
// gangs and totals. Without -o wide it leaves out what says nothing: roles that expect no
// pods (named on one line), "0 GPUs", and runs of identical instances (one line each run).
func printTree(out io.Writer, w *definitions.Workload, opts textOptions) {
	state := string(w.Status.State)
	if opts.color {
		state = "\x1b[" + stateColor[w.Status.State] + "m" + state + "\x1b[0m"
	}
	fmt.Fprintf(out, "%s %s  %s: %s\n", w.Workload.Kind, workloadName(w.Workload), state, w.Status.Reason)
	roles, hidden := shownRoles(w.Roles, opts.wide)
	for i, r := range roles {
		branch, indent := "├─ ", "│  "
		if i == len(roles)-1 {
			branch, indent = "└─ ", "   "
		}
		gpus := ""
		if r.GPUs != 0 || opts.wide {
			gpus = "  " + gpuText(r.GPUs)
		}
		fmt.Fprintf(out, "%s%s  %s%s%s\n", branch, r.Name, replicasText(r), gpus, foundText(r.PodsFound, r.Pods, r.Phases))
		lines := instanceLines(r.Instances, opts.wide)
		for j, l := range lines {
			b, sub := "├─ ", "│  "
			if j == len(lines)-1 && len(r.FoundPods) == 0 {
				b, sub = "└─ ", "   "
			}
			fmt.Fprintf(out, "%s%s%s\n", indent, b, l.text)
			printPods(out, indent+sub, l.pods, opts)
		}
		printPods(out, indent, r.FoundPods, opts)
	}
	if len(hidden) > 0 {
		fmt.Fprintf(out, "(%s with no pods: %s — shown by -o wide)\n", plural(int64(len(hidden)), "role"), strings.Join(hidden, ", "))
	}
	if w.Live != nil && w.Live.Unassigned > 0 {
		fmt.Fprintf(out, "Unassigned: %s of the workload match no role\n", plural(int64(w.Live.Unassigned), "pod"))
	}
	for _, g := range w.Groups {
		fmt.Fprintln(out, gangLine(w, g))
	}
	if len(w.Groups) == 0 {
		fmt.Fprintln(out, "Gang: none")
	}
	gpus := ""
	if w.Totals.GPUs != 0 || opts.wide {
		gpus = ", " + gpuText(w.Totals.GPUs)
	}
	fmt.Fprintf(out, "Total: %s%s%s\n", plural(w.Totals.Pods, "pod"), gpus, otherResources(w.Totals.Resources, w.Totals.GPUSources))
	for _, warn := range w.Warnings {
		fmt.Fprintf(out, "Warning: %s\n", warn)
	}
	if opts.wide {
		printWide(out, w)
	}
}

// workloadName is namespace/name, or the name alone without a namespace; a manifest that
// only gives generateName shows its prefix (rayjob-sample-*).
func workloadName(ref definitions.ObjectRef) string {
	if ref.Namespace != "" {
		return ref.Namespace + "/" + ref.DisplayName()
	}
	return ref.DisplayName()
}

// shownRoles are the roles the tree shows, and the names of those it leaves out: without
// wide, the roles that expect no pods and have none, unless they could not be read.
func shownRoles(roles []definitions.Role, wide bool) ([]definitions.Role, []string) {
	if wide {
		return roles, nil
	}
	var shown []definitions.Role
	var hidden []string
	for _, r := range roles {
		_, unreadable := r.Unreadable()
		if r.Pods == 0 && !unreadable && (r.PodsFound == nil || *r.PodsFound == 0) {
			hidden = append(hidden, r.Name)
			continue
		}
		shown = append(shown, r)
	}
	return shown, hidden
}

// gangLine is one gang: its name, the roles whose pods it holds (as the tree names them) and
// its replica, and its minMember: "Gang multinode (decode, replica 0): minMember 2". A computed
// gang is named by its entry, as its PodGroup is: "Gang scaled prefill-0 (replica 0)". Then its
// topology and where that comes from, for a constrained gang ("; topology: rack required (from
// the definition)"), and live its state.
func gangLine(w *definitions.Workload, g definitions.Group) string {
	name := g.Name
	var scope []string
	roles := w.GroupRoles(g)
	if g.Instance != "" && !slices.Equal(roles, []string{g.Instance}) {
		name += " " + g.Instance // a computed gang: each pod chooses its entry
	} else {
		scope = append(scope, roles...)
	}
	if g.Replica != nil {
		scope = append(scope, fmt.Sprintf("replica %d", *g.Replica))
	}
	if len(scope) > 0 {
		name += " (" + strings.Join(scope, ", ") + ")"
	}
	return fmt.Sprintf("Gang %s: minMember %d%s%s", name, g.MinMember, gangTopologyText(g.Topology), gangStateText(g.State))
}

// printWide adds, per role, the effective requests of one pod and where its template is.
func printWide(out io.Writer, w *definitions.Workload) {
	for _, r := range w.Roles {
		line := fmt.Sprintf("Role %s: per pod: %s", r.Name, resourcesText(r.PodResources))
		if len(r.GPUSources) > 0 {
			line += "; GPUs of the role: " + gpuSources(r.GPUSources)
		}
		if r.Location != "" {
			line += "; template at " + r.Location
		}
		fmt.Fprintln(out, line)
	}
	if len(w.Totals.GPUSources) > 1 {
		fmt.Fprintf(out, "GPUs by source: %s\n", gpuSources(w.Totals.GPUSources))
	}
}

// replicasText is a role's pods: "2 pods", "2×4 = 8 pods"; "replicas unknown" when its count
// could not be read, "pods unknown" when another of its fields could not (its pod template).
func replicasText(r definitions.Role) string {
	if fe, ok := r.Unreadable(); ok {
		what := "pods unknown"
		if r.ReplicasUnknown() {
			what = "replicas unknown"
		}
		return fmt.Sprintf("%s (%s)", what, fe)
	}
	if r.PodsPerReplica == 1 {
		return plural(r.Replicas, "pod")
	}
	return fmt.Sprintf("%d×%d = %s", r.Replicas, r.PodsPerReplica, plural(r.Pods, "pod"))
}

// instanceLine is one line of a role's instances, with the live pods under it.
type instanceLine struct {
	text string
	pods []definitions.FoundPod
}

// instanceLines are a role's instances, one a line; without wide, a run of collapseRun or
// more consecutive instances alike (as many pods, no live pods under them, the same counts
// found) is one line: "revision-0…49  ×50, 1 pod each".
func instanceLines(ins []definitions.Instance, wide bool) []instanceLine {
	var out []instanceLine
	for i := 0; i < len(ins); {
		j := i + 1
		for !wide && j < len(ins) && alike(ins[j-1], ins[j]) {
			j++
		}
		if j-i < collapseRun {
			j = i + 1
		}
		in := ins[i]
		if j-i == 1 {
			out = append(out, instanceLine{text: fmt.Sprintf("%s  %s%s", in.Name, plural(in.Pods, "pod"), foundText(in.PodsFound, in.Pods, in.Phases)), pods: in.FoundPods})
		} else {
			prefix, first, _ := numbered(in.Name)
			_, last, _ := numbered(ins[j-1].Name)
			out = append(out, instanceLine{text: fmt.Sprintf("%s%d…%d  ×%d, %s each%s", prefix, first, last, j-i, plural(in.Pods, "pod"), foundText(in.PodsFound, in.Pods, in.Phases))})
		}
		i = j
	}
	return out
}

// alike says instance b follows a in one run: the next number of the same name, as many
// pods, no live pod under either, and the same counts found.
func alike(a, b definitions.Instance) bool {
	pa, na, okA := numbered(a.Name)
	pb, nb, okB := numbered(b.Name)
	if !okA || !okB || pa != pb || nb != na+1 || a.Pods != b.Pods || len(a.FoundPods) > 0 || len(b.FoundPods) > 0 {
		return false
	}
	if (a.PodsFound == nil) != (b.PodsFound == nil) || (a.PodsFound != nil && *a.PodsFound != *b.PodsFound) {
		return false
	}
	return maps.Equal(a.Phases, b.Phases)
}

// numbered splits a name that ends in a number: "revision-12" is "revision-", 12.
func numbered(name string) (string, int64, bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	n, err := strconv.ParseInt(name[i:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return name[:i], n, true
}

func printPods(out io.Writer, indent string, pods []definitions.FoundPod, opts textOptions) {
	for i, p := range pods {
		b := "├─ "
		if i == len(pods)-1 {
			b = "└─ "
		}
		fmt.Fprintf(out, "%s%spod/%s\n", indent, b, podText(p, opts))
	}
}

// podText is a live pod's line: its name, phase and reason, node; with wide, the object that
// owns it, its age and its restarts.
func podText(p definitions.FoundPod, opts textOptions) string {
	s := p.Name + "  " + p.Phase
	if p.Reason != "" {
		s += " (" + p.Reason + ")"
	}
	if p.Node != "" {
		s += "  on " + p.Node
	}
	if !opts.wide {
		return s
	}
	if p.Owner != "" {
		s += "  owner " + p.Owner
	}
	if created, err := time.Parse(time.RFC3339, p.Created); err == nil {
		s += "  age " + duration.HumanDuration(opts.now.Sub(created))
	}
	return s + "  " + plural(p.Restarts, "restart")
}

// foundText shows live pods found against those expected, with phases.
func foundText(found *int64, expected int64, phases map[string]int) string {
	if found == nil {
		return ""
	}
	parts := make([]string, 0, len(phases))
	for _, k := range slices.Sorted(maps.Keys(phases)) {
		parts = append(parts, fmt.Sprintf("%d %s", phases[k], k))
	}
	s := fmt.Sprintf("  [%d/%d found", *found, expected)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s + "]"
}
