package plugin

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

// PreFilter fails fast when the pod's group cannot be complete: too few pods, backed off after
// a failure, or more resources than the cluster has free. A gang that asks for a topology is
// confined to its domain (chosen here for its first pod, see domain.go), each pod of the
// attempt that chose it to the node it was found to fit on with the others.
func (g *Gang) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if simulated(state) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	group, ok := g.members.GroupOf(pod.UID)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if !group.Known {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s does not exist", group.Key))
	}
	if g.clock.Now().Before(group.BackoffUntil) {
		return nil, waitStatus(group)
	}
	if group.Members < int(group.Spec.MinMember) && !leaderFirstBatch(group) {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s has %d of its minMember %d pods", group.Key, group.Members, group.Spec.MinMember))
	}
	if cause := g.claims.gangCause(group.Key); cause.Message != "" {
		g.backOff(group.Key, cause) // a member waits for a claim that cannot be made
		return nil, causeStatus(cause)
	}
	if group.Topology.Constrained() {
		return g.confine(ctx, state, pod, group)
	}
	if group.Assigned > 0 {
		return nil, fwk.NewStatus(fwk.Skip) // the attempt is under way: its room was checked by its first pod
	}
	need := group.Spec.MinResources
	if len(need) == 0 {
		need = g.members.Demand(group.Key)
	}
	if len(need) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if cause := room(group.Key, need, g.handle.SnapshotSharedLister()); cause.Message != "" {
		g.backOff(group.Key, cause)
		return nil, causeStatus(cause)
	}
	return nil, fwk.NewStatus(fwk.Skip)
}

// leaderFirstBatch says whether a gang's members are its first pods, which its controller
// creates alone: nothing of the gang holds a node yet, and its controller creates the rest only
// once they do. They are scheduled without waiting for the rest, once the whole gang fits.
func leaderFirstBatch(group grouper.GroupView) bool {
	return group.LeaderFirst && group.Assigned == group.Waiting && group.Members < int(group.Spec.MinMember)
}

// leaderFirstAdmitted says whether a gang's first pods may bind: every member there is holds
// a node reserved by this scheduler, none is bound yet, and its controller creates the rest
// only once they bind.
func leaderFirstAdmitted(group grouper.GroupView) bool {
	return leaderFirstBatch(group) && group.Waiting == group.Members
}

// confinedKey holds, in a pod's cycle state, the nodes its gang's domain allows it.
const confinedKey fwk.StateKey = Name + "/confined"

type confinedNodes struct {
	nodes sets.Set[string]
	why   string
}

func (c *confinedNodes) Clone() fwk.StateData { return c }

// confine finds the pod's gang's domain and keeps the pod to it: to its planned node, or to
// every node of the domain (Filter enforces it too, for a nominated node).
func (g *Gang) confine(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, group grouper.GroupView) (*fwk.PreFilterResult, *fwk.Status) {
	d, status := g.domainOf(ctx, group)
	if status != nil {
		return nil, status
	}
	if node := d.Planned[pod.UID]; node != "" {
		state.Write(confinedKey, &confinedNodes{nodes: sets.New(node), why: fmt.Sprintf("the node planned for it with PodGroup %s is %s", group.Key, node)})
		return &fwk.PreFilterResult{NodeNames: sets.New(node)}, nil
	}
	// A later pod: in the gang's domain, and in its parts', where its parts were placed.
	parts := g.members.PartsOf(pod.UID)
	var within []partDomain
	for i, nested := range d.Nested {
		if v, ok := nested.Parts[partAt(parts, i)]; ok {
			within = append(within, partDomain{label: nested.Label, value: v})
		}
	}
	if d.Label == "" && len(within) == 0 {
		return nil, fwk.NewStatus(fwk.Skip) // only a preferred level: later pods go anywhere
	}
	nodes, err := g.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	in := sets.New[string]()
	for _, n := range nodes {
		labels := n.Node().Labels
		if v, ok := labels[d.Label]; (d.Label == "" || ok && v == d.Value) && inParts(labels, within) {
			in.Insert(n.Node().Name)
		}
	}
	why := fmt.Sprintf("PodGroup %s is placed in %s", group.Key, d)
	for i, part := range within {
		if i == 0 {
			why += ", this pod's part in "
		} else {
			why += ", its smaller part in "
		}
		why += part.label + "=" + part.value
	}
	state.Write(confinedKey, &confinedNodes{nodes: in, why: why})
	return &fwk.PreFilterResult{NodeNames: in}, nil
}

