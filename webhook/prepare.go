package webhook

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"
)

// ownerKinds are the owner kinds whose caches are filled before the webhook serves: the usual
// direct owners of pods, and every root and child kind of the definitions.
func ownerKinds(reg *definitions.Registry) []schema.GroupVersionKind {
	kinds := []schema.GroupVersionKind{
		{Group: "batch", Version: "v1", Kind: "Job"},
		{Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
	}
	for _, s := range reg.Sources() {
		w := s.Spec.Workload
		if len(w.Versions) > 0 {
			kinds = append(kinds, schema.GroupVersionKind{Group: w.Group, Version: w.Versions[0], Kind: w.Kind})
		}
		for _, c := range s.Spec.Children {
			kinds = append(kinds, schema.GroupVersionKind{Group: c.Group, Version: c.Version, Kind: c.Kind})
		}
	}
	return kinds
}

// PrepareOwners fills the owner caches of the kinds pods of known workloads are owned by.
func PrepareOwners(ctx context.Context, r *grouper.OwnerResolver, reg *definitions.Registry) error {
	var errs []error
	seen := map[schema.GroupVersionKind]bool{}
	for _, gvk := range ownerKinds(reg) {
		if seen[gvk] {
			continue
		}
		seen[gvk] = true
		apiVersion, kind := gvk.ToAPIVersionAndKind()
		if err := r.Prepare(ctx, apiVersion, kind); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
