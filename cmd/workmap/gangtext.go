package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/live"
)

// gangStateText is a live gang's state after its tree line: "; PodGroup train-all Running
// (3 scheduled)", "; native PodGroup train-all Scheduled", "; PodGroup train-all Pending: <the scheduler's reason>", "; not in effect:
// its pods ask for default-scheduler, which does not gang them". Offline: nothing.
func gangStateText(s *definitions.GangState) string {
	switch {
	case s == nil:
		return ""
	case s.NotInEffect != "":
		return "; not in effect: " + s.NotInEffect
	case s.Note != "":
		return fmt.Sprintf("; PodGroup %s: %s", s.PodGroup, s.Note)
	}
	kind := "PodGroup"
	if s.Backend == live.BackendNative {
		kind = "native PodGroup"
	}
	text := fmt.Sprintf("; %s %s %s", kind, s.PodGroup, gangPhase(s))
	if s.Found && s.Scheduled > 0 {
		text += fmt.Sprintf(" (%d scheduled)", s.Scheduled)
	}
	if s.Reason != "" {
		text += ": " + s.Reason
	}
	return text
}

// gangPhase is the PodGroup's phase, or that it does not exist yet.
func gangPhase(s *definitions.GangState) string {
	switch {
	case s.NotInEffect != "":
		return "not in effect"
	case s.Note != "":
		return "unknown"
	case !s.Found:
		return "no PodGroup yet"
	}
	return s.Phase
}

// gangPhases summarizes the gangs' phases for `get`: "Running", "Pending ×2, Running", "-"
// without gangs.
func gangPhases(groups []definitions.Group) string {
	if len(groups) == 0 {
		return "-"
	}
	counts := map[string]int{}
	var order []string
	for _, g := range groups {
		phase := "-"
		if g.State != nil {
			phase = gangPhase(g.State)
		}
		if counts[phase] == 0 {
			order = append(order, phase)
		}
		counts[phase]++
	}
	slices.Sort(order)
	parts := make([]string, len(order))
	for i, p := range order {
		parts[i] = p
		if counts[p] > 1 {
			parts[i] = fmt.Sprintf("%s ×%d", p, counts[p])
		}
	}
	return strings.Join(parts, ", ")
}

// gangReason is the first waiting gang's reason, for `get -o wide`.
func gangReason(groups []definitions.Group) string {
	for _, g := range groups {
		if g.State != nil && g.State.Reason != "" {
			return g.Name + ": " + g.State.Reason
		}
	}
	return ""
}
