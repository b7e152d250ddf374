package bench

import (
	"fmt"
	"slices"
	"strings"
)

// missSection says, for each missed target, why and what would fix it, from what the run
// measured.
func (r *Report) missSection(p printer, res Results) {
	var out []string
	if v := res.PerPodDecisionNs; v != nil && *v > TargetDecisionNs {
		out = append(out, r.decisionMiss(*v))
	}
	out = append(out, r.throughputMisses(res)...)
	out = append(out, r.topologyMisses(res)...)
	if r.CLI != nil && r.CLI.Requests > r.CLI.ChildKinds+cliRequestsPerKind {
		out = append(out, fmt.Sprintf("**cli_tree_requests_1000_pods = %d > %d.** The requests are listed above: any beyond one list of WorkloadDefinitions, one GET of the JobSet, one list per child kind and one list of pods is the excess to remove.", r.CLI.Requests, r.CLI.ChildKinds+cliRequestsPerKind))
	}
	if r.CLI != nil && r.CLI.Ms >= TargetCLIMs {
		out = append(out, r.cliTimeMiss())
	}
	if r.CLI != nil && r.CLI.OfflineMs >= TargetCLIFileMs {
		out = append(out, fmt.Sprintf("**cli_tree_file_ms = %s ≥ %d.** Process start alone (`workmap version`) took %s ms of it; the rest is reading the manifest, compiling the one definition it needs and one small expansion. What would fix it: cache compiled definitions between runs.", fmtInt(r.CLI.OfflineMs), TargetCLIFileMs, fmtInt(r.CLI.VersionMs)))
	}
	if r.Memory != nil && r.Memory.BytesPerPod > TargetBytesPerPod {
		out = append(out, memoryMiss(r.Memory))
	}
	p("## Misses: why, and what would fix them")
	p("")
	if len(out) == 0 {
		p("Every measured target was met.")
		p("")
		return
	}
	for _, o := range out {
		p("- %s", o)
	}
	p("")
}

func memoryMiss(m *MemoryResult) string {
	perGang := m.Pods / max(m.Gangs, 1)
	s := fmt.Sprintf("**grouper_bytes_per_pod = %s > %d.** ", fmtInt(m.BytesPerPod), TargetBytesPerPod)
	if m.BytesPerPod >= 0.9*m.PodObjectBytes {
		return s + fmt.Sprintf("Why: the grouper's pod informer caches whole pods, %s bytes each here (%s of them managedFields), although grouping reads only a pod's metadata, schedulerName, nodeName and phase; the rest (%s bytes per pod) is its per-Job state (the full Job read for grouping, %s bytes as an unstructured object, one per %d pods), the Job metadata, PodGroups and indexes. What would fix it: an informer transform (`SetTransform`) on the grouper's pod informer that keeps only what grouping and PodGroup status read (measured here: %s bytes per pod instead of %s, which would bring the total to about %s), and caching only the fields grouping reads of a full owner object.",
			fmtInt(m.PodObjectBytes), fmtInt(m.PodObjectBytes-m.PodObjectBytesNoManagedFields), fmtInt(m.BytesPerPod-m.PodObjectBytes), fmtInt(m.JobObjectBytes), perGang,
			fmtInt(m.PodObjectBytesGrouping), fmtInt(m.PodObjectBytes), fmtInt(m.BytesPerPod-m.PodObjectBytes+m.PodObjectBytesGrouping))
	}
	rest := m.BytesPerPod - m.PodObjectBytesGrouping
	return s + fmt.Sprintf("Why: the grouper's pod cache already keeps less than whole pods (%s bytes per pod in all, against %s for a whole pod); a pod reduced to what grouping reads is %s bytes here, most of it its label and annotation maps, owner references and names. The other %s bytes per pod are its per-Job state, amortized over %d pods: above all the full Job it reads for grouping and keeps (%s bytes as an unstructured object, %s per pod), the Job's cached metadata and the PodGroup, plus the informers' index entries. What would fix it: cache only the fields grouping reads of a full owner object (for a Job, its parallelism and min-member annotation) instead of the whole object, and keep fewer of a pod's fields (only workmap's own annotations, only the controller owner reference).",
		fmtInt(m.BytesPerPod), fmtInt(m.PodObjectBytes), fmtInt(m.PodObjectBytesGrouping), fmtInt(rest), perGang, fmtInt(m.JobObjectBytes), fmtInt(m.JobObjectBytes/float64(perGang)))
}

