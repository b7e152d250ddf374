package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// simulationRunner runs the profile's PreFilter and Reserve plugins for a pod: kube-scheduler's
// framework, which is the handle a plugin is given, does.
type simulationRunner interface {
	RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *corev1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string])
	RunReservePluginsReserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status
	RunReservePluginsUnreserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string)
}

// simulationKey marks the cycle states of a placement being evaluated: the plugin's own
// PreFilter, Reserve and Unreserve, run for them, do nothing.
const simulationKey fwk.StateKey = Name + "/simulation"

type simulationMark struct{}

func (simulationMark) Clone() fwk.StateData { return simulationMark{} }

// simulated says whether a cycle state is the placer's, for a gang being placed.
func simulated(state fwk.CycleState) bool {
	if state == nil {
		return false
	}
	_, err := state.Read(simulationKey)
	return err == nil
}

// placeRequest is what a gang asks of a placement: its pods not bound yet, how many of them
// must fit, and the levels it asks for.
type placeRequest struct {
	pods                []*corev1.Pod
	need                int
	required, preferred level // Label "": none
	// nested are the levels each part of the gang, and each smaller part inside it, share one
	// domain of, outer first; partOf each pod's parts, one per level.
	nested []level
	partOf map[types.UID][]string
	// pinned is the required level's domain the gang's bound members hold ("": none), and
	// pinnedParts, per nested level, the domain of each part with bound members.
	pinned      string
	pinnedParts []map[string]string
	// evicted are pods taken off their nodes before the gang is placed: the victims a
	// preemption would take; nominated, pods put on their nodes first: those nominated to them
	// that the gang may not take the room of.
	evicted, nominated []evictee
}

// placement is one domain found to hold a gang.
type placement struct {
	value string
	plan  map[types.UID]string
	// free is what the domain has free of the gang's main resource before the gang; used, how
	// many domains of the preferred level the plan spans.
	free int64
	used int
}

// shape is pods that the filters treat alike (same requests, selectors, affinity,
// tolerations, volumes): one PreFilter run serves them all.
type shape struct {
	pod   *corev1.Pod
	state fwk.CycleState
	// allowed are the nodes PreFilter left to the pods (nil: all).
	allowed sets.Set[string]
	main    int64
}

// placer finds where a gang fits by running the profile's own plugins: PreFilter once per
// shape of its pods, then Filter for each pod on a copy of each candidate node that already
// holds the gang's pods placed before it (and the PreFilter extensions told of them, as
// kube-scheduler's preemption does for nominated pods), and Reserve for each pod placed, so
// that a plugin that keeps what it reserved out of later pods' Filter (devices of a claim
// being allocated) sees the gang's earlier pods; every simulation is released (Unreserve)
// when its plan is made.
type placer struct {
	handle fwk.Handle
	runner simulationRunner
}

// shapes runs PreFilter for each shape of the pods. A pod no node can host at all ends the
// search: its status is returned.
func (p *placer) shapes(ctx context.Context, pods []*corev1.Pod, resources []corev1.ResourceName) ([]*shape, map[types.UID]*shape, *fwk.Status) {
	byKey := map[string]*shape{}
	byPod := map[types.UID]*shape{}
	var out []*shape
	for _, pod := range pods {
		key := shapeKey(pod)
		s := byKey[key]
		if s == nil {
			state := framework.NewCycleState()
			state.Write(simulationKey, simulationMark{})
			result, status, _ := p.runner.RunPreFilterPlugins(ctx, state, pod)
			if !status.IsSuccess() {
				return nil, nil, fwk.NewStatus(status.Code(), fmt.Sprintf("pod %s fits no node: %s", pod.Name, status.Message()))
			}
			s = &shape{pod: pod, state: state, main: mainRequest(pod, resources)}
			if !result.AllNodes() {
				s.allowed = result.NodeNames
			}
			byKey[key] = s
			out = append(out, s)
		}
		byPod[pod.UID] = s
	}
	return out, byPod, nil
}

// simulation is one evaluation of where a gang's pods fit: copies of the nodes that received
// pods, and the shapes' cycle states told of them. Pods placed can be taken back (undo), so
// that parts of a gang can be tried in one domain after another.
type simulation struct {
	p         *placer
	byPod     map[types.UID]*shape
	resources []corev1.ResourceName
	states    map[*shape]fwk.CycleState
	copies    map[string]fwk.NodeInfo
	// rejected are the nodes a shape's pod did not fit on, while nothing was taken back.
	rejected map[*shape]sets.Set[string]
	infos    map[types.UID]fwk.PodInfo
	// reserved are the pods placed, in order, each reserved on its node.
	reserved []reservedPod
	// evicted are the pods taken off each node not copied yet, and freed what they free of
	// the main resources there: a node is copied only once a pod could fit on it, since a
	// preemption's search takes pods off most nodes of the cluster and looks at few.
	evicted map[string][]fwk.PodInfo
	freed   map[string]int64
}

