package webhook

import (
	"context"
	"errors"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"
)

// ownerKind is an owner kind whose cache is filled ahead, with full objects when a grouper
// reads its objects (a batch/v1 Job's parallelism, a definition's gang hints).
type ownerKind struct {
	gvk  schema.GroupVersionKind
	full bool
}

// ownerKinds are the owner kinds whose caches are filled before the webhook serves: the usual
// direct owners of pods, and every root and child kind of the definitions.
func ownerKinds(reg *definitions.Registry) []ownerKind {
	kinds := []ownerKind{
		{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, true},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, false},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, false},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, false},
	}
	for _, s := range reg.Sources() {
		w := s.Spec.Workload
		if len(w.Versions) > 0 {
			kinds = append(kinds, ownerKind{schema.GroupVersionKind{Group: w.Group, Version: w.Versions[0], Kind: w.Kind}, s.Spec.Gang != nil})
		}
		for _, c := range s.Spec.Children {
			kinds = append(kinds, ownerKind{schema.GroupVersionKind{Group: c.Group, Version: c.Version, Kind: c.Kind}, false})
		}
	}
	return kinds
}

// MayWatch says whether the webhook may list and watch a kind: a definition's child kinds
// include kinds that own no pods (Services, ConfigMaps), which least-privilege RBAC does not
// let it read, and whose cache would never fill.
type MayWatch func(ctx context.Context, gvk schema.GroupVersionKind) bool

// PrepareOwners fills the owner caches of the kinds pods of known workloads are owned by, of
// those it may watch.
func PrepareOwners(ctx context.Context, r *grouper.OwnerResolver, reg *definitions.Registry, may MayWatch) error {
	var errs []error
	seen := map[ownerKind]bool{}
	for _, k := range ownerKinds(reg) {
		if seen[k] {
			continue
		}
		seen[k] = true
		if !may(ctx, k.gvk) {
			continue
		}
		apiVersion, kind := k.gvk.ToAPIVersionAndKind()
		if err := r.Prepare(ctx, apiVersion, kind, k.full); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// AccessReviews is a MayWatch asking the API server (SelfSubjectAccessReviews) whether the
// process may list and watch each kind's resource; a kind the cluster does not serve is not
// watched.
func AccessReviews(kube kubernetes.Interface, mapper meta.RESTMapper) MayWatch {
	return func(ctx context.Context, gvk schema.GroupVersionKind) bool {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return false
		}
		for _, verb := range []string{"list", "watch"} {
			review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: verb, Group: m.Resource.Group, Version: m.Resource.Version, Resource: m.Resource.Resource,
				}},
			}, metav1.CreateOptions{})
			if err != nil || !review.Status.Allowed {
				return false
			}
		}
		return true
	}
}
