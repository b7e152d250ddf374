package grouper

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Object returns a top owner's full object from the cache of its kind, which from the first
// such read holds full objects (managedFields dropped) instead of metadata: a workload costs
// no read of its own, only the kind's one watch. An object the cache does not hold yet at the
// owner's generation (just created or changed) is waited for within Retry, then read from the
// API server. The object returned is the caller's to keep.
func (r *OwnerResolver) Object(ctx context.Context, o Owner) (*unstructured.Unstructured, error) {
	m, store, err := r.store(ctx, o.APIVersion, o.Kind, true)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", o.Kind, o.Namespace, o.Name, err)
	}
	key := m.key(o.Namespace, o.Name)
	cached := func() *unstructured.Unstructured {
		item, ok, _ := store.GetByKey(key)
		u, _ := item.(*unstructured.Unstructured)
		if !ok || u == nil || u.GetUID() != o.UID || u.GetGeneration() < o.Generation {
			return nil
		}
		return u
	}
	found := cached()
	if found == nil {
		_ = wait.ExponentialBackoffWithContext(ctx, r.Retry, func(context.Context) (bool, error) {
			found = cached()
			return found != nil, nil
		})
	}
	if found != nil {
		return found.DeepCopy(), nil
	}
	ri := r.objects.Resource(m.resource)
	var got *unstructured.Unstructured
	if m.namespaced {
		got, err = ri.Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	} else {
		got, err = ri.Get(ctx, o.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) || (err == nil && got.GetUID() != o.UID) {
		return nil, fmt.Errorf("%w: %s %s (uid %s) in namespace %q", ErrOwnerNotFound, o.Kind, o.Name, o.UID, o.Namespace)
	}
	return got, err
}
