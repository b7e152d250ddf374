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
		g.backOff(group.Key)
		return nil, status
	}
	nodes, err := g.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if d := recoveredDomain(g.members.BoundNodes(group.Key), nodes, req.required.Label); d != nil {
		g.members.SetDomain(group.Key, d)
		return d, nil
	}
	d, status := g.choose(ctx, group, req, nodes)
	if status != nil {
		g.backOff(group.Key)
		return nil, status
	}
	g.members.SetDomain(group.Key, d)
	return d, nil
}

// request is what a gang asks of a placement now: its levels resolved, and its members not
// bound yet, of which minMember less those bound must fit.
func (g *Gang) request(group grouper.GroupView) (placeRequest, *fwk.Status) {
	var req placeRequest
	for asked, into := range map[string]*level{group.Topology.Required: &req.required, group.Topology.Preferred: &req.preferred} {
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
	return req, nil
}

// recoveredDomain is the domain of the level's label that holds the most of a gang's bound
// members (nil: none bound, or no required level). A gang with only a preferred level that
// has members bound is placed: its later pods go anywhere.
func recoveredDomain(bound map[types.UID]string, nodes []fwk.NodeInfo, label string) *grouper.Domain {
	if len(bound) == 0 {
		return nil
	}
	if label == "" {
		return &grouper.Domain{}
	}
	labels := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		labels[n.Node().Name] = n.Node().Labels
	}
	count := map[string]int{}
	for _, node := range bound {
		if v, ok := labels[node][label]; ok {
			count[v]++
		}
	}
	best := ""
	for _, v := range sortedKeys(count) {
		if best == "" || count[v] > count[best] {
			best = v
		}
	}
	if best == "" {
		return nil // its members are on nodes outside every domain: choose anew
	}
	return &grouper.Domain{Label: label, Value: best}
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
	var demand int64
	for _, p := range req.pods[:min(req.need, len(req.pods))] {
		demand += byPod[p.UID].main
	}

	candidates := map[string][]fwk.NodeInfo{"": nodes}
	if req.required.Label != "" {
		candidates = domains(nodes, req.required.Label)
		if len(candidates) == 0 {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s needs one %s, and no node has the label %s", group.Key, req.required.Name, req.required.Label))
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
		plan, used := g.pack(ctx, candidates[v], req, byPod, shapes, resources)
		if len(plan) >= req.need && (found == nil || used < found.used) {
			found = &placement{value: v, plan: plan, free: freeOf[v], used: used}
		}
	}
	if found == nil {
		// How close each domain comes, to say so: the gang is backed off, so this runs once
		// per backoff.
		closest, closestValue := -1, ""
		for _, v := range order {
			if plan := g.placer.simulate(ctx, candidates[v], req.pods, byPod, shapes, 0, resources); len(plan) > closest {
				closest, closestValue = len(plan), v
			}
		}
		return nil, fwk.NewStatus(fwk.Unschedulable, noRoomMessage(group, req, byPod, closest, closestValue))
	}
	d := &grouper.Domain{Label: req.required.Label, Value: found.value, Planned: found.plan}
	return d, nil
}

// pack places the gang in a domain's nodes: in one domain of the preferred level if one holds
// it (the tightest), else over the fewest, filling the roomiest first. Without a preferred
// level, over the domain's nodes, tightest first. It returns the plan and how many domains of
// the preferred level it spans.
func (g *Gang) pack(ctx context.Context, nodes []fwk.NodeInfo, req placeRequest, byPod map[types.UID]*shape, shapes []*shape, resources []corev1.ResourceName) (map[types.UID]string, int) {
	tightestFirst := func(ns []fwk.NodeInfo) []fwk.NodeInfo {
		out := slices.Clone(ns)
		slices.SortStableFunc(out, func(a, b fwk.NodeInfo) int { return cmpInt64(free(a, resources), free(b, resources)) })
		return out
	}
	if req.preferred.Label == "" {
		return g.placer.simulate(ctx, tightestFirst(nodes), req.pods, byPod, shapes, req.need, resources), 0
	}
	parts := domains(nodes, req.preferred.Label)
	order := sortedKeys(parts)
	freeOf := map[string]int64{}
	for _, v := range order {
		for _, n := range parts[v] {
			freeOf[v] += free(n, resources)
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmpInt64(freeOf[a], freeOf[b]) })
	var demand int64
	for _, p := range req.pods[:min(req.need, len(req.pods))] {
		demand += byPod[p.UID].main
	}
	for _, v := range order {
		if freeOf[v] < demand {
			continue
		}
		if plan := g.placer.simulate(ctx, tightestFirst(parts[v]), req.pods, byPod, shapes, req.need, resources); len(plan) >= req.need {
			return plan, 1
		}
	}
	// Over several: the roomiest first, each one's nodes tightest first; nodes without the
	// preferred level's label last.
	var all []fwk.NodeInfo
	for _, v := range slices.Backward(order) {
		all = append(all, tightestFirst(parts[v])...)
	}
	for _, n := range nodes {
		if _, ok := n.Node().Labels[req.preferred.Label]; !ok {
			all = append(all, n)
		}
	}
	plan := g.placer.simulate(ctx, all, req.pods, byPod, shapes, req.need, resources)
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
	msg := fmt.Sprintf("%s has room for %d pods of PodGroup %s%s", where, req.need, group.Key, each)
	if req.required.Label == "" {
		msg = fmt.Sprintf("the cluster has no room for %d pods of PodGroup %s%s", req.need, group.Key, each)
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
