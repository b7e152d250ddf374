package grouper

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// workloadIndex indexes workmap's PodGroups by the UID of the workload that owns them.
const workloadIndex = "workmap.dev/workload"

// workloadOf indexes a PodGroup workmap made under its owners' UIDs.
func workloadOf(obj any) ([]string, error) {
	pg, ok := obj.(*v1alpha1.PodGroup)
	if !ok || pg.Labels[ManagedByLabel] != ManagedByValue {
		return nil, nil
	}
	uids := make([]string, 0, len(pg.OwnerReferences))
	for _, ref := range pg.OwnerReferences {
		uids = append(uids, string(ref.UID))
	}
	return uids, nil
}

// workloadChanged follows a workload whose spec or annotations changed (scaled, its minimum
// changed): every pod of the PodGroups workmap made for it, bound ones too, is grouped again,
// so each PodGroup takes its new minMember at once, whether or not the change brings new pods.
// Objects that own none of workmap's PodGroups (a Job inside a JobSet, a workload without a
// gang) cost one index lookup.
func (c *Controller) workloadChanged(_, obj metav1.Object) {
	groups, err := c.podGroups.GetIndexer().ByIndex(workloadIndex, string(obj.GetUID()))
	if err != nil {
		return
	}
	for _, item := range groups {
		pg, ok := item.(*v1alpha1.PodGroup)
		if !ok {
			continue
		}
		for _, pod := range c.membership.Pods(GroupKey(pg.Namespace, pg.Name), false) {
			c.queue.Add(podKey(pod))
		}
	}
}

// refreshBound records a bound pod's gang as its workload now has it (a new minMember, say)
// and has the PodGroup brought to it; the unbound members are tried again under it. A bound
// pod stays in the gang it was bound in: a decision that puts it elsewhere, or nowhere (the
// owner not read, the gang gone), changes nothing.
func (c *Controller) refreshBound(pod *corev1.Pod, p Placement) {
	if key, _ := c.membership.Decided(pod.UID); p.Desired == nil || key != p.Key {
		return
	}
	if _, changed := c.membership.Join(pod, p, c.clock()); changed {
		c.writer.EnsurePodGroup(p.Key)
		c.membership.WakeGroup(p.Key)
	}
}