func (r *Report) decisionMiss(v float64) string {
	s := fmt.Sprintf("**per_pod_decision_ns = %s > %d.** ", fmtInt(v), TargetDecisionNs)
	pd, okPlace := Find(r.Micro, "BenchmarkPodDecision")
	j, okJob := Find(r.Micro, "BenchmarkDecideWarmJob")
	if okPlace && okJob {
		s += fmt.Sprintf("Its parts, measured in this run: placing the pod in the expanded JobSet (`BenchmarkPodDecision`) %s ns; a decision that needs no definition (a Job's pod: owner lookup and the native grouper, `BenchmarkDecideWarmJob`) %s ns. The remaining %s ns are the JobSet path's own work per pod: a two-level owner chain, the definition and cached-workload lookups, and handing the pod to the placement expressions. ",
			fmtInt(pd.NsPerOp), fmtInt(j.NsPerOp), fmtInt(v-pd.NsPerOp-j.NsPerOp))
	}
	if d, ok := Find(r.Micro, DecisionBenchmark); ok {
		s += fmt.Sprintf("Each decision allocates %s bytes in %s objects. ", fmtInt(d.BytesPerOp), fmtInt(d.AllocsPerOp))
	}
	if r.DecisionProfile != "" {
		s += "Where the bytes are allocated (`go tool pprof -sample_index=alloc_space -top` of `" + DecisionBenchmark + "`, this run):\n\n  ```\n  " + strings.ReplaceAll(r.DecisionProfile, "\n", "\n  ") + "\n  ```\n\n  "
	}
	return s + "What would fix it: take the allocations out of the warm path at the top sites above (a per-call map or slice that could be reused or avoided, a value that depends only on the owner's version cached with it), since allocation and the garbage collection it causes are most of a decision that does no API call."
}

func (r *Report) cliTimeMiss() string {
	c := r.CLI
	s := fmt.Sprintf("**cli_tree_ms_1000_pods = %s ≥ %d.** Where it goes, this run: process start %s ms (`workmap version`); the offline `tree -f` of a 3-pod JobSet %s ms, so %s ms for its definition compiled and the rest of a small tree. ",
		fmtInt(c.Ms), TargetCLIMs, fmtInt(c.VersionMs), fmtInt(c.OfflineMs), fmtInt(c.OfflineMs-c.VersionMs))
	var expandMs float64
	if e, ok := Find(r.Micro, "BenchmarkExpandLive1000"); ok {
		expandMs = e.NsPerOp / 1e6
	}
	convertMs := c.ResolveMs - c.ListPodsMs - expandMs
	if c.ResolveMs > 0 {
		s += fmt.Sprintf("In a warm process, one list of the %s pods as protobuf (the API server's answer and its decoding) takes %s ms and the whole resolution %s ms: %s ms for the other lists, turning the pods into unstructured objects for the definition's expressions and the expansion (which alone, `BenchmarkExpandLive1000`, is %s ms). A new process pays more for each (a cold heap, first use of every code path). ",
			fmtInt(float64(c.Pods)), fmtInt(c.ListPodsMs), fmtInt(c.ResolveMs), fmtInt(c.ResolveMs-c.ListPodsMs), fmtInt(expandMs))
	}
	if len(c.RunsMs) > 1 {
		fastest := slices.Min(r.CLI.RunsMs)
		s += fmt.Sprintf("The runs ranged from %s to %s ms: the load of the shared machine (see the load average above) weighs on every run, and even the fastest ", fmtInt(fastest), fmtInt(slices.Max(r.CLI.RunsMs)))
		if fastest >= TargetCLIMs {
			s += "missed the target. "
		} else {
			s += "met the target. "
		}
	}
	fix := "What would fix it: "
	switch {
	case c.ResolveMs > 0 && c.ListPodsMs >= convertMs && c.ListPodsMs >= c.OfflineMs-c.VersionMs:
		fix += "the pods' list is the largest part, and it is the API server's answer (every field of every pod, managed fields included, which a list cannot leave out); what workmap does with it, the conversion, is next: converting only the fields a definition's expressions read, or evaluating them on typed pods."
	case c.ResolveMs > 0 && convertMs >= c.OfflineMs-c.VersionMs:
		fix += "turning the pods into unstructured objects is the largest part: converting only the fields a definition's expressions read, or evaluating them on typed pods."
	default:
		fix += "compiling the definition is the largest part: cache compiled programs between runs."
	}
	return s + fix
}
