package live

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
