package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

// domainOf returns where a topology-constrained gang goes: the domain it was placed in, the
// domain of its members already bound (after a restart of the scheduler, or for pods created
// later), or a domain chosen now for its pods. A gang that fits in no domain is backed off and
// the status says which level and how close the best domain came.
func (g *Gang) domainOf(ctx context.Context, group grouper.GroupView) (*grouper.Domain, *fwk.Status) {
	if group.Domain != nil {
		return group.Domain, nil
	}
	req, status := g.request(group)
	if status != nil {
		return nil, g.fail(group.Key, status)
	}
	nodes, err := g.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	bound := g.members.BoundNodes(group.Key)
	if len(bound) > 0 && req.required.Label == "" && len(req.nested) == 0 {
		d := &grouper.Domain{} // only a preferred level, and placed: later pods go anywhere
		g.members.SetDomain(group.Key, d)
		return d, nil
	}
	// Members bound already (pods created later, or a restarted scheduler) pin the domain,
	// and each part's, that the rest of the gang joins. Bound in several, they leave the gang
	// no domain to be whole in: it waits.
	held, parts := boundDomains(bound, nodes, req)
	if len(held) > 1 {
		return nil, g.fail(group.Key, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s needs one %s, and its members bound already are in %d: %s",
			group.Key, req.required.Name, len(held), strings.Join(held, ", "))))
	}
	if len(held) == 1 {
		req.pinned = held[0]
	}
	req.pinnedParts = parts
	d, status := g.choose(ctx, group, req, nodes)
	if status != nil {
		return nil, g.fail(group.Key, status)
	}
	g.members.SetDomain(group.Key, d)
	return d, nil
}

// request is what a gang asks of a placement now: its levels resolved, and its members not
// bound yet, of which minMember less those bound must fit.
func (g *Gang) request(group grouper.GroupView) (placeRequest, *fwk.Status) {
	var req placeRequest
	req.nested = make([]level, len(group.Topology.Nested))
	asks := []struct {
		level string
		into  *level
	}{{group.Topology.Required, &req.required}, {group.Topology.Preferred, &req.preferred}}
	for i, nested := range group.Topology.Nested {
		asks = append(asks, struct {
			level string
			into  *level
		}{nested, &req.nested[i]})
	}
	for _, ask := range asks {
		asked, into := ask.level, ask.into
		if asked == "" {
			continue
		}
		l, err := g.levels.get().resolve(asked)
		if err != nil {
			return req, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s: %v", group.Key, err))
		}
		*into = l
	}
	bound := len(g.members.BoundNodes(group.Key))
	for _, p := range g.members.Pods(group.Key, true) {
		if p.DeletionTimestamp == nil {
			req.pods = append(req.pods, p)
		}
	}
	req.need = max(int(group.Spec.MinMember)-bound, 0)
	if missing := req.need - len(req.pods); group.LeaderFirst && bound == 0 && missing > 0 && len(req.pods) > 0 {
		// The rest of the gang is created once these bind: it must fit too, beside them.
		req.pods = append(req.pods, standIns(req.pods, group.Spec.MinResources, missing)...)
	}
	if len(req.nested) > 0 {
		req.partOf = g.members.MemberParts(group.Key)
	}
	return req, nil
}

// boundDomains are the domains of the required level that hold a gang's bound members, in
// order (none without a required level), and, per nested level, the domain of each part with
// members bound.
func boundDomains(bound map[types.UID]string, nodes []fwk.NodeInfo, req placeRequest) ([]string, []map[string]string) {
	if len(bound) == 0 {
		return nil, nil
	}
	labels := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		labels[n.Node().Name] = n.Node().Labels
	}
	held := sets.New[string]()
	if req.required.Label != "" {
		for _, node := range bound {
			if v, ok := labels[node][req.required.Label]; ok {
				held.Insert(v)
			}
		}
	}
	var parts []map[string]string
	for i, nested := range req.nested {
		pinned := map[string]string{}
		for uid, node := range bound {
			if part := partAt(req.partOf[uid], i); part != "" {
				if v, ok := labels[node][nested.Label]; ok {
					pinned[part] = v
				}
			}
		}
		parts = append(parts, pinned)
	}
	return sets.List(held), parts
}

