package bench

// preemptionSection reports the preemption step.
func (r *Report) preemptionSection(p printer) {
	if r.Preemption == nil && r.PreemptionErr == "" {
		return
	}
	sectionHead(p, "Gang preemption", r.PreemptionErr)
	q := r.Preemption
	if q == nil {
		return
	}
	p("On a control plane of its own, %s kwok nodes of %d GPUs are filled by as many low-priority gangs (PriorityClass value 10) of %d pods of %d GPUs each, every gang a PodGroup of minMember %d, scheduled by workmap-scheduler (`qps: %g`, `burst: %d`) in %.1f s. Then %d high-priority gangs (value 1000) of %d pods of %d GPUs (a whole node each) are created at once: none fits without preempting. Their last pod was bound %.1f s after they were created.",
		fmtInt(float64(q.Nodes)), q.GPUsPerNode, q.LowGangSize, q.GPUsPerNode/q.LowGangSize, q.LowGangSize, q.QPS, q.Burst, q.FillSeconds, q.HighGangs, q.HighGangSize, q.GPUsPerNode, q.BoundSeconds)
	p("")
	p("| what | workmap-scheduler (B) |")
	p("|---|---|")
	p("| scheduling cycles that ran PostFilter (where a gang preempts) | %s |", fmtInt(q.Attempts))
	beyond := ""
	if q.AttemptP99Beyond {
		beyond = "> " // the histogram's last bound
	}
	p("| their duration: mean, p50 / p99 (`preemption_attempt_p99_ms`) | %s ms, %s / **%s%s ms** |", trimFloat(q.AttemptMeanMs), trimFloat(q.AttemptP50Ms), beyond, trimFloat(q.AttemptP99Ms))
	p("| preemptions (Preempting events) | %d |", q.Preemptions)
	p("| victims: pods / whole gangs | %d / %d |", q.VictimPods, q.VictimGangs)
	p("| victim pods per high-priority gang (`preemption_victims_per_gang`) | **%s** (at least %d: a whole node for each of its pods) |", trimFloat(q.VictimsPerGang), q.HighGangSize*q.LowGangSize)
	p("| futile preemptions (`futile_preemptions`: the preemptor gang did not end bound whole) | **%d** |", q.Futile)
	p("| low-priority gangs left in part (`partial_victim_gangs`) | **%d** |", q.PartialVictimGangs)
	p("| high-priority gangs bound in part | %d |", q.PartialPreemptorGangs)
	p("| scheduler resident memory at the end | %s MiB |", trimFloat(round(q.SchedulerRSSBytes/(1<<20), 1)))
	p("")
	p("The durations are kube-scheduler's own `scheduler_framework_extension_point_duration_seconds{extension_point=\"PostFilter\"}` over the window (its buckets' difference between two readings, the quantile interpolated within its bucket as Prometheus' `histogram_quantile` does; its last bound is 204.8 ms, so a p99 beyond it is shown as \"> 204.8\"; the mean is its sum over its count): every cycle of a high-priority pod that found no node, the ones that looked for victims and the ones that waited for victims to go. Kubernetes' own workload-aware preemption (row D, kube-scheduler with native PodGroups) is not measured here: on v1.36 it is alpha and its PodGroups carry no priority; it is to be compared on a v1.37 API server, where it is beta. For reference, the Kubernetes pull request that made it beta (kubernetes/kubernetes#140651) reports 69 ms per attempt at 1,000 nodes and 1,000 gangs, on other hardware.")
	p("")
}
