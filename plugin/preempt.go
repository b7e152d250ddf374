package plugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// preemption is a set of victims found to let a gang fit whole, and where its pods go then;
// violations counts the victims a PodDisruptionBudget does not allow to go.
type preemption struct {
	victims    []*victimUnit
	plan       map[types.UID]string
	domain     string // label=value of the required level's domain ("": none)
	violations int
}

// victimPods counts the pods of a preemption's victims.
func (p *preemption) victimPods() int {
	n := 0
	for _, u := range p.victims {
		n += len(u.pods)
	}
	return n
}

// better orders preemptions as kube-scheduler orders its candidates: the fewest
// PodDisruptionBudget violations, then the lowest priority taken, then the fewest pods, then
// the fewest gangs.
func (p *preemption) better(o *preemption) bool {
	if o == nil {
		return true
	}
	if p.violations != o.violations {
		return p.violations < o.violations
	}
	if c := cmp.Compare(highestPriority(p.victims), highestPriority(o.victims)); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(p.victimPods(), o.victimPods()); c != 0 {
		return c < 0
	}
	return len(p.victims) < len(o.victims)
}

// highestPriority is the priority of the most important of the units.
func highestPriority(units []*victimUnit) int32 {
	var out int32
	for i, u := range units {
		if i == 0 || u.priority > out {
			out = u.priority
		}
	}
	return out
}

// preempt looks for lower-priority pods whose removal lets the whole of a gang that fits
// nowhere fit, as the profile's filters say: a gang is never preempted for in vain. A victim
// in a gang takes its whole gang; of the sets that work, the one of the lowest priority, then
// the fewest pods, is taken. Victims are marked DisruptionTarget and deleted, as
// kube-scheduler's own preemption does; the gang's pods are nominated to the nodes planned for
// them, so that no lower-priority pod takes the room meanwhile. It returns nil when the gang
// may not preempt or no set of victims makes it fit.
func (g *Gang) preempt(ctx context.Context, group grouper.GroupView, pod *corev1.Pod) *fwk.PostFilterResult {
	if g.placer.runner == nil || (pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever) {
		return nil
	}
	start := time.Now()
	best, pods, result := g.lookForVictims(ctx, group, pod)
	if result == "" {
		return nil
	}
	g.metrics.Preemptions.WithLabelValues(result).Inc()
	g.metrics.EvaluationSeconds.Observe(time.Since(start).Seconds())
	if best == nil {
		return nil
	}
	g.metrics.VictimPods.Observe(float64(best.victimPods()))
	g.evict(ctx, pod, group, best)
	g.preemptions.record(group.Key, best, func(key string) bool { _, ok := g.members.Group(key); return ok })
	logger := klog.FromContext(ctx)
	for _, p := range pods {
		if node, ok := best.plan[p.UID]; ok && p.UID != pod.UID {
			if info, err := framework.NewPodInfo(p); err == nil {
				g.handle.AddNominatedPod(logger, info, &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: node})
			}
		}
	}
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: best.plan[pod.UID]}}
}

// lookForVictims finds the victims that let a gang fit (nil: none do) and the gang's pods it
// places, with the look's result (workmap_preemptions_total's label; "": the gang had nothing
// to look for, as when its bound members are already enough).
func (g *Gang) lookForVictims(ctx context.Context, group grouper.GroupView, pod *corev1.Pod) (*preemption, []*corev1.Pod, string) {
	req, status := g.request(group)
	if status != nil {
		return nil, nil, ""
	}
	// The members holding a node keep it; the rest must fit beside them.
	assigned := sets.New(g.members.Reserved(group.Key)...)
	req.pods = slices.DeleteFunc(req.pods, func(p *corev1.Pod) bool { return assigned.Has(p.UID) })
	req.need = max(int(group.Spec.MinMember)-group.Assigned, 0)
	if req.need == 0 || len(req.pods) < req.need {
		return nil, nil, ""
	}
	priority := corev1helpers.PodPriority(pod)
	nodes, err := g.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, nil, ""
	}
	req.nominated = g.nominatedAbove(nodes, group.Key, priority)
	units := g.victimUnits(nodes, group.Key, priority)
	if len(units) == 0 {
		return nil, nil, preemptionNoVictims
	}
	resources := mainResources(req.pods)
	shapes, byPod, status := g.placer.shapes(ctx, req.pods, resources)
	if status != nil {
		return nil, nil, ""
	}
	largestFirst(req.pods, byPod)

	candidates := map[string][]fwk.NodeInfo{"": nodes}
	if req.required.Label != "" {
		candidates = domains(nodes, req.required.Label)
		if d := group.Domain; d != nil && d.Label == req.required.Label {
			candidates = map[string][]fwk.NodeInfo{d.Value: candidates[d.Value]}
		}
	}
	pdbs, err := g.pdbs()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing PodDisruptionBudgets for a gang's preemption: they are not weighed", "podGroup", group.Key)
	}
	var best *preemption
	for _, v := range sortedKeys(candidates) {
		if p := g.victimsIn(ctx, candidates[v], units, pdbs, req, shapes, byPod, resources); p != nil && p.better(best) {
			if v != "" {
				p.domain = req.required.Label + "=" + v
			}
			best = p
		}
	}
	if best == nil {
		return nil, req.pods, preemptionWouldNotFit
	}
	return best, req.pods, preemptionPreempted
}