// choose finds a domain of the gang's required level where its pods fit, by the profile's
// filters: the tightest fit (least of the main resource free before the gang), then the fewest
// domains of the preferred level. Inside it, the pods are packed into as few domains of the
// preferred level as the filters allow.
func (g *Gang) choose(ctx context.Context, group grouper.GroupView, req placeRequest, nodes []fwk.NodeInfo) (*grouper.Domain, *fwk.Status) {
	if g.placer.runner == nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s asks for a topology, and this scheduler cannot run its PreFilter plugins to place it", group.Key))
	}
	resources := mainResources(req.pods)
	shapes, byPod, status := g.placer.shapes(ctx, req.pods, resources)
	if status != nil {
		return nil, status
	}
	largestFirst(req.pods, byPod)
	demand := leastDemand(req.pods, byPod, req.need)

	candidates := map[string][]fwk.NodeInfo{"": nodes}
	if req.required.Label != "" {
		candidates = domains(nodes, req.required.Label)
		if len(candidates) == 0 {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s needs one %s, and no node has the label %s", group.Key, req.required.Name, req.required.Label))
		}
		if req.pinned != "" {
			candidates = map[string][]fwk.NodeInfo{req.pinned: candidates[req.pinned]}
		}
	}
	order := sortedKeys(candidates)
	freeOf := make(map[string]int64, len(order))
	capacityOf := make(map[string]int64, len(order))
	for _, v := range order {
		for _, n := range candidates[v] {
			freeOf[v] += free(n, resources)
			capacityOf[v] += capacity(n, resources)
		}
	}
	// Tightest first; for the same room left, the fullest (the larger domain) first.
	slices.SortStableFunc(order, func(a, b string) int {
		if c := cmpInt64(freeOf[a], freeOf[b]); c != 0 {
			return c
		}
		return cmpInt64(capacityOf[b], capacityOf[a])
	})

	var found *placement
	for _, v := range order {
		if found != nil && (req.preferred.Label == "" || freeOf[v] > found.free) {
			break // the first that holds the gang is the best, but for fewer preferred domains among ties
		}
		if freeOf[v] < demand {
			continue // too little room to hold the gang
		}
		plan, used := g.pack(ctx, candidates[v], req, byPod, shapes, resources, req.need)
		if len(plan) >= req.need && (found == nil || used < found.used) {
			found = &placement{value: v, plan: plan, free: freeOf[v], used: used}
		}
	}
	if found == nil {
		// How close each domain comes, to say so: the gang is backed off, so this runs once
		// per backoff.
		closest, closestValue := -1, ""
		for _, v := range order {
			if plan, _ := g.pack(ctx, candidates[v], req, byPod, shapes, resources, 0); len(plan) > closest {
				closest, closestValue = len(plan), v
			}
		}
		return nil, fwk.NewStatus(fwk.Unschedulable, noRoomMessage(group, req, byPod, closest, closestValue))
	}
	d := &grouper.Domain{Label: req.required.Label, Value: found.value, Planned: found.plan}
	if len(req.nested) > 0 {
		labels := make(map[string]map[string]string, len(nodes))
		for _, n := range nodes {
			labels[n.Node().Name] = n.Node().Labels
		}
		for i, nested := range req.nested {
			placed := grouper.NestedDomains{Label: nested.Label, Parts: map[string]string{}}
			for uid, node := range found.plan {
				if part := partAt(req.partOf[uid], i); part != "" {
					placed.Parts[part] = labels[node][nested.Label]
				}
			}
			d.Nested = append(d.Nested, placed)
		}
	}
	return d, nil
}

