package live

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/grouper"
)

// ControllingWorkload returns the controller of obj when it is of a workload kind (isWorkload
// says which kinds are): obj is then a part of that workload — a RayService's RayCluster, a
// NIMService's LeaderWorkerSet — shown under it, its pods counted there, not a workload of its
// own.
func ControllingWorkload(obj metav1.Object, isWorkload func(schema.GroupKind) bool) (metav1.OwnerReference, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return metav1.OwnerReference{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || !isWorkload(gv.WithKind(ref.Kind).GroupKind()) {
		return metav1.OwnerReference{}, false
	}
	return *ref, true
}

// PartOfAnother says whether obj, a root object of kind gk, belongs to another workload rather
// than being one of its own: when a workload kind (isWorkload) controls it, it is shown under
// that workload; and an object of a kind workmap-scheduler gangs with a built-in grouper (a
// Job, a pod) is part of whatever controls it, of any kind: the scheduler groups its pods with
// the top of their owner chain (a CronJob's Job, a ReplicaSet's pods), not with it.
func PartOfAnother(obj metav1.Object, gk schema.GroupKind, isWorkload func(schema.GroupKind) bool) bool {
	if _, owned := ControllingWorkload(obj, isWorkload); owned {
		return true
	}
	if metav1.GetControllerOfNoCopy(obj) == nil {
		return false
	}
	_, native := nativeKinds()[gk]
	return native
}

// nativeKinds are the kinds the scheduler gangs with a built-in grouper, read once.
var nativeKinds = sync.OnceValue(grouper.DefaultNatives)