// partDomain is the domain a pod's part was placed in: a value of a nested level's label.
type partDomain struct{ label, value string }

// inParts says whether a node's labels put it in every one of the domains.
func inParts(labels map[string]string, within []partDomain) bool {
	for _, d := range within {
		if labels[d.label] != d.value {
			return false
		}
	}
	return true
}

// Filter keeps a pod of a topology-constrained gang to its domain: PreFilter's node set
// already does, except for a node the pod was nominated to.
func (g *Gang) Filter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	data, err := state.Read(confinedKey)
	if err != nil {
		return nil
	}
	c := data.(*confinedNodes)
	if !c.nodes.Has(node.Node().Name) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, c.why)
	}
	return nil
}

// PreFilterExtensions is not used.
func (g *Gang) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter runs when a pod fits no node. If its gang is not yet admitted, it preempts
// lower-priority pods when that lets the whole gang fit; else every waiting member is
// rejected (releasing their nodes) and the group is backed off.
func (g *Gang) PostFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	group, ok := g.members.GroupOf(pod.UID)
	if !ok {
		return g.preemptForPod(ctx, state, pod, statuses)
	}
	if held := g.preemptions.standing(group, pod.UID, g.clock.Now(), g.handle.SnapshotSharedLister()); held.holds {
		// The pod stays nominated to its planned node: kube-scheduler drops a nomination made
		// in memory at the pod's next failed attempt unless a PostFilter result renews it.
		var result *fwk.PostFilterResult
		if held.node != "" {
			result = &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: held.node}}
		}
		if held.victims > 0 {
			return result, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s waits for the %d %s it preempted to go", group.Key, held.victims, pods(held.victims)))
		}
		// Its victims are gone, and its backoff still runs: it is tried again now, and keeps
		// the room until then.
		g.retrier.request(group.Key)
		return result, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s: the pods it preempted are gone; it is tried again", group.Key))
	}
	if g.clock.Now().Before(group.BackoffUntil) {
		// Turned away at PreFilter (no room, no domain): lower-priority pods may make room,
		// once per backoff.
		if !group.Cause.Never && g.members.TryPreemption(group.Key, group.Failures) {
			if result := g.preempt(ctx, group, pod); result != nil {
				return result, fwk.NewStatus(fwk.Success)
			}
		}
		// Already rejected (or placed nowhere): the backoff stands, and its cause is this pod's
		// reason too, not only what the next PostFilter plugin (preemption) has to say; said
		// once: a pod PreFilter turned away for it has it as its nodes' reason already.
		if msg := waitStatus(group).Message(); !g.nodesSaid(statuses, msg) {
			return clearNomination, fwk.NewStatus(fwk.Unschedulable, msg)
		}
		return clearNomination, fwk.NewStatus(fwk.Unschedulable)
	}
	if group.Known && group.Assigned >= int(group.Spec.MinMember) {
		if result, status := g.preemptForPod(ctx, state, pod, statuses); status.IsSuccess() {
			return result, status
		}
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s is admitted%s; this extra member waits for room", group.Key, placedIn(group.Domain)))
	}
	if d := group.Domain; d != nil && len(d.Planned) > 0 && d.Planned[pod.UID] == "" {
		// The gang's placement holds it without this pod: the pod waits, the gang goes on.
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s is placed%s without this extra member, which waits for room", group.Key, placedIn(d)))
	}
	cause := g.fitsNoNode(group, pod, statuses)
	if !cause.Never {
		if result := g.preempt(ctx, group, pod); result != nil {
			return result, fwk.NewStatus(fwk.Success)
		}
		g.members.TryPreemption(group.Key, group.Failures+1) // the backoff this failure starts
	}
	g.rejectGroup(group.Key, cause)
	return clearNomination, causeStatus(cause)
}

// clearNomination drops a gang pod's nomination when its gang fails to fit and preempts for
// nothing, as kube-scheduler's preemption does for a pod: room nominated to a gang that cannot
// use it would be lost to every lower-priority pod.
var clearNomination = &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride}}

// preemptForPod preempts for a pod that does not preempt as a gang, as kube-scheduler would,
// with whole gangs as victims.
func (g *Gang) preemptForPod(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if g.pods == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("preemption is off: %v", g.preemptionProblem))
	}
	if state == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	return g.pods.postFilter(ctx, state, pod, statuses)
}