// pack places the gang in a domain's nodes, need of its pods at least: with nested parts, each
// part in one domain of the nested level; else in one domain of the preferred level if one
// holds it (the tightest), else over the fewest, filling the roomiest first; without either,
// over the domain's nodes, tightest first. It returns the plan and how many domains of the
// preferred level it spans.
func (g *Gang) pack(ctx context.Context, nodes []fwk.NodeInfo, req placeRequest, byPod map[types.UID]*shape, shapes []*shape, resources []corev1.ResourceName, need int) (map[types.UID]string, int) {
	sim := g.placer.simulate(ctx, req, shapes, byPod, resources)
	defer sim.release(ctx)
	if len(req.nested) > 0 {
		plan := map[types.UID]string{}
		g.packParts(ctx, sim, nodes, req.pods, 0, req, byPod, resources, plan)
		return plan, 0
	}
	// placeIn places the gang in nodes, tightest first, and takes it back off unless it fits.
	placeIn := func(nodes []fwk.NodeInfo) map[types.UID]string {
		plan := sim.place(ctx, sim.tightestFirst(nodes), req.pods, need)
		if len(plan) < need {
			sim.undo(ctx, plan, req.pods)
		}
		return plan
	}
	if req.preferred.Label == "" {
		return placeIn(nodes), 0
	}
	parts := domains(nodes, req.preferred.Label)
	order := sortedKeys(parts)
	freeOf := map[string]int64{}
	for _, v := range order {
		freeOf[v] = sim.free(parts[v])
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmpInt64(freeOf[a], freeOf[b]) })
	demand := leastDemand(req.pods, byPod, need)
	for _, v := range order {
		if freeOf[v] < demand {
			continue
		}
		if plan := placeIn(parts[v]); len(plan) >= need {
			return plan, 1
		}
	}
	// Over several: the roomiest first, each one's nodes tightest first; nodes without the
	// preferred level's label last.
	var all []fwk.NodeInfo
	for _, v := range slices.Backward(order) {
		all = append(all, sim.tightestFirst(parts[v])...)
	}
	for _, n := range nodes {
		if _, ok := n.Node().Labels[req.preferred.Label]; !ok {
			all = append(all, n)
		}
	}
	plan := sim.place(ctx, all, req.pods, need)
	labelOf := map[string]string{}
	for _, n := range all {
		labelOf[n.Node().Name] = n.Node().Labels[req.preferred.Label]
	}
	used := sets.New[string]()
	for _, node := range plan {
		used.Insert(labelOf[node])
	}
	return plan, used.Len()
}

