package grouper

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Membership is the one view of which pod belongs to which gang. The pod and PodGroup event
// handlers keep it; the scheduler plugin (PreEnqueue, QueueSort, PreFilter, Permit, Bind) and
// the PodGroup status writer read it. Every call is O(1) in the size of the gang, except the
// ones that return the gang's pods.
//
// It holds the pods of one scheduler that are not terminated, the group each was put in, and
// per group: its spec (from workmap's decision, or the operator's PodGroup), which members hold
// a node, how many finished, and the plugin's scheduling state (its backoff), which the plugin
// changes only through the methods in gangstate.go. It wakes a gang's pods in the scheduling
// queue when their grouping is decided or their group changes. A group is forgotten when it has no members left and no
// PodGroup object; a pod when it is deleted or terminates.
type Membership struct {
	mu     sync.RWMutex
	pods   map[types.UID]*member
	groups map[string]*Group
	// queue is where a gang's pods are woken (nil: nowhere).
	queue Queue
}

type member struct {
	pod   *corev1.Pod // the informer's copy: read, never modified
	group *Group      // nil: decided, no gang
	// parts are the pod's parts of a gang with nested topology (Placement.Parts).
	parts []string
	// reserved: this scheduler reserved a node for the pod (waiting at Permit or binding).
	reserved bool
}

func (m *member) assigned() bool { return m.reserved || m.pod.Spec.NodeName != "" }

// Group is one gang: a PodGroup and its members. Its fields are read under the Membership's
// lock through the Membership's methods.
type Group struct {
	Key, Namespace, Name string
	// Spec is the PodGroup's spec: workmap's desired one, or the operator's as cached.
	Spec v1alpha1.PodGroupSpec
	// Known: the spec is known (workmap decided it, or the operator's PodGroup is cached).
	Known bool
	// Owned: workmap makes and keeps this PodGroup (else an operator does).
	Owned bool
	// Desired is the PodGroup workmap makes (owned groups).
	Desired *v1alpha1.PodGroup
	// Exists: the PodGroup object is in the cache.
	Exists bool
	// Since orders gangs in the queue: when the group was first seen.
	Since time.Time

	members  map[types.UID]*member
	assigned int
	// waiting are the members reserved by this scheduler and not bound yet.
	waiting map[types.UID]struct{}
	// running counts live members in phase Running; finished are members that terminated.
	running  int
	finished map[types.UID]corev1.PodPhase
	// vanished counts members that left the scheduler's view bound and not being deleted: its
	// pod informer drops a pod that terminated, reporting it as it was before (running), so
	// how it ended is read from the API server (Settle).
	vanished int
	// demand is what the first minMember members request together (nil: not computed).
	demand corev1.ResourceList

	// Scheduling state (see gangstate.go): until when the group is held back after a failed
	// attempt, how many attempts failed since it was last admitted, and why the last one did.
	backoffUntil time.Time
	failures     int
	cause        Cause
	// preemptionTried: the gang looked for victims when its failures were preemptionTriedAt
	// (it looks once per backoff).
	preemptionTried   bool
	preemptionTriedAt int
	// topology is what the gang asks of the cluster's topology, domain where it was placed
	// (see topology.go).
	topology Topology
	domain   *Domain
	// leaderFirst: see LeaderFirstAnnotation.
	leaderFirst bool
}

// NewMembership returns an empty view whose gangs' pods are woken in queue (nil: nowhere).
func NewMembership(queue Queue) *Membership {
	return &Membership{pods: map[types.UID]*member{}, groups: map[string]*Group{}, queue: queue}
}

// GroupView is a copy of what a reader needs of one group at one moment.
type GroupView struct {
	Key, Namespace, Name string
	Spec                 v1alpha1.PodGroupSpec
	Known, Owned, Exists bool
	Since                time.Time
	// Members are the live pods in the group, Assigned those that hold a node (reserved by
	// this scheduler or bound).
	Members, Assigned int
	BackoffUntil      time.Time
	Failures          int
	// Cause is why the gang's last attempt failed (zero: none failed since it was admitted).
	Cause Cause
	// Topology is what the gang asks of the cluster's topology; Domain is where it was placed
	// (nil: not placed, or no topology asked).
	Topology Topology
	Domain   *Domain
	// LeaderFirst: the gang's first pods may bind before the rest exist (LeaderFirstAnnotation).
	// Waiting are the members reserved by this scheduler and not bound yet.
	LeaderFirst bool
	Waiting     int
}