// reservedPod is a pod the simulation placed and reserved on a node.
type reservedPod struct {
	pod  *corev1.Pod
	node string
}

func (p *placer) newSimulation(shapes []*shape, byPod map[types.UID]*shape, resources []corev1.ResourceName) *simulation {
	states := make(map[*shape]fwk.CycleState, len(shapes))
	for _, s := range shapes {
		states[s] = s.state.Clone()
	}
	return &simulation{
		p: p, byPod: byPod, resources: resources, states: states,
		copies: map[string]fwk.NodeInfo{}, rejected: map[*shape]sets.Set[string]{}, infos: map[types.UID]fwk.PodInfo{},
		evicted: map[string][]fwk.PodInfo{}, freed: map[string]int64{},
	}
}

// simulate starts a simulation of the request: its evicted pods taken off their nodes, its
// nominated pods put on theirs. The PreFilter extensions are told of each pod taken off with
// its node as the snapshot has it (the in-tree ones read only the Node object), so that the
// node itself is copied only if a pod is tried on it.
func (p *placer) simulate(ctx context.Context, req placeRequest, shapes []*shape, byPod map[types.UID]*shape, resources []corev1.ResourceName) *simulation {
	s := p.newSimulation(shapes, byPod, resources)
	for _, e := range req.evicted {
		name := e.node.Node().Name
		s.evicted[name] = append(s.evicted[name], e.pod)
		s.freed[name] += podRequest(e.pod, resources)
		for other, state := range s.states {
			p.handle.RunPreFilterExtensionRemovePod(ctx, state, other.pod, e.pod, e.node)
		}
	}
	for _, e := range req.nominated {
		info := s.copy(e.node)
		info.AddPodInfo(e.pod)
		for other, state := range s.states {
			p.handle.RunPreFilterExtensionAddPod(ctx, state, other.pod, e.pod, info)
		}
	}
	return s
}

// podRequest is what a pod asks of the main resources, as the scheduler counts it.
func podRequest(info fwk.PodInfo, resources []corev1.ResourceName) int64 {
	return amount(info.CalculateResource().Resource, resources)
}

// copy is the simulation's own copy of a node, made on first use, without the pods the
// simulation took off it.
func (s *simulation) copy(n fwk.NodeInfo) fwk.NodeInfo {
	name := n.Node().Name
	info, ok := s.copies[name]
	if !ok {
		info = n.Snapshot()
		logger := klog.Background()
		for _, pod := range s.evicted[name] {
			_ = info.RemovePod(logger, pod.GetPod())
		}
		delete(s.evicted, name)
		delete(s.freed, name)
		s.copies[name] = info
	}
	return info
}

// info is a node as the simulation has it.
func (s *simulation) info(n fwk.NodeInfo) fwk.NodeInfo {
	if c, ok := s.copies[n.Node().Name]; ok {
		return c
	}
	if _, ok := s.evicted[n.Node().Name]; ok {
		return s.copy(n)
	}
	return n
}

// freeOn is what a node has free of the main resources, as the simulation has it, without
// copying it.
func (s *simulation) freeOn(n fwk.NodeInfo) int64 {
	name := n.Node().Name
	if c, ok := s.copies[name]; ok {
		return free(c, s.resources)
	}
	return free(n, s.resources) + s.freed[name]
}

// free is what a set of nodes has free of the main resources, as the simulation has them.
func (s *simulation) free(nodes []fwk.NodeInfo) int64 {
	var sum int64
	for _, n := range nodes {
		sum += s.freeOn(n)
	}
	return sum
}

// tightestFirst orders nodes by what they have free of the main resources, as the simulation
// has them, least first (stably), so that a gang leaves the roomiest nodes to others.
func (s *simulation) tightestFirst(nodes []fwk.NodeInfo) []fwk.NodeInfo {
	type freeNode struct {
		node fwk.NodeInfo
		free int64
	}
	byFree := make([]freeNode, len(nodes))
	for i, n := range nodes {
		byFree[i] = freeNode{n, s.freeOn(n)}
	}
	slices.SortStableFunc(byFree, func(a, b freeNode) int { return cmpInt64(a.free, b.free) })
	out := make([]fwk.NodeInfo, len(nodes))
	for i, f := range byFree {
		out[i] = f.node
	}
	return out
}

