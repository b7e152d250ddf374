package plugin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	schedpreemption "k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// podPreemption is kube-scheduler's own preemption (DefaultPreemption, which the profile
// leaves out) for the pods that do not preempt as a gang: pods in no gang, and members beyond
// minMember of a gang already admitted. A victim in a gang takes its whole gang with it (a
// gang is as important as its least important pod). A member of a gang not yet admitted never
// preempts alone: its gang preempts as a whole, or not at all.
type podPreemption struct {
	*defaultpreemption.DefaultPreemption
	gang      *Gang
	evaluator *schedpreemption.Evaluator
}

// newPodPreemption builds kube-scheduler's preemption on the handle, with the default
// arguments (10 % of the nodes, at least 100, are tried as candidates).
func newPodPreemption(ctx context.Context, h fwk.Handle, g *Gang) (*podPreemption, error) {
	args := &config.DefaultPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100}
	dp, err := defaultpreemption.New(ctx, args, h, feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, err
	}
	p := &podPreemption{DefaultPreemption: dp, gang: g}
	p.evaluator = schedpreemption.NewEvaluator(Name, h, p, dp.Executor)
	return p, nil
}

// postFilter preempts for a pod as kube-scheduler would, with whole gangs as victims.
func (p *podPreemption) postFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	metrics.PreemptionAttempts.Inc()
	result, status := p.evaluator.Preempt(ctx, state, pod, statuses)
	if msg := status.Message(); msg != "" {
		return result, fwk.NewStatus(status.Code(), "preemption: "+msg)
	}
	return result, status
}

// running says whether a pod's preemption is still under way (its victims being deleted):
// the pod is not tried again until it is over.
func (p *podPreemption) running(uid types.UID) bool {
	return p.Executor.IsPodRunningPreemption(uid)
}

// PodEligibleToPreemptOthers keeps a member of a gang not yet admitted from preempting alone.
func (p *podPreemption) PodEligibleToPreemptOthers(ctx context.Context, pod *corev1.Pod, nominatedNodeStatus *fwk.Status) (bool, string) {
	if group, ok := p.gang.members.GroupOf(pod.UID); ok && !(group.Known && group.Assigned >= int(group.Spec.MinMember)) {
		return false, fmt.Sprintf("PodGroup %s preempts as a whole or not at all", group.Key)
	}
	return p.DefaultPreemption.PodEligibleToPreemptOthers(ctx, pod, nominatedNodeStatus)
}

// SelectVictimsOnNode selects victims as kube-scheduler does, then adds the other pods of
// each victim's gang, wherever they run.
func (p *podPreemption) SelectVictimsOnNode(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo, pdbs []*policy.PodDisruptionBudget) ([]*corev1.Pod, int, *fwk.Status) {
	victims, violations, status := p.DefaultPreemption.SelectVictimsOnNode(ctx, state, pod, nodeInfo, pdbs)
	if !status.IsSuccess() {
		return victims, violations, status
	}
	taken := sets.New[types.UID]()
	for _, v := range victims {
		taken.Insert(v.UID)
	}
	out := victims
	for _, v := range victims {
		key, inGang := p.gang.unitOf(v)
		if !inGang {
			continue
		}
		for _, other := range p.gangPods(key, v) {
			if !taken.Has(other.UID) {
				taken.Insert(other.UID)
				out = append(out, other)
			}
		}
	}
	return out, violations, status
}

// gangPods are the pods that hold a node of the gang (key) a victim is in: for a gang
// workmap-scheduler groups, its members bound or reserved; for another's, the bound pods of the
// victim's namespace its PodGroup label names.
func (p *podPreemption) gangPods(key string, victim *corev1.Pod) []*corev1.Pod {
	if _, ok := p.gang.members.Group(key); ok {
		reserved := sets.New(p.gang.members.Reserved(key)...)
		var out []*corev1.Pod
		for _, pod := range p.gang.members.Pods(key, false) {
			if pod.Spec.NodeName != "" || reserved.Has(pod.UID) {
				out = append(out, pod)
			}
		}
		return out
	}
	selector := labels.SelectorFromSet(labels.Set{v1alpha1.PodGroupLabel: victim.Labels[v1alpha1.PodGroupLabel]})
	pods, err := p.gang.handle.SharedInformerFactory().Core().V1().Pods().Lister().Pods(victim.Namespace).List(selector)
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, pod := range pods {
		if pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil {
			out = append(out, pod)
		}
	}
	return out
}