// nodesSaid reports whether the nodes' statuses of a failed attempt already say msg (PreFilter
// rejected the pod with it: every node has that status).
func (g *Gang) nodesSaid(statuses fwk.NodeToStatusReader, msg string) bool {
	if statuses == nil {
		return false
	}
	nodes, err := g.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil || len(nodes) == 0 {
		return false
	}
	s := statuses.Get(nodes[0].Node().Name)
	return s != nil && s.Message() == msg
}

// fitsNoNode says why a gang failed when one of its pods fits no node: what the gang needs
// together, if the cluster is short of it; else why the nodes turned the pod away, most often
// first (as kube-scheduler counts them). It can never fit when every node turned the pod away
// for good (too small, a selector or taint it does not match).
func (g *Gang) fitsNoNode(group grouper.GroupView, pod *corev1.Pod, statuses fwk.NodeToStatusReader) grouper.Cause {
	need := group.Spec.MinResources
	if len(need) == 0 {
		need = g.members.Demand(group.Key)
	}
	lister := g.handle.SnapshotSharedLister()
	if cause := room(group.Key, need, lister); cause.Message != "" {
		return cause
	}
	nodes, err := lister.NodeInfos().List()
	if err != nil || statuses == nil {
		return grouper.Cause{Message: fmt.Sprintf("PodGroup %s: member %s fits no node", group.Key, pod.Name)}
	}
	counts, never := map[string]int{}, len(nodes) > 0
	for _, n := range nodes {
		s := statuses.Get(n.Node().Name)
		never = never && s.Code() == fwk.UnschedulableAndUnresolvable
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	reasons := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	what := "fits no node"
	if never {
		what = "can never fit a node of this cluster as it is"
	}
	return grouper.Cause{Never: never, Message: fmt.Sprintf("PodGroup %s: member %s %s (%d nodes: %s)", group.Key, pod.Name, what, len(nodes), strings.Join(reasons, ", "))}
}

// placedIn says where a gang was placed, as " in label=value" ("" when not placed in a
// domain of a required level).
func placedIn(d *grouper.Domain) string {
	if d == nil || d.Label == "" {
		return ""
	}
	return " in " + d.String()
}

// Reserve counts the pod as holding a node for its group.
func (g *Gang) Reserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	if simulated(state) {
		return nil
	}
	g.members.Reserve(pod.UID)
	return nil
}

// Unreserve runs when a reserved pod fails (rejected at Permit, timed out, or its binding
// failed): the pod's node is released, and if its gang was not complete every other waiting
// member is rejected too and the group backed off.
func (g *Gang) Unreserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ string) {
	if simulated(state) {
		return
	}
	g.members.Unreserve(pod.UID)
	group, ok := g.members.GroupOf(pod.UID)
	if !ok {
		return
	}
	if !group.Known || group.Assigned < int(group.Spec.MinMember) {
		g.rejectGroup(group.Key, grouper.Cause{Message: fmt.Sprintf("PodGroup %s: member %s was turned away before the gang was complete", group.Key, pod.Name)})
	}
}

// Permit lets the pod bind once minMember pods of its group hold a node, and then lets every
// waiting member bind with it; until then the pod waits, at most the group's timeout.
func (g *Gang) Permit(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	group, ok := g.members.GroupOf(pod.UID)
	if !ok {
		return nil, 0
	}
	if !group.Known {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s does not exist", group.Key)), 0
	}
	if !completeGang(group) {
		timeout := g.args.PermitTimeout()
		if s := group.Spec.ScheduleTimeoutSeconds; s != nil && *s > 0 {
			timeout = time.Duration(*s) * time.Second
		}
		return fwk.NewStatus(fwk.Wait, fmt.Sprintf("PodGroup %s: %d of minMember %d pods hold a node", group.Key, group.Assigned, group.Spec.MinMember)), timeout
	}
	g.admit(group.Key)
	return nil, 0
}

// completeGang says whether a gang may bind: minMember of its pods hold a node (or its controller
// creates the rest only once its first pods bind).
func completeGang(group grouper.GroupView) bool {
	return group.Assigned >= int(group.Spec.MinMember) || leaderFirstAdmitted(group)
}

// admit lets a complete gang's members waiting at Permit bind.
func (g *Gang) admit(key string) {
	for _, uid := range g.members.Reserved(key) {
		if wp := g.handle.GetWaitingPod(uid); wp != nil {
			wp.Allow(Name)
		}
	}
	g.members.Admitted(key)
	g.preemptions.forget(key)
}