// place places the pods (in order) each on the first of nodes (in order) where every Filter
// plugin admits it, and returns where; it stops once fewer pods are left than are still
// needed. A node that rejected a pod of a shape is not tried again for that shape: nodes only
// fill up while pods are placed.
func (s *simulation) place(ctx context.Context, nodes []fwk.NodeInfo, pods []*corev1.Pod, need int) map[types.UID]string {
	plan := map[types.UID]string{}
	frees := make([]int64, len(nodes)) // what each node has free, as pods are placed
	for i, n := range nodes {
		frees[i] = s.freeOn(n)
	}
	for i, pod := range pods {
		if len(plan)+len(pods)-i < need {
			break // too few pods left to make the gang
		}
		sh := s.byPod[pod.UID]
		for j, n := range nodes {
			if sh.main > 0 && frees[j] < sh.main {
				continue // cheaper than the filters, and what they would say
			}
			name := n.Node().Name
			if (sh.allowed != nil && !sh.allowed.Has(name)) || s.rejected[sh].Has(name) {
				continue
			}
			info := s.info(n)
			if !s.p.handle.RunFilterPlugins(ctx, s.states[sh], pod, info).IsSuccess() {
				s.reject(sh, name)
				continue
			}
			info = s.copy(n)
			podInfo, err := framework.NewPodInfo(pod)
			if err != nil {
				break
			}
			info.AddPodInfo(podInfo)
			if !s.reserve(ctx, pod, info) {
				s.reject(sh, name)
				continue
			}
			for other, state := range s.states {
				s.p.handle.RunPreFilterExtensionAddPod(ctx, state, other.pod, podInfo, info)
			}
			s.infos[pod.UID] = podInfo
			plan[pod.UID] = name
			frees[j] = free(info, s.resources)
			break
		}
	}
	return plan
}

// reject notes that a node did not take a pod of a shape.
func (s *simulation) reject(sh *shape, node string) {
	if s.rejected[sh] == nil {
		s.rejected[sh] = sets.New[string]()
	}
	s.rejected[sh].Insert(node)
}

// reserve runs the Reserve plugins for a pod just put on a node's copy; a pod a plugin
// refuses is taken back off (and Unreserve run, as kube-scheduler does).
func (s *simulation) reserve(ctx context.Context, pod *corev1.Pod, info fwk.NodeInfo) bool {
	name := info.Node().Name
	state := s.states[s.byPod[pod.UID]]
	if !s.p.runner.RunReservePluginsReserve(ctx, state, pod, name).IsSuccess() {
		s.p.runner.RunReservePluginsUnreserve(ctx, state, pod, name)
		_ = info.RemovePod(klog.FromContext(ctx), pod)
		return false
	}
	s.reserved = append(s.reserved, reservedPod{pod: pod, node: name})
	return true
}

// unreserve runs the Unreserve plugins for a placed pod. The pods taken back are mostly the
// last placed, so the search starts from the end.
func (s *simulation) unreserve(ctx context.Context, uid types.UID) {
	i := len(s.reserved) - 1
	for i >= 0 && s.reserved[i].pod.UID != uid {
		i--
	}
	if i < 0 {
		return
	}
	r := s.reserved[i]
	s.reserved = slices.Delete(s.reserved, i, i+1)
	s.p.runner.RunReservePluginsUnreserve(ctx, s.states[s.byPod[uid]], r.pod, r.node)
}

// release unreserves every pod the simulation still holds, the last placed first: a plan is
// made, the simulation is over.
func (s *simulation) release(ctx context.Context) {
	for len(s.reserved) > 0 {
		s.unreserve(ctx, s.reserved[len(s.reserved)-1].pod.UID)
	}
}

// undo takes placed pods back off their nodes.
func (s *simulation) undo(ctx context.Context, plan map[types.UID]string, pods []*corev1.Pod) {
	logger := klog.FromContext(ctx)
	for _, pod := range pods {
		name, ok := plan[pod.UID]
		if !ok {
			continue
		}
		s.unreserve(ctx, pod.UID)
		info := s.copies[name]
		if err := info.RemovePod(logger, pod); err != nil {
			continue
		}
		for other, state := range s.states {
			s.p.handle.RunPreFilterExtensionRemovePod(ctx, state, other.pod, s.infos[pod.UID], info)
		}
		delete(s.infos, pod.UID)
	}
	clear(s.rejected) // room was freed: a rejection may no longer hold
}

