package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/live"
)

// gangStateText is a live gang's state after its tree line: "; PodGroup train-all Running
// (3 scheduled)", "; PodGroup train-all Running (3 scheduled), placed in
// cloud.example.com/rack=r2" (a topology-constrained gang the scheduler placed), "; native
// PodGroup train-all Scheduled", "; PodGroup train-all Pending: <the scheduler's reason>", "; not
// in effect: its pods ask for default-scheduler, which does not gang them". Offline: nothing.
func gangStateText(s *definitions.GangState) string {
	switch {
	case s == nil:
		return ""
	case s.NotInEffect != "":
		return "; " + gangStatus(s)
	case s.Note != "":
		return fmt.Sprintf("; PodGroup %s: %s", s.PodGroup, s.Note)
	}
	return fmt.Sprintf("; %s %s %s", backendOf(s, "").podGroupKind(), s.PodGroup, gangStatusIn(s, true))
}

// gangStatus is a live gang's state in a few words: its phase with how many of its pods are
// scheduled and its priority (unless 0), its last preemption, and the scheduler's reason for a
// gang that waits ("Running (3 scheduled, priority 10)", "Pending (priority 10), last preempted
// by PodGroup ml/serve at 2026-12-04T10:01:00Z: …",
// "Pending: 0/2 nodes are available: …", "not made yet"), or why it is not in effect or
// unknown ("not in effect: its pods ask for default-scheduler, which does not gang them").
func gangStatus(s *definitions.GangState) string { return gangStatusIn(s, false) }

// gangStatusIn is gangStatus, with domain the domain the gang was placed in before the
// scheduler's reason ("Running (3 scheduled), placed in cloud.example.com/rack=r2").
func gangStatusIn(s *definitions.GangState, domain bool) string {
	switch {
	case s.NotInEffect != "":
		return gangPhase(s) + ": " + s.NotInEffect
	case s.Note != "":
		return gangPhase(s) + ": " + s.Note
	}
	text := gangPhase(s)
	var counts []string
	if s.Found && s.Scheduled > 0 {
		counts = append(counts, fmt.Sprintf("%d scheduled", s.Scheduled))
	}
	if s.Priority != nil && *s.Priority != 0 {
		counts = append(counts, fmt.Sprintf("priority %d", *s.Priority))
	}
	if len(counts) > 0 {
		text += " (" + strings.Join(counts, ", ") + ")"
	}
	if domain && s.Found && s.Domain != "" {
		text += ", placed in " + s.Domain
	}
	if p := s.LastPreemption; p != nil {
		text += fmt.Sprintf(", last preempted by %s at %s", orDash(p.By), p.At)
	}
	if s.Reason != "" {
		text += ": " + s.Reason
	}
	return text
}

// topologyText is a gang's topology intent in a few words: "rack required, hostname
// preferred", with a nested level "block required, each instance in one rack"; "" for none.
func topologyText(t *definitions.GroupTopology) string {
	if t == nil {
		return ""
	}
	var parts []string
	if t.Required != "" {
		parts = append(parts, t.Required+" required")
	}
	if t.Preferred != "" {
		parts = append(parts, t.Preferred+" preferred")
	}
	for n := t.Nested; n != nil && n.Required != ""; n = n.Nested {
		scope := string(n.Scope)
		if n.Scope == v1alpha1.ScopeInstanceReplica {
			scope = "instance replica"
		}
		parts = append(parts, fmt.Sprintf("each %s in one %s", scope, n.Required))
	}
	return strings.Join(parts, ", ")
}

// topologySourceText says where a gang's topology intent comes from: "the definition", "the
// workload's annotation".
func topologySourceText(source string) string {
	switch source {
	case definitions.TopologySourceAnnotation:
		return "the workload's annotation"
	case definitions.TopologySourceDefinition:
		return "the definition"
	}
	return source
}