// victimsIn finds, among nodes, the victims whose removal lets the gang fit: every unit with
// a pod there must make it fit when all are gone, and as many of its pods as then fit (a gang
// with more pods than minMember) are what it preempts for. The units are ordered from the
// first to spare to the last — first those a PodDisruptionBudget does not allow to go, then
// the others, each kind the most important (highest priority, then largest) first — and the
// fewest of the last that let as many pods fit are taken; then each of those is spared in
// turn while as many still fit without it.
func (g *Gang) victimsIn(ctx context.Context, nodes []fwk.NodeInfo, units []*victimUnit, pdbs []*policy.PodDisruptionBudget, req placeRequest, shapes []*shape, byPod map[types.UID]*shape, resources []corev1.ResourceName) *preemption {
	in := sets.New[string]()
	for _, n := range nodes {
		in.Insert(n.Node().Name)
	}
	var victims []*victimUnit
	for _, u := range units {
		if slices.ContainsFunc(u.pods, func(e evictee) bool { return in.Has(e.node.Node().Name) }) {
			victims = append(victims, u)
		}
	}
	// A node too full for the smallest pod of the gang, with none of the victims on it, is
	// left out of the placements: most of a full cluster is.
	index := make(map[fwk.NodeInfo]int, len(nodes))
	roomy := make([]bool, len(nodes))
	smallest := slices.MinFunc(shapes, func(a, b *shape) int { return cmp.Compare(a.main, b.main) }).main
	for i, n := range nodes {
		index[n] = i
		roomy[i] = smallest == 0 || free(n, resources) >= smallest
	}
	fits := func(victims []*victimUnit, want int) map[types.UID]string {
		r := req
		hosts := slices.Clone(roomy)
		for _, u := range victims {
			r.evicted = append(r.evicted, u.pods...)
			for _, e := range u.pods {
				if i, ok := index[e.node]; ok {
					hosts[i] = true
				}
			}
		}
		var candidates []fwk.NodeInfo
		for i, n := range nodes {
			if hosts[i] {
				candidates = append(candidates, n)
			}
		}
		plan, _ := g.pack(ctx, candidates, r, byPod, shapes, resources, req.need)
		if len(plan) < want {
			return nil
		}
		return plan
	}
	plan := fits(victims, req.need)
	if len(victims) == 0 || plan == nil {
		return nil
	}
	target := len(plan)
	violating, _ := pdbViolations(victims, pdbs)
	order := slices.Clone(victims)
	slices.SortStableFunc(order, func(a, b *victimUnit) int {
		if va, vb := violating.Has(a), violating.Has(b); va != vb {
			if va {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.priority, a.priority); c != 0 {
			return c
		}
		return cmp.Compare(len(b.pods), len(a.pods))
	})
	// The fewest of the least important units that let as many pods fit (more victims never
	// fit fewer pods, so a binary search finds it), then each of them spared in turn: a few
	// placements of the gang where sparing each of every unit would take one per unit.
	// The search's plans are kept by how many units they take, so that the one chosen is not
	// packed again.
	plans := map[int]map[types.UID]string{len(order): plan}
	taken := sort.Search(len(order), func(n int) bool {
		if n == 0 {
			return false
		}
		p := fits(order[len(order)-n:], target)
		plans[n] = p
		return p != nil
	})
	victims, plan = slices.Clone(order[len(order)-taken:]), plans[taken]
	for _, spared := range slices.Clone(victims) {
		rest := slices.DeleteFunc(slices.Clone(victims), func(u *victimUnit) bool { return u == spared })
		if p := fits(rest, target); p != nil {
			victims, plan = rest, p
		}
	}
	_, violations := pdbViolations(victims, pdbs)
	return &preemption{victims: victims, plan: plan, violations: violations}
}

// evict takes a preemption's victims: a victim waiting at Permit is rejected; the others get
// the DisruptionTarget condition and are deleted, off the scheduling cycle. Each victim, and
// the preemptor, gets an event saying who preempted whom.
func (g *Gang) evict(ctx context.Context, preemptor *corev1.Pod, group grouper.GroupView, p *preemption) {
	logger := klog.FromContext(ctx)
	var names []string
	for _, u := range p.victims {
		names = append(names, fmt.Sprintf("%s (%d %s, priority %d)", u.key, len(u.pods), pods(len(u.pods)), u.priority))
	}
	where := ""
	if p.domain != "" {
		where = " in " + p.domain
	}
	recorder := g.handle.EventRecorder()
	recorder.Eventf(preemptor, nil, corev1.EventTypeNormal, "Preempting", "Preempting",
		"PodGroup %s (priority %d) preempts %s%s to fit whole", group.Key, corev1helpers.PodPriority(preemptor), strings.Join(names, ", "), where)
	for _, u := range p.victims {
		message := fmt.Sprintf("Preempted by PodGroup %s (priority %d), with the %d %s of %s", group.Key, corev1helpers.PodPriority(preemptor), len(u.pods), pods(len(u.pods)), u.key)
		if u.gang {
			recorder.Eventf(podGroupRef(u.key), podGroupRef(group.Key), corev1.EventTypeNormal, grouper.PreemptedReason, "Preempting",
				"Preempted by PodGroup %s (priority %d) to fit it whole%s: %d %s on %s deleted", group.Key, corev1helpers.PodPriority(preemptor), where, len(u.pods), pods(len(u.pods)), nodesOf(u))
		}
		for _, e := range u.pods {
			victim := e.pod.GetPod()
			recorder.Eventf(victim, preemptor, corev1.EventTypeNormal, "Preempted", "Preempting", message)
			if wp := g.handle.GetWaitingPod(victim.UID); wp != nil {
				wp.Reject(Name, message)
				continue
			}
			go func() {
				if err := g.markAndDelete(context.WithoutCancel(ctx), victim, message); err != nil {
					logger.Error(err, "Could not preempt a pod", "pod", klog.KObj(victim), "preemptor", klog.KObj(preemptor))
				}
			}()
		}
	}
}

// markAndDelete gives a victim the DisruptionTarget condition, then deletes it.
func (g *Gang) markAndDelete(ctx context.Context, victim *corev1.Pod, message string) error {
	condition := &corev1.PodCondition{
		Type:               corev1.DisruptionTarget,
		ObservedGeneration: apipod.CalculatePodConditionObservedGeneration(&victim.Status, victim.Generation, corev1.DisruptionTarget),
		Status:             corev1.ConditionTrue,
		Reason:             corev1.PodReasonPreemptionByScheduler,
		Message:            message,
	}
	status := victim.Status.DeepCopy()
	if apipod.UpdatePodCondition(status, condition) {
		if err := util.PatchPodStatus(ctx, g.handle.ClientSet(), victim.Name, victim.Namespace, &victim.Status, status); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	if err := util.DeletePod(ctx, g.handle.ClientSet(), victim); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// podGroupRef is a PodGroup by key (namespace/name), for an event about it.
func podGroupRef(key string) *v1alpha1.PodGroup {
	namespace, name, _ := strings.Cut(key, "/")
	return &v1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
	}
}

// nodesOf names the nodes a victim unit's pods are on, sorted: "gpu-1, gpu-2".
func nodesOf(u *victimUnit) string {
	nodes := sets.New[string]()
	for _, e := range u.pods {
		nodes.Insert(e.node.Node().Name)
	}
	return strings.Join(sets.List(nodes), ", ")
}