func (g *Group) view() GroupView {
	return GroupView{
		Key: g.Key, Namespace: g.Namespace, Name: g.Name, Spec: g.Spec, Known: g.Known, Owned: g.Owned, Exists: g.Exists,
		Since: g.Since, Members: len(g.members), Assigned: g.assigned, BackoffUntil: g.backoffUntil, Failures: g.failures, Cause: g.cause,
		Topology: g.topology, Domain: g.domain, LeaderFirst: g.leaderFirst, Waiting: len(g.waiting),
	}
}

// Decided says whether the pod's grouping is decided, and its group's key ("" for none).
func (m *Membership) Decided(uid types.UID) (key string, decided bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mem, ok := m.pods[uid]
	if !ok {
		return "", false
	}
	if mem.group == nil {
		return "", true
	}
	return mem.group.Key, true
}

// GroupOf returns the pod's group, false when the pod is undecided or in none.
func (m *Membership) GroupOf(uid types.UID) (GroupView, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mem, ok := m.pods[uid]
	if !ok || mem.group == nil {
		return GroupView{}, false
	}
	return mem.group.view(), true
}

// SortKey returns what the queue orders a pod by: its group's key and since when the group
// exists; false for a pod in no group.
func (m *Membership) SortKey(uid types.UID) (string, time.Time, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mem, ok := m.pods[uid]
	if !ok || mem.group == nil {
		return "", time.Time{}, false
	}
	return mem.group.Key, mem.group.Since, true
}

// Group returns a group by key.
func (m *Membership) Group(key string) (GroupView, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.groups[key]
	if !ok {
		return GroupView{}, false
	}
	return g.view(), true
}

// Placement is where a pod goes: its group's key and, for a group workmap decided, the
// PodGroup it makes. The zero Placement is no gang.
type Placement struct {
	Key, Namespace, Name string
	// Desired is workmap's PodGroup; nil for an operator's.
	Desired *v1alpha1.PodGroup
	// Parts are the pod's parts of a gang whose parts each share a domain of a narrower level
	// (its role instance, replica, or both), one per nested level, outer first; nil for none.
	Parts []string
}

// Join records a pod's grouping (a new decision or a changed one). It returns the group's view
// after the change and whether the decision changed (another group, or its spec).
func (m *Membership) Join(pod *corev1.Pod, p Placement, now time.Time) (GroupView, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, known := m.pods[pod.UID]
	if known && sameGroup(mem.group, p.Key) {
		mem.parts = p.Parts
		m.updateLocked(mem, pod)
		if mem.group == nil {
			return GroupView{}, false
		}
		changed := p.Desired != nil && mem.group.setDesired(p.Desired)
		return mem.group.view(), changed
	}
	if known {
		m.leaveLocked(mem)
	} else {
		mem = &member{}
		m.pods[pod.UID] = mem
	}
	mem.pod, mem.parts = pod, p.Parts
	if p.Key == "" {
		return GroupView{}, true
	}
	g := m.groups[p.Key]
	if g == nil {
		g = &Group{Key: p.Key, Namespace: p.Namespace, Name: p.Name, Since: now, members: map[types.UID]*member{}}
		m.groups[p.Key] = g
	}
	if p.Desired != nil {
		g.setDesired(p.Desired)
	}
	mem.group = g
	g.members[pod.UID] = mem
	if mem.assigned() {
		g.assigned++
	}
	g.trackWaiting(mem)
	if pod.Status.Phase == corev1.PodRunning {
		g.running++
	}
	g.demand = nil
	return g.view(), true
}

func sameGroup(g *Group, key string) bool {
	if g == nil {
		return key == ""
	}
	return g.Key == key
}

// setDesired makes pg the group's PodGroup, reporting whether its spec changed.
func (g *Group) setDesired(pg *v1alpha1.PodGroup) bool {
	if g.Desired != nil && specEqual(g.Desired.Spec, pg.Spec) && upToDate(g.Desired, pg) {
		g.Desired = pg
		return false
	}
	g.Desired, g.Owned, g.Known, g.Spec, g.demand = pg, true, true, pg.Spec, nil
	g.topology, g.leaderFirst = TopologyOf(pg), pg.Annotations[LeaderFirstAnnotation] == "true"
	return true
}

// Update records a newer copy of a decided pod (bound, phase changed). It reports whether the
// pod is known.
func (m *Membership) Update(pod *corev1.Pod) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.pods[pod.UID]
	if ok {
		m.updateLocked(mem, pod)
	}
	return ok
}