// gangTopologyText is a gang's topology after the minMember of its tree line: "; topology: rack
// required, hostname preferred (from the workload's annotation)"; nothing when unconstrained.
func gangTopologyText(t *definitions.GroupTopology) string {
	text := topologyText(t)
	if text == "" {
		return ""
	}
	return fmt.Sprintf("; topology: %s (from %s)", text, topologySourceText(t.Source))
}

// Who holds a live gang (gangBackend.Name).
const (
	// backendNative is a native scheduling.k8s.io PodGroup: Kubernetes' own scheduler gangs
	// the pods (its GangScheduling plugin).
	backendNative = "native"
	// backendWorkmapScheduler is a scheduling.x-k8s.io PodGroup workmap-scheduler makes.
	backendWorkmapScheduler = "workmap-scheduler"
	// backendOperator is a scheduling.x-k8s.io PodGroup workmap did not make: the pods name it
	// themselves, and their operator keeps it.
	backendOperator = "operator"
)

// gangBackend is what holds a live gang: who makes its PodGroup, and the PodGroup's API
// version.
type gangBackend struct {
	// Name is native, workmap-scheduler or operator.
	Name string `json:"name"`
	// APIVersion is the PodGroup's: scheduling.k8s.io/<version> (native) or
	// scheduling.x-k8s.io/v1alpha1.
	APIVersion string `json:"apiVersion"`
	// MadeBy is who made an operator's PodGroup, as the PodGroup says (its
	// app.kubernetes.io/managed-by label, else its controller; "" when it does not say).
	MadeBy string `json:"madeBy,omitempty"`
}

// backendOf is the backend that holds a gang workmap forms, from its live state: nil when none
// does (the gang is not in effect). nativeVersion is the version of the native PodGroups the
// cluster serves.
func backendOf(s *definitions.GangState, nativeVersion string) *gangBackend {
	switch {
	case s == nil || s.NotInEffect != "":
		return nil
	case s.Backend == live.BackendNative:
		return &gangBackend{Name: backendNative, APIVersion: schema.GroupVersion{Group: live.BackendNative, Version: nativeVersion}.String()}
	case s.MadeBy != "":
		return operatorBackend(s)
	}
	return &gangBackend{Name: backendWorkmapScheduler, APIVersion: live.PodGroupsResource.GroupVersion().String()}
}

// operatorBackend holds a scheduling.x-k8s.io PodGroup workmap did not make: one pods name
// themselves, or one of the gang's name another controller made; s says who made it (nil:
// not read).
func operatorBackend(s *definitions.GangState) *gangBackend {
	b := &gangBackend{Name: backendOperator, APIVersion: live.PodGroupsResource.GroupVersion().String()}
	if s != nil && s.MadeBy != "another controller" {
		b.MadeBy = s.MadeBy
	}
	return b
}

// podGroupKind names the backend's PodGroup in a sentence: "native PodGroup", "PodGroup"
// (workmap-scheduler's), "operator's PodGroup".
func (b *gangBackend) podGroupKind() string {
	switch b.Name {
	case backendNative:
		return "native PodGroup"
	case backendOperator:
		if b.MadeBy != "" {
			return b.MadeBy + "'s PodGroup"
		}
		return "operator's PodGroup"
	}
	return "PodGroup"
}

// String is the backend as `groups` shows it: "workmap-scheduler (scheduling.x-k8s.io/v1alpha1)",
// "native (scheduling.k8s.io/v1alpha2)", "operator kuberay-operator
// (scheduling.x-k8s.io/v1alpha1)", "-" for none.
func (b *gangBackend) String() string {
	if b == nil {
		return "-"
	}
	if b.MadeBy != "" {
		return fmt.Sprintf("%s %s (%s)", b.Name, b.MadeBy, b.APIVersion)
	}
	return fmt.Sprintf("%s (%s)", b.Name, b.APIVersion)
}

// gangPhase is the PodGroup's phase, or that it is not made yet.
func gangPhase(s *definitions.GangState) string {
	switch {
	case s.NotInEffect != "":
		return "not in effect"
	case s.Note != "":
		return "unknown"
	case !s.Found:
		return "not made yet"
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
