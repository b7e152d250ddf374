package bench

import "github.com/workmap/workmap/e2e/harness"

// preemptionSection reports the preemption step: B, and D when it ran.
func (r *Report) preemptionSection(p printer) {
	if r.Preemption == nil && r.PreemptionErr == "" {
		return
	}
	sectionHead(p, "Gang preemption", r.PreemptionErr)
	q, d := r.Preemption, r.PreemptionNative
	if q == nil {
		return
	}
	where := "On a control plane of its own"
	if d != nil {
		where = "On a control plane of its own (Kubernetes " + orUnknown(r.Versions.Kubernetes137) + "'s API server, controller manager and kube-scheduler, `--feature-gates=" + harness.Release137.NativeGangGates + "`)"
	}
	p("%s, %s kwok nodes of %d GPUs are filled by as many low-priority gangs (PriorityClass value 10) of %d pods of %d GPUs each, every gang a PodGroup of minMember %d, scheduled by workmap-scheduler (`qps: %g`, `burst: %d`) in %.1f s. Then %d high-priority gangs (value 1000) of %d pods of %d GPUs (a whole node each) are created at once: none fits without preempting. Their last pod was bound %.1f s after they were created.",
		where, fmtInt(float64(q.Nodes)), q.GPUsPerNode, q.LowGangSize, q.GPUsPerNode/q.LowGangSize, q.LowGangSize, q.QPS, q.Burst, q.FillSeconds, q.HighGangs, q.HighGangSize, q.GPUsPerNode, q.BoundSeconds)
	if d != nil {
		p("")
		p("Then B's pods and namespace are deleted and the same runs again as row D: kube-scheduler with Kubernetes' own gang scheduling and workload-aware preemption, the same client limits, every gang a native `%s` PodGroup (gang `minCount`, the PriorityClass as its `priorityClassName`, `disruptionMode: {all: {}}` so that a victim gang goes whole as B's do; the default, `single`, takes pods one by one) whose pods name it in `spec.schedulingGroup`. Its low-priority gangs bound in %.1f s; its high-priority gangs' last pod %.1f s after they were created.",
			harness.Release137.NativeGangAPI(), d.FillSeconds, d.BoundSeconds)
	}
	p("")
	cols := []*PreemptionResult{q}
	if d != nil {
		cols = append(cols, d)
		p("| what | workmap-scheduler (B) | Kubernetes' own (D) |")
		p("|---|---|---|")
	} else {
		p("| what | workmap-scheduler (B) |")
		p("|---|---|")
	}
	row := func(what string, cell func(*PreemptionResult) string) {
		line := "| " + what + " |"
		for _, c := range cols {
			line += " " + cell(c) + " |"
		}
		p("%s", line)
	}
	lastBound := func(beyond bool) string {
		if beyond {
			return "> " // the histogram's last bound
		}
		return ""
	}
	row("looks for victims, each up to their choice", func(c *PreemptionResult) string { return fmtInt(c.Attempts) })
	row("their duration: mean, p50 / p99 (`preemption_attempt_p99_ms`)", func(c *PreemptionResult) string {
		return trimFloat(c.AttemptMeanMs) + " ms, " + trimFloat(c.AttemptP50Ms) + " / **" + lastBound(c.AttemptP99Beyond) + trimFloat(c.AttemptP99Ms) + " ms**"
	})
	row("scheduling cycles that ran PostFilter (the victims' deletion and the cycles that waited for them included): count, mean / p99", func(c *PreemptionResult) string {
		if c.PostFilterCycles == 0 {
			return "— (a pod group's preemption runs in no PostFilter cycle)"
		}
		return fmtInt(c.PostFilterCycles) + ", " + trimFloat(c.PostFilterMeanMs) + " / " + lastBound(c.PostFilterP99Beyond) + trimFloat(c.PostFilterP99Ms) + " ms"
	})
	row("preemptions (B: Preempting events; D: the preemptors its victims' Preempted events name, one per gang)", func(c *PreemptionResult) string { return fmtInt(float64(c.Preemptions)) })
	row("victims: pods / whole gangs", func(c *PreemptionResult) string {
		return fmtInt(float64(c.VictimPods)) + " / " + fmtInt(float64(c.VictimGangs))
	})
	row("victim pods per high-priority gang (`preemption_victims_per_gang`; at least "+fmtInt(float64(q.HighGangSize*q.LowGangSize))+": a whole node for each of its pods)", func(c *PreemptionResult) string { return "**" + trimFloat(c.VictimsPerGang) + "**" })
	row("futile preemptions (`futile_preemptions`: the preemptor gang did not end bound whole)", func(c *PreemptionResult) string { return "**" + fmtInt(float64(c.Futile)) + "**" })
	row("low-priority gangs left in part (`partial_victim_gangs`)", func(c *PreemptionResult) string { return "**" + fmtInt(float64(c.PartialVictimGangs)) + "**" })
	row("high-priority gangs bound in part", func(c *PreemptionResult) string { return fmtInt(float64(c.PartialPreemptorGangs)) })
	row("scheduler resident memory at the end", func(c *PreemptionResult) string { return trimFloat(round(c.SchedulerRSSBytes/(1<<20), 1)) + " MiB" })
	p("")
	p("The looks for victims are timed as Kubernetes times its own: B's `workmap_preemption_evaluation_duration_seconds` and D's `scheduler_preemption_evaluation_duration_seconds{preemptor=\"podgroup\"}`, each from the start of a gang's look for victims to their choice (their deletion left out), in the same buckets (1 ms to 32.8 s); the PostFilter row is kube-scheduler's `scheduler_framework_extension_point_duration_seconds{extension_point=\"PostFilter\"}` (last bound 204.8 ms), every cycle of a high-priority pod that found no node. Each is read over the window as the difference of two readings, the quantile interpolated within its bucket as Prometheus' `histogram_quantile` does, a p99 past the last bound shown as \"> bound\". For reference, the Kubernetes pull request that made workload-aware preemption beta (kubernetes/kubernetes#140651) reports 69 ms per attempt at 1,000 nodes and 1,000 gangs, on other hardware.")
	p("")
}