func (m *Membership) updateLocked(mem *member, pod *corev1.Pod) {
	old := mem.pod
	mem.pod = pod
	g := mem.group
	if g == nil || old == nil {
		return
	}
	wasAssigned := mem.reserved || old.Spec.NodeName != ""
	if wasAssigned != mem.assigned() {
		g.assigned += boolDelta(mem.assigned())
		g.forgetDomainIfFree()
	}
	g.trackWaiting(mem)
	if (old.Status.Phase == corev1.PodRunning) != (pod.Status.Phase == corev1.PodRunning) {
		g.running += boolDelta(pod.Status.Phase == corev1.PodRunning)
	}
}

func boolDelta(b bool) int {
	if b {
		return 1
	}
	return -1
}

// Remove forgets a pod that was deleted or terminated; a terminated pod (its final phase
// Succeeded or Failed) is counted as finished in its group.
func (m *Membership) Remove(pod *corev1.Pod) (key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.pods[pod.UID]
	if !ok {
		return ""
	}
	delete(m.pods, pod.UID)
	g := mem.group
	if g == nil {
		return ""
	}
	m.updateLocked(mem, pod)
	m.leaveLocked(mem)
	switch phase := pod.Status.Phase; {
	case phase == corev1.PodSucceeded || phase == corev1.PodFailed:
		g.setFinished(pod.UID, phase)
	case pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil:
		g.vanished++
	}
	m.dropIfUnusedLocked(g)
	return g.Key
}

func (g *Group) setFinished(uid types.UID, phase corev1.PodPhase) {
	if g.finished == nil {
		g.finished = map[types.UID]corev1.PodPhase{}
	}
	g.finished[uid] = phase
}

// Settle records how the group's vanished members ended, as the API server has them (phases
// by pod: Succeeded or Failed); the others were deleted. It returns whether any ended.
func (m *Membership) Settle(key string, phases map[types.UID]corev1.PodPhase) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[key]
	if g == nil {
		return false
	}
	g.vanished = 0
	for uid, phase := range phases {
		if _, member := g.members[uid]; !member {
			g.setFinished(uid, phase)
		}
	}
	return len(phases) > 0
}

func (m *Membership) leaveLocked(mem *member) {
	g := mem.group
	if g == nil {
		return
	}
	delete(g.members, mem.pod.UID)
	delete(g.waiting, mem.pod.UID)
	if mem.assigned() {
		g.assigned--
		g.forgetDomainIfFree()
	}
	if mem.pod.Status.Phase == corev1.PodRunning {
		g.running--
	}
	mem.group, mem.reserved, g.demand = nil, false, nil
}

// dropIfUnusedLocked forgets a group with no members and no PodGroup object (its workload is
// gone, or it never had one made).
func (m *Membership) dropIfUnusedLocked(g *Group) {
	if len(g.members) == 0 && !g.Exists {
		delete(m.groups, g.Key)
	}
}

// Reserve marks a member as holding a node reserved by this scheduler.
func (m *Membership) Reserve(uid types.UID) { m.setReserved(uid, true) }

// Unreserve marks a member's reservation released.
func (m *Membership) Unreserve(uid types.UID) { m.setReserved(uid, false) }

func (m *Membership) setReserved(uid types.UID, reserved bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.pods[uid]
	if !ok || mem.group == nil || mem.reserved == reserved {
		return
	}
	before := mem.assigned()
	mem.reserved = reserved
	if before != mem.assigned() {
		mem.group.assigned += boolDelta(mem.assigned())
		mem.group.forgetDomainIfFree()
	}
	mem.group.trackWaiting(mem)
}

// trackWaiting keeps the member in the group's waiting set while it is reserved and unbound.
func (g *Group) trackWaiting(mem *member) {
	if mem.reserved && mem.pod.Spec.NodeName == "" {
		if g.waiting == nil {
			g.waiting = map[types.UID]struct{}{}
		}
		g.waiting[mem.pod.UID] = struct{}{}
		return
	}
	delete(g.waiting, mem.pod.UID)
}