// packParts places the pods of one part — at depth 0, all the gang's pods not bound yet —
// inside nodes: each of its parts at the nested level depth in one domain of that level, the
// largest first, each in the tightest domain that holds it (and its smaller parts, each in one
// domain of the next level) with the parts placed before it. At depth 0 the pods in no part go
// anywhere in nodes, as many as fit; inside a part every pod must fit. It adds what it places
// to plan, and stops at the first part that fits no domain, reporting false.
func (g *Gang) packParts(ctx context.Context, sim *simulation, nodes []fwk.NodeInfo, pods []*corev1.Pod, depth int, req placeRequest, byPod map[types.UID]*shape, resources []corev1.ResourceName, plan map[types.UID]string) bool {
	if depth == len(req.nested) {
		placed := sim.place(ctx, sim.tightestFirst(nodes), pods, len(pods))
		maps.Copy(plan, placed)
		return len(placed) == len(pods)
	}
	parts := map[string][]*corev1.Pod{}
	for _, p := range pods {
		name := partAt(req.partOf[p.UID], depth)
		parts[name] = append(parts[name], p)
	}
	demandOf := map[string]int64{}
	for name, members := range parts {
		for _, p := range members {
			demandOf[name] += byPod[p.UID].main
		}
	}
	names := sortedKeys(parts)
	slices.SortStableFunc(names, func(a, b string) int { return cmpInt64(demandOf[b], demandOf[a]) })
	subdomains := domains(nodes, req.nested[depth].Label)
	for _, name := range names {
		if name == "" {
			continue // placed last
		}
		members := parts[name]
		order := sortedKeys(subdomains)
		if v, ok := pinnedAt(req.pinnedParts, depth)[name]; ok {
			order = []string{v} // the part's members bound already are there
		}
		freeOf := map[string]int64{}
		for _, v := range order {
			freeOf[v] = sim.free(subdomains[v])
		}
		slices.SortStableFunc(order, func(a, b string) int { return cmpInt64(freeOf[a], freeOf[b]) })
		placed := false
		for _, v := range order {
			if freeOf[v] < demandOf[name] {
				continue
			}
			part := map[types.UID]string{}
			if g.packParts(ctx, sim, subdomains[v], members, depth+1, req, byPod, resources, part) {
				maps.Copy(plan, part)
				placed = true
				break
			}
			sim.undo(ctx, part, members)
		}
		if !placed {
			return false
		}
	}
	rest := parts[""]
	if len(rest) == 0 {
		return true
	}
	if depth == 0 {
		maps.Copy(plan, sim.place(ctx, nodes, rest, 0)) // as many as fit: minMember counts them
		return true
	}
	placed := sim.place(ctx, nodes, rest, len(rest))
	maps.Copy(plan, placed)
	return len(placed) == len(rest)
}

// pinnedAt is the domain of each part with bound members at a nested level (nil: none).
func pinnedAt(pinned []map[string]string, depth int) map[string]string {
	if depth < len(pinned) {
		return pinned[depth]
	}
	return nil
}

// partAt is a pod's part at a nested level ("" for none).
func partAt(parts []string, depth int) string {
	if depth < len(parts) {
		return parts[depth]
	}
	return ""
}

// leastDemand is the least of the main resources that need of the pods (sorted largest first)
// ask for together: a domain with less free cannot hold the gang, whichever of its pods make
// it up (a gang with more pods than minMember can be made of its smallest).
func leastDemand(pods []*corev1.Pod, byPod map[types.UID]*shape, need int) int64 {
	var sum int64
	for _, p := range pods[len(pods)-min(need, len(pods)):] {
		sum += byPod[p.UID].main
	}
	return sum
}

// noRoomMessage says why no domain holds the gang, and how close the best came.
func noRoomMessage(group grouper.GroupView, req placeRequest, byPod map[types.UID]*shape, closest int, closestValue string) string {
	where := "the cluster"
	if req.required.Label != "" {
		where = "no " + req.required.Name
	}
	each := ""
	if len(req.pods) > 0 && alike(req.pods, byPod) {
		each = " (" + requestsOf(req.pods[0]) + " each)"
	}
	msg := fmt.Sprintf("%s has room for %d %s of PodGroup %s%s", where, req.need, pods(req.need), group.Key, each)
	if req.required.Label == "" {
		msg = fmt.Sprintf("the cluster has no room for %d %s of PodGroup %s%s", req.need, pods(req.need), group.Key, each)
	}
	if closest >= 0 && req.required.Label != "" {
		msg += fmt.Sprintf("; the closest, %s %s, has room for %d", req.required.Name, closestValue, closest)
	}
	return msg
}

// requestsOf says what a pod requests, as "nvidia.com/gpu 8, cpu 4".
func requestsOf(pod *corev1.Pod) string {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		q := requests[name]
		parts = append(parts, fmt.Sprintf("%s %s", name, q.String()))
	}
	return strings.Join(parts, ", ")
}

// alike says whether all pods are of one shape.
func alike(pods []*corev1.Pod, byPod map[types.UID]*shape) bool {
	for _, p := range pods[1:] {
		if byPod[p.UID] != byPod[pods[0].UID] {
			return false
		}
	}
	return true
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
