package bench

import (
	"slices"
	"time"
)

// Steps are the bench's steps, in the order they run.
var Steps = []string{"micro", "throughput", "bare", "cli", "memory", "native137", "scale", "scale20k", "topology", "requeue", "preemption"}

// StepStamp says when a step's numbers were measured, and at which commit of workmap.
type StepStamp struct {
	At      time.Time
	Workmap string
	// Seconds is how long the whole invocation that measured it took.
	Seconds float64 `json:",omitempty"`
}

// Stamp records that this report measured the steps: at its start, at its commit, in its
// time (call it once Finished is set).
func (r *Report) Stamp(steps []string) {
	if r.Measured == nil {
		r.Measured = map[string]StepStamp{}
	}
	for _, s := range steps {
		r.Measured[s] = r.ownStamp()
	}
}

func (r *Report) ownStamp() StepStamp {
	return StepStamp{At: r.Started, Workmap: r.Versions.Workmap, Seconds: r.Finished.Sub(r.Started).Round(time.Second).Seconds()}
}

// hasStep reports whether the report holds numbers (or the failure) of a step.
func (r *Report) hasStep(step string) bool {
	switch step {
	case "micro":
		return len(r.Micro) > 0 || r.MicroErr != ""
	case "throughput":
		return len(r.Runs) > 0 || r.ThroughputErr != ""
	case "bare":
		return len(r.BareRuns) > 0 || r.BareErr != ""
	case "cli":
		return r.CLI != nil || r.CLIErr != ""
	case "memory":
		return r.Memory != nil || r.MemoryErr != ""
	case "native137":
		return len(r.Native137Runs) > 0 || r.Native137Err != ""
	case "scale":
		return len(r.ScaleRuns) > 0 || r.ScaleErr != ""
	case "scale20k":
		return r.Scale20k != nil
	case "topology":
		return len(r.TopologyRuns) > 0 || r.TopologyErr != ""
	case "requeue":
		return r.Requeue != nil || r.RequeueErr != ""
	case "preemption":
		return r.Preemption != nil || r.PreemptionErr != ""
	}
	return false
}

// stampOf is when an earlier report measured a step: its record, or, for a report written
// before steps were stamped, its start.
func (r *Report) stampOf(step string) StepStamp {
	if s, ok := r.Measured[step]; ok {
		return s
	}
	return r.ownStamp()
}

// CarryOver copies from an earlier report (bench/raw.json) the numbers of the steps this
// report did not run, with their setup and when they were measured, so that running some
// steps leaves the others' results as they were instead of empty. ran are the steps this
// report ran; a step the earlier report has no numbers of stays empty.
func (r *Report) CarryOver(prev *Report, ran []string) {
	if prev == nil {
		return
	}
	carried := false
	for _, step := range Steps {
		if slices.Contains(ran, step) || !prev.hasStep(step) {
			continue
		}
		carried = true
		if r.Measured == nil {
			r.Measured = map[string]StepStamp{}
		}
		r.Measured[step] = prev.stampOf(step)
		t, pt := &r.Throughput, prev.Throughput
		switch step {
		case "micro":
			r.Micro, r.MicroErr, r.DecisionProfile = prev.Micro, prev.MicroErr, prev.DecisionProfile
		case "throughput":
			r.Runs, r.HighRuns, r.ThroughputErr = prev.Runs, prev.HighRuns, prev.ThroughputErr
			t.Gangs, t.PodsPerGang, t.Nodes, t.GPUsPerNode, t.Pairs, t.Modes = pt.Gangs, pt.PodsPerGang, pt.Nodes, pt.GPUsPerNode, pt.Pairs, pt.Modes
			t.QPS, t.Burst, t.CreateQPS, t.CreateWorkers = pt.QPS, pt.Burst, pt.CreateQPS, pt.CreateWorkers
			t.HighQPS, t.HighBurst, t.HighPairs, t.HighGangs, t.Other, t.Quiet = pt.HighQPS, pt.HighBurst, pt.HighPairs, pt.HighGangs, pt.Other, pt.Quiet
			if r.Versions.Other == "" {
				r.Versions.Other = prev.Versions.Other
			}
		case "bare":
			r.BareRuns, r.BareErr = prev.BareRuns, prev.BareErr
			t.BarePairs, t.BareModes = pt.BarePairs, pt.BareModes
		case "cli":
			r.CLI, r.CLIErr = prev.CLI, prev.CLIErr
		case "memory":
			r.Memory, r.MemoryErr = prev.Memory, prev.MemoryErr
		case "native137":
			r.Native137Runs, r.Native137Err, r.Versions.Kubernetes137 = prev.Native137Runs, prev.Native137Err, prev.Versions.Kubernetes137
		case "scale":
			r.ScaleRuns, r.ScaleErr, r.ScaleNodesSeconds, t.Scale = prev.ScaleRuns, prev.ScaleErr, prev.ScaleNodesSeconds, pt.Scale
		case "scale20k":
			r.Scale20k = prev.Scale20k
		case "topology":
			r.Topology, r.TopologyRuns, r.TopologyErr = prev.Topology, prev.TopologyRuns, prev.TopologyErr
			r.TopologyNodesSeconds, r.TopologySeconds = prev.TopologyNodesSeconds, prev.TopologySeconds
		case "requeue":
			r.Requeue, r.RequeueErr = prev.Requeue, prev.RequeueErr
		case "preemption":
			r.Preemption, r.PreemptionNative, r.PreemptionErr = prev.Preemption, prev.PreemptionNative, prev.PreemptionErr
		}
	}
	if !carried {
		return
	}
	v, pv := &r.Versions, prev.Versions
	if v.Kubernetes == "" {
		v.Kubernetes = pv.Kubernetes
	}
	if v.KubeScheduler == "" {
		v.KubeScheduler = pv.KubeScheduler
	}
	var commands []string
	for _, c := range append(slices.Clone(prev.Commands), r.Commands...) {
		if !slices.Contains(commands, c) {
			commands = append(commands, c)
		}
	}
	r.Commands = commands
}

// StepGroup is a set of steps measured by one invocation of the bench.
type StepGroup struct {
	Steps []string
	StepStamp
}

// MeasuredGroups groups the steps the report has numbers of by when they were measured,
// oldest first; one group when a single invocation measured them all.
func (r *Report) MeasuredGroups() []StepGroup {
	var out []StepGroup
	for _, step := range Steps {
		if !r.hasStep(step) {
			continue
		}
		s := r.stampOf(step)
		i := slices.IndexFunc(out, func(g StepGroup) bool { return g.At.Equal(s.At) && g.Workmap == s.Workmap })
		if i < 0 {
			out = append(out, StepGroup{StepStamp: s})
			i = len(out) - 1
		}
		out[i].Steps = append(out[i].Steps, step)
	}
	slices.SortStableFunc(out, func(a, b StepGroup) int { return a.At.Compare(b.At) })
	return out
}