// SetPodGroup records the cached PodGroup object of a key (nil: it was deleted). An operator's
// PodGroup gives its group's spec; workmap's own keep the desired spec.
func (m *Membership) SetPodGroup(key string, pg *v1alpha1.PodGroup) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[key]
	if pg == nil {
		if g != nil {
			g.Exists = false
			if g.Desired == nil {
				g.Known = false
			}
			m.dropIfUnusedLocked(g)
		}
		return
	}
	if g == nil {
		g = &Group{Key: key, Namespace: pg.Namespace, Name: pg.Name, Since: pg.CreationTimestamp.Time, members: map[types.UID]*member{}}
		m.groups[key] = g
	}
	g.Exists = true
	if pg.Labels[ManagedByLabel] == ManagedByValue {
		g.Owned = true
	}
	if !pg.CreationTimestamp.IsZero() && pg.CreationTimestamp.Time.Before(g.Since) {
		g.Since = pg.CreationTimestamp.Time
	}
	if g.Desired != nil {
		return // workmap's decision is the spec; the writer brings the object to it
	}
	if !g.Known || !specEqual(g.Spec, pg.Spec) {
		g.demand = nil
	}
	g.Spec, g.Known, g.topology = pg.Spec, true, TopologyOf(pg)
	g.leaderFirst = pg.Annotations[LeaderFirstAnnotation] == "true"
}

// Pods returns the group's live pods; unboundOnly keeps those without a node.
func (m *Membership) Pods(key string, unboundOnly bool) []*corev1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[key]
	if g == nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(g.members))
	for _, mem := range g.members {
		if !unboundOnly || mem.pod.Spec.NodeName == "" {
			out = append(out, mem.pod)
		}
	}
	return out
}

// Reserved returns the UIDs of the group's members that hold a node reserved by this
// scheduler and are not bound yet (waiting at Permit or binding).
func (m *Membership) Reserved(key string) []types.UID {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[key]
	if g == nil {
		return nil
	}
	out := make([]types.UID, 0, len(g.waiting))
	for uid := range g.waiting {
		out = append(out, uid)
	}
	return out
}

// Demand is what the group's first minMember members request together, computed once per
// change of membership.
func (m *Membership) Demand(key string) corev1.ResourceList {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[key]
	if g == nil {
		return nil
	}
	if g.demand == nil {
		g.demand = corev1.ResourceList{}
		n := 0
		for _, mem := range g.members {
			if n == int(g.Spec.MinMember) {
				break
			}
			n++
			for name, q := range resourcehelper.PodRequests(mem.pod, resourcehelper.PodResourcesOptions{}) {
				sum := g.demand[name]
				sum.Add(q)
				g.demand[name] = sum
			}
		}
	}
	return g.demand
}

// Counts are a group's pod counts, as a PodGroup's status reports them.
type Counts struct {
	MinMember                                      int32
	Waiting, Scheduled, Running, Succeeded, Failed int32
	// Vanished are members that left bound, not deleted, and whose end is not known yet.
	Vanished int32
}

// Counts returns a group's pod counts.
func (m *Membership) Counts(key string) (Counts, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[key]
	if g == nil {
		return Counts{}, false
	}
	c := Counts{MinMember: g.Spec.MinMember, Running: int32(g.running), Vanished: int32(g.vanished)}
	for _, mem := range g.members {
		if mem.pod.Spec.NodeName != "" {
			c.Scheduled++
		} else if mem.pod.DeletionTimestamp == nil {
			c.Waiting++
		}
	}
	for _, phase := range g.finished {
		c.Scheduled++
		if phase == corev1.PodSucceeded {
			c.Succeeded++
		} else {
			c.Failed++
		}
	}
	return c, true
}

// desired returns workmap's PodGroup of an owned group (nil for none).
func (m *Membership) desired(key string) *v1alpha1.PodGroup {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[key]; g != nil && g.Owned {
		return g.Desired
	}
	return nil
}

// unlabelled returns a bound member of a group workmap manages that lacks its pod-group label,
// and the group's name.
func (m *Membership) unlabelled(uid types.UID) (*corev1.Pod, string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mem, ok := m.pods[uid]
	if !ok || mem.group == nil || !mem.group.Owned || mem.pod.Spec.NodeName == "" || mem.pod.Labels[v1alpha1.PodGroupLabel] == mem.group.Name {
		return nil, ""
	}
	return mem.pod, mem.group.Name
}

// Len returns how many pods and groups the view holds.
func (m *Membership) Len() (pods, groups int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.pods), len(m.groups)
}

func specEqual(a, b v1alpha1.PodGroupSpec) bool {
	if a.MinMember != b.MinMember || (a.ScheduleTimeoutSeconds == nil) != (b.ScheduleTimeoutSeconds == nil) ||
		(a.ScheduleTimeoutSeconds != nil && *a.ScheduleTimeoutSeconds != *b.ScheduleTimeoutSeconds) || len(a.MinResources) != len(b.MinResources) {
		return false
	}
	for name, q := range a.MinResources {
		if o, ok := b.MinResources[name]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}
