package webhook

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/workmap/workmap/grouper"
)

// followTimeout bounds following one workload's change (its object may have to be read).
const followTimeout = 10 * time.Second

// WorkloadChanged follows a workload whose spec or annotations changed (scaled, its minimum
// changed; the owner caches tell of it): each native PodGroup workmap made for it takes its
// gang's new minMember, whether or not the change brings new pods, where the served version
// lets minCount change. A workload that owns no native PodGroup costs one index lookup.
func (m *Mutator) WorkloadChanged(ctx context.Context, obj metav1.Object) {
	if m.Native == nil || !m.Native.MinCountMutable() {
		return
	}
	groups := m.Native.OwnedBy(obj.GetUID())
	if len(groups) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, followTimeout)
	defer cancel()
	log := klog.FromContext(ctx)
	for _, ref := range groups[0].GetOwnerReferences() {
		if ref.UID != obj.GetUID() {
			continue
		}
		owner := grouper.Owner{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion(), Generation: obj.GetGeneration(), Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}
		gangs, err := m.Hub.GangsOf(ctx, owner)
		if err != nil {
			log.Error(err, "the native PodGroups of a changed workload keep their minCount", "workload", klog.KObj(obj), "kind", ref.Kind)
			return
		}
		minMember := map[string]int32{}
		for _, pg := range gangs.PodGroups {
			minMember[pg.Name] = pg.Spec.MinMember
		}
		for _, pg := range groups {
			want, ok := minMember[pg.GetName()]
			if !ok {
				continue // a gang the workload no longer has: its pods go with it
			}
			if err := m.Native.FollowMinMember(ctx, pg, want, true); err != nil {
				log.Error(err, "the native PodGroup keeps its minCount", "workload", klog.KObj(obj))
			}
		}
		return
	}
}
