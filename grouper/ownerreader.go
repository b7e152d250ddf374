package grouper

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// OwnerReader resolves top owners with one metadata read per owner on the chain: for a command
// that groups one object, where caching every object of each owner kind (as OwnerResolver does
// inside the scheduler) would read far more than it needs.
type OwnerReader struct {
	Client metadata.Interface
	Mapper meta.RESTMapper
	// MaxDepth bounds the chain (10 when zero).
	MaxDepth int
}

// TopOwner implements TopOwners.
func (r OwnerReader) TopOwner(ctx context.Context, obj metav1.Object, apiVersion, kind string) (Owner, error) {
	depth := r.MaxDepth
	if depth == 0 {
		depth = 10
	}
	return topOwner(ctx, r, depth, obj, apiVersion, kind)
}

func (r OwnerReader) get(ctx context.Context, ref metav1.OwnerReference, namespace string) (metav1.Object, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("controller owner %s %s (metadata.ownerReferences, apiVersion %s): %w", ref.Kind, ref.Name, ref.APIVersion, err)
	}
	m, err := r.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return nil, fmt.Errorf("controller owner %s %s (metadata.ownerReferences, apiVersion %s): %w", ref.Kind, ref.Name, ref.APIVersion, err)
	}
	resource := r.Client.Resource(m.Resource)
	var got *metav1.PartialObjectMetadata
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		got, err = resource.Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	} else {
		got, err = resource.Get(ctx, ref.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) || (err == nil && got.UID != ref.UID) {
		return nil, fmt.Errorf("%w: %s %s (uid %s) in namespace %q, named by metadata.ownerReferences", ErrOwnerNotFound, strings.ToLower(ref.Kind), ref.Name, ref.UID, namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("controller owner %s %s (metadata.ownerReferences, apiVersion %s): %w", ref.Kind, ref.Name, ref.APIVersion, err)
	}
	return got, nil
}