// largestFirst orders pods by their request of the main resource, largest first (then by
// name), so that big pods are placed while there is room for them.
func largestFirst(pods []*corev1.Pod, byPod map[types.UID]*shape) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if ma, mb := byPod[a.UID].main, byPod[b.UID].main; ma != mb {
			if ma > mb {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// mainResources are what tight fit is measured in: a gang's extended resources (GPUs) when it
// asks for any, else CPU.
func mainResources(pods []*corev1.Pod) []corev1.ResourceName {
	names := sets.New[corev1.ResourceName]()
	for _, pod := range pods {
		for name := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage && name != corev1.ResourcePods {
				names.Insert(name)
			}
		}
	}
	if names.Len() == 0 {
		return []corev1.ResourceName{corev1.ResourceCPU}
	}
	return sets.List(names)
}

// mainRequest is a pod's request of the main resources (CPU in millicores).
func mainRequest(pod *corev1.Pod, resources []corev1.ResourceName) int64 {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var sum int64
	for _, name := range resources {
		q := requests[name]
		if name == corev1.ResourceCPU {
			sum += q.MilliValue()
		} else {
			sum += q.Value()
		}
	}
	return sum
}

// free is what a node has free of the main resources (CPU in millicores).
func free(n fwk.NodeInfo, resources []corev1.ResourceName) int64 {
	return amount(n.GetAllocatable(), resources) - amount(n.GetRequested(), resources)
}

// capacity is a node's allocatable amount of the main resources (CPU in millicores).
func capacity(n fwk.NodeInfo, resources []corev1.ResourceName) int64 {
	return amount(n.GetAllocatable(), resources)
}

// amount is the sum of the main resources in r (CPU in millicores).
func amount(r fwk.Resource, resources []corev1.ResourceName) int64 {
	var sum int64
	for _, name := range resources {
		if name == corev1.ResourceCPU {
			sum += r.GetMilliCPU()
		} else {
			sum += r.GetScalarResources()[name]
		}
	}
	return sum
}

// shapeKey says which pods the filters treat alike: what they request and every field of
// the spec a Filter plugin reads. A pod with pod affinity, anti-affinity or spread
// constraints is a shape of its own, since those also depend on its labels; so is a pod with
// resource claims, since each pod made from a claim template has claims of its own.
func shapeKey(pod *corev1.Pod) string {
	s := pod.Spec
	if s.Affinity != nil && (s.Affinity.PodAffinity != nil || s.Affinity.PodAntiAffinity != nil) || len(s.TopologySpreadConstraints) > 0 || len(s.ResourceClaims) > 0 {
		return string(pod.UID)
	}
	var ports []corev1.ContainerPort
	for _, c := range s.Containers {
		ports = append(ports, c.Ports...)
	}
	key, err := json.Marshal([]any{
		resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), s.NodeSelector, s.Affinity, s.Tolerations,
		s.Volumes, ports, s.HostNetwork, s.NodeName, s.Overhead, s.RuntimeClassName, s.PriorityClassName,
	})
	if err != nil {
		return string(pod.UID)
	}
	return string(key)
}

// standIns are missing pods of a gang that are not created yet, for the placement to make
// room for: copies of the first pod (its selectors, tolerations, affinities), each requesting
// an equal share of what the gang's minResources leaves beyond the pods there are (the first
// pod's requests when the PodGroup states no minResources). They are never planned on a node.
func standIns(there []*corev1.Pod, minResources corev1.ResourceList, missing int) []*corev1.Pod {
	share := corev1.ResourceList{}
	if len(minResources) == 0 {
		share = resourcehelper.PodRequests(there[0], resourcehelper.PodResourcesOptions{})
	} else {
		left := minResources.DeepCopy()
		for _, p := range there {
			for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
				if l, ok := left[name]; ok {
					l.Sub(q)
					left[name] = l
				}
			}
		}
		for name, q := range left {
			if q.Sign() <= 0 {
				continue
			}
			if name == corev1.ResourceCPU {
				share[name] = *resource.NewMilliQuantity(q.MilliValue()/int64(missing), resource.DecimalSI)
			} else {
				share[name] = *resource.NewQuantity(q.Value()/int64(missing), q.Format)
			}
		}
	}
	out := make([]*corev1.Pod, missing)
	for i := range out {
		p := there[0].DeepCopy()
		p.Name = fmt.Sprintf("%s-stand-in-%d", there[0].Name, i)
		p.UID = types.UID(fmt.Sprintf("%s-stand-in-%d", there[0].UID, i))
		p.Spec.NodeName = ""
		p.Spec.InitContainers = nil
		p.Spec.Overhead = nil
		p.Spec.Containers = []corev1.Container{{Name: "stand-in", Resources: corev1.ResourceRequirements{Requests: share.DeepCopy()}}}
		out[i] = p
	}
	return out
}
