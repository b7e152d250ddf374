package plugin

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// victimUnit is what preemption takes at once: every pod of a gang that holds a node, or one
// pod that is in no gang. Taking part of a gang would leave the rest holding nodes uselessly.
type victimUnit struct {
	// key is the gang's PodGroup (namespace/name), or the lone pod's namespace/name.
	key string
	// priority is the gang's: the lowest of its pods'.
	priority int32
	pods     []evictee
	// gang: the unit is a gang (key names its PodGroup).
	gang bool
}

// evictee is a pod on a node, as the snapshot has it.
type evictee struct {
	pod  fwk.PodInfo
	node fwk.NodeInfo
}

// victimUnits are the units, outside the preemptor's own gang, of a priority lower than the
// preemptor's: a gang's is its least important pod's, and it goes whole. Pods already being
// deleted are left to go.
func (g *Gang) victimUnits(nodes []fwk.NodeInfo, own string, priority int32) []*victimUnit {
	byKey := map[string]*victimUnit{}
	for _, n := range nodes {
		for _, info := range n.GetPods() {
			p := info.GetPod()
			if p.DeletionTimestamp != nil {
				continue
			}
			key, gang := g.unitOf(p)
			if key == own {
				continue
			}
			u := byKey[key]
			if u == nil {
				u = &victimUnit{key: key, priority: corev1helpers.PodPriority(p), gang: gang}
				byKey[key] = u
			}
			u.priority = min(u.priority, corev1helpers.PodPriority(p))
			u.pods = append(u.pods, evictee{pod: info, node: n})
		}
	}
	var out []*victimUnit
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		if byKey[key].priority < priority {
			out = append(out, byKey[key])
		}
	}
	return out
}

// unitOf is the victim unit a pod belongs to: its gang's PodGroup, as workmap grouped it or
// as its PodGroup label says, or the pod alone.
func (g *Gang) unitOf(p *corev1.Pod) (string, bool) {
	if group, ok := g.members.GroupOf(p.UID); ok && group.Key != "" {
		return group.Key, true
	}
	if name := p.Labels[v1alpha1.PodGroupLabel]; name != "" {
		return grouper.GroupKey(p.Namespace, name), true
	}
	return p.Namespace + "/" + p.Name, false
}

// pdbs are the cluster's PodDisruptionBudgets, from the scheduler's informers.
func (g *Gang) pdbs() ([]*policy.PodDisruptionBudget, error) {
	return g.handle.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Lister().List(labels.Everything())
}

// pdbViolations are the units of which taking every pod would take a pod some
// PodDisruptionBudget does not allow to go (its disruptionsAllowed spent by the victims
// before it), and how many such pods there are.
func pdbViolations(units []*victimUnit, pdbs []*policy.PodDisruptionBudget) (sets.Set[*victimUnit], int) {
	allowed := make([]int32, len(pdbs))
	selectors := make([]labels.Selector, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
		if s, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && !s.Empty() {
			selectors[i] = s
		}
	}
	violating := sets.New[*victimUnit]()
	count := 0
	for _, u := range units {
		for _, e := range u.pods {
			pod := e.pod.GetPod()
			violates := false
			for i, pdb := range pdbs {
				if selectors[i] == nil || pdb.Namespace != pod.Namespace || !selectors[i].Matches(labels.Set(pod.Labels)) {
					continue
				}
				if _, disrupted := pdb.Status.DisruptedPods[pod.Name]; disrupted {
					continue // counted by the budget already
				}
				allowed[i]--
				if allowed[i] < 0 {
					violates = true
				}
			}
			if violates {
				violating.Insert(u)
				count++
			}
		}
	}
	return violating, count
}

// nominatedAbove are the pods nominated to nodes (by an earlier preemption) of a priority not
// below the gang's, outside the gang: their room is not the gang's to take, as kube-scheduler's
// filters count it.
func (g *Gang) nominatedAbove(nodes []fwk.NodeInfo, own string, priority int32) []evictee {
	var out []evictee
	for _, n := range nodes {
		for _, info := range g.handle.NominatedPodsForNode(n.Node().Name) {
			p := info.GetPod()
			if key, _ := g.unitOf(p); key != own && corev1helpers.PodPriority(p) >= priority {
				out = append(out, evictee{pod: info, node: n})
			}
		}
	}
	return out
}
