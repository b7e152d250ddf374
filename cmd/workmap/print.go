package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// print writes workloads in the chosen output format: JSON and YAML print one document for
// one workload and a list for several; text formats use printText.
func (o *options) print(ws []*definitions.Workload, printText func(io.Writer, *definitions.Workload, bool)) error {
	var doc any = ws
	if len(ws) == 1 {
		doc = ws[0]
	}
	switch o.output {
	case "json", "yaml":
		return o.printDocument(doc)
	case "tree", "", "wide":
		color := useColor(o.out)
		for i, w := range ws {
			if i > 0 {
				fmt.Fprintln(o.out)
			}
			printText(o.out, w, color)
			if o.output == "wide" {
				printWide(o.out, w)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown output format %q: use tree, wide, json or yaml", o.output)
}

// printDocument writes any value as JSON or YAML.
func (o *options) printDocument(doc any) error {
	if o.output == "json" {
		enc := json.NewEncoder(o.out)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = o.out.Write(b)
	return err
}

// useColor is true only on a terminal, and never with NO_COLOR set.
func useColor(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

var stateColor = map[v1alpha1.State]string{
	v1alpha1.StateRunning: "32", v1alpha1.StateCompleted: "32",
	v1alpha1.StatePending: "33", v1alpha1.StateInitializing: "33", v1alpha1.StateSuspended: "33", v1alpha1.StateDegraded: "33",
	v1alpha1.StateFailed: "31", v1alpha1.StateUnknown: "35",
}

func printTree(out io.Writer, w *definitions.Workload, color bool) {
	state := string(w.Status.State)
	if color {
		state = "\x1b[" + stateColor[w.Status.State] + "m" + state + "\x1b[0m"
	}
	name := w.Workload.Name
	if w.Workload.Namespace != "" {
		name = w.Workload.Namespace + "/" + name
	}
	fmt.Fprintf(out, "%s %s  %s: %s\n", w.Workload.Kind, name, state, w.Status.Reason)
	for i, r := range w.Roles {
		branch, indent := "├─ ", "│  "
		if i == len(w.Roles)-1 {
			branch, indent = "└─ ", "   "
		}
		fmt.Fprintf(out, "%s%s  %s  %s%s\n", branch, r.Name, replicasText(r), gpuText(r.GPUs), foundText(r.PodsFound, r.Pods, r.Phases))
		for j, in := range r.Instances {
			b, sub := "├─ ", "│  "
			if j == len(r.Instances)-1 && len(r.FoundPods) == 0 {
				b, sub = "└─ ", "   "
			}
			fmt.Fprintf(out, "%s%s%s  %s%s\n", indent, b, in.Name, plural(in.Pods, "pod"), foundText(in.PodsFound, in.Pods, in.Phases))
			printPods(out, indent+sub, in.FoundPods)
		}
		printPods(out, indent, r.FoundPods)
	}
	if w.Live != nil && w.Live.Unassigned > 0 {
		fmt.Fprintf(out, "Unassigned: %s of the workload match no role\n", plural(int64(w.Live.Unassigned), "pod"))
	}
	for _, g := range w.Groups {
		fmt.Fprintf(out, "Gang %s (%s): minMember %d\n", g.Name, scopeText(g), g.MinMember)
	}
	if len(w.Groups) == 0 {
		fmt.Fprintln(out, "Gang: none")
	}
	fmt.Fprintf(out, "Total: %s, %s%s\n", plural(w.Totals.Pods, "pod"), gpuText(w.Totals.GPUs), otherResources(w.Totals.Resources, w.Totals.GPUSources))
	for _, warn := range w.Warnings {
		fmt.Fprintf(out, "Warning: %s\n", warn)
	}
}

// printWide adds, per role, the effective requests of one pod and where its template is.
func printWide(out io.Writer, w *definitions.Workload) {
	for _, r := range w.Roles {
		gpus := ""
		if len(r.GPUSources) > 0 {
			gpus = "; GPUs of the role: " + gpuSources(r.GPUSources)
		}
		fmt.Fprintf(out, "Role %s: per pod: %s%s; template at %s\n", r.Name, strings.TrimSuffix(strings.TrimPrefix(resourceList(r.PodResources), " ("), ")"), gpus, r.Location)
	}
	if len(w.Totals.GPUSources) > 1 {
		fmt.Fprintf(out, "GPUs by source: %s\n", gpuSources(w.Totals.GPUSources))
	}
}

func printPods(out io.Writer, indent string, pods []definitions.FoundPod) {
	for i, p := range pods {
		b := "├─ "
		if i == len(pods)-1 {
			b = "└─ "
		}
		node := ""
		if p.Node != "" {
			node = "  on " + p.Node
		}
		fmt.Fprintf(out, "%s%spod/%s  %s%s\n", indent, b, p.Name, p.Phase, node)
	}
}

func replicasText(r definitions.Role) string {
	if r.PodsPerReplica == 1 {
		return plural(r.Replicas, "pod")
	}
	return fmt.Sprintf("%d×%d = %s", r.Replicas, r.PodsPerReplica, plural(r.Pods, "pod"))
}

func gpuText(n float64) string {
	if n == 1 {
		return "1 GPU"
	}
	return number(n) + " GPUs"
}

// number prints a count that may be fractional (GPUs asked for by fraction): 12, 0.5.
func number(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

// gpuSources renders a GPU breakdown, sorted: "dra:gpu.nvidia.com 2, nvidia.com/gpu 8".
func gpuSources(sources map[string]float64) string {
	parts := make([]string, 0, len(sources))
	for _, k := range slices.Sorted(maps.Keys(sources)) {
		parts = append(parts, k+" "+number(sources[k]))
	}
	return strings.Join(parts, ", ")
}

func plural(n int64, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
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

// resourceList renders every resource, sorted: " (cpu 2, memory 8Gi, nvidia.com/gpu 4)".
func resourceList(r corev1.ResourceList) string {
	var parts []string
	for name, q := range r {
		parts = append(parts, fmt.Sprintf("%s %s", name, q.String()))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return " (none)"
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// otherResources renders cpu, memory and the extended resources not counted as GPUs.
func otherResources(r corev1.ResourceList, gpus map[string]float64) string {
	var parts []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := r[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", name, q.String()))
		}
	}
	var extended []string
	for name, q := range r {
		if _, isGPU := gpus[string(name)]; name != corev1.ResourceCPU && name != corev1.ResourceMemory && !isGPU {
			extended = append(extended, fmt.Sprintf("%s %s", name, q.String()))
		}
	}
	sort.Strings(extended)
	parts = append(parts, extended...)
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
