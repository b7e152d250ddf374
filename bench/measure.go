package bench

import (
	"sort"
	"time"
)

// measure computes the window, rate, latencies and curve. In backlog mode the window starts
// at start (the scheduler healthy), or at the first binding if that came earlier (a
// scheduler can bind before the health check's poll sees it answer); in running mode at the
// first pod seen.
func (run *Run) measure(times []PodTimes, start time.Time) {
	if len(times) == 0 {
		return
	}
	firstAdded, lastAdded, firstBound, lastBound := times[0].Added, times[0].Added, times[0].Bound, times[0].Bound
	var lastGrouped time.Time
	bound := make([]time.Time, 0, len(times))
	lat := make([]time.Duration, 0, len(times))
	for _, t := range times {
		firstAdded = minTime(firstAdded, t.Added)
		lastAdded = maxTime(lastAdded, t.Added)
		firstBound, lastBound = minTime(firstBound, t.Bound), maxTime(lastBound, t.Bound)
		lastGrouped = maxTime(lastGrouped, t.Grouped)
		bound = append(bound, t.Bound)
		lat = append(lat, t.Bound.Sub(t.Added))
	}
	if run.Mode == Backlog {
		start = minTime(start, firstBound)
	}
	if run.Mode == Running {
		start = firstAdded
		run.CreateSeconds = lastAdded.Sub(firstAdded).Seconds()
		run.P50Ms, run.P99Ms = round(ms(percentile(lat, 50)), 1), round(ms(percentile(lat, 99)), 1)
		if assembly, whole := gangLatencies(times); len(whole) > 0 {
			run.AssemblyP50Ms, run.AssemblyP99Ms = round(ms(percentile(assembly, 50)), 1), round(ms(percentile(assembly, 99)), 1)
			run.GangP50Ms, run.GangP99Ms = round(ms(percentile(whole, 50)), 1), round(ms(percentile(whole, 99)), 1)
		}
	}
	run.Seconds = lastBound.Sub(start).Seconds()
	if !lastGrouped.IsZero() && run.Scheduler == Gang { // E's and O's pods may carry the label from creation
		run.GroupedSeconds = round(lastGrouped.Sub(start).Seconds(), 2)
	}
	if run.Seconds > 0 {
		run.PodsPerSecond = round(float64(len(times))/run.Seconds, 2)
	}
	sort.Slice(bound, func(i, j int) bool { return bound[i].Before(bound[j]) })
	run.Curve = make([]float64, len(bound))
	for i, b := range bound {
		run.Curve[i] = b.Sub(start).Seconds()
	}
}

// gangLatencies splits the pods of gangs (pods with a controller) by gang: for each such pod,
// from its creation to its gang's last member's (assembly); for each gang, from its first
// member's creation to its last member bound (whole).
func gangLatencies(times []PodTimes) (assembly, whole []time.Duration) {
	type span struct{ firstAdded, lastAdded, lastBound time.Time }
	gangs := map[string]*span{}
	for _, t := range times {
		if t.Gang == "" {
			continue
		}
		g := gangs[t.Gang]
		if g == nil {
			g = &span{firstAdded: t.Added, lastAdded: t.Added, lastBound: t.Bound}
			gangs[t.Gang] = g
		}
		g.firstAdded, g.lastAdded, g.lastBound = minTime(g.firstAdded, t.Added), maxTime(g.lastAdded, t.Added), maxTime(g.lastBound, t.Bound)
	}
	for _, t := range times {
		if g := gangs[t.Gang]; g != nil {
			assembly = append(assembly, g.lastAdded.Sub(t.Added))
		}
	}
	for _, g := range gangs {
		whole = append(whole, g.lastBound.Sub(g.firstAdded))
	}
	return assembly, whole
}
