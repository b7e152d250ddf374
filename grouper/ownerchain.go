package grouper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Errors the resolver reports. On a missing or unreadable owner the chain stops at the last
// owner found (the pod itself when it is its first owner); on a cycle or a chain longer than
// MaxDepth the pod counts as its own workload, its ownership being broken.
var (
	ErrOwnerNotFound = errors.New("owner not found")
	ErrOwnerCycle    = errors.New("ownership cycle")
	// ErrOwnerChainTooLong: more controller owners lie above the pod than MaxDepth.
	ErrOwnerChainTooLong = errors.New("owner chain too long")
	// ErrOwnerInvalid: a controller owner reference misses its kind, name or UID, or its
	// apiVersion does not parse.
	ErrOwnerInvalid = errors.New("invalid owner reference")
	// ErrOwnerUnreadable: the cache of the owner's kind could not be filled (its list is
	// forbidden, or the kind is no longer served).
	ErrOwnerUnreadable = errors.New("owner kind unreadable")
)

// ownerGetter reads the metadata of an object's controller owner.
type ownerGetter interface {
	get(ctx context.Context, ref metav1.OwnerReference, namespace string) (metav1.Object, error)
}

// topOwner walks the controller owner references of obj up to the top owner.
func topOwner(ctx context.Context, owners ownerGetter, maxDepth int, obj metav1.Object, apiVersion, kind string) (Owner, error) {
	top := Owner{APIVersion: apiVersion, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(),
		ResourceVersion: obj.GetResourceVersion(), Generation: obj.GetGeneration(), Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}
	top.Skip = obj.GetAnnotations()[SkipAnnotation] == "true"
	self := top
	var seenBuf [8]types.UID // chains are short: no map per pod
	seen := append(seenBuf[:0], obj.GetUID())
	current := obj
	for {
		ref := metav1.GetControllerOfNoCopy(current)
		if ref == nil {
			return top, nil
		}
		if err := checkOwnerRef(ref); err != nil {
			return top, fmt.Errorf("%s %s: %w", top.Kind, objectName(top.Namespace, top.Name), err)
		}
		// A broken ownership: the pod is its own workload (but still skipped when any owner
		// read asks for it).
		if slices.Contains(seen, ref.UID) {
			self.Skip = top.Skip
			return self, fmt.Errorf("%w: the controller owner of %s %s (metadata.ownerReferences) is %s %s, already on the chain above %s %s",
				ErrOwnerCycle, top.Kind, objectName(top.Namespace, top.Name), ref.Kind, ref.Name, kind, objectName(self.Namespace, self.Name))
		}
		if top.Depth >= maxDepth {
			self.Skip = top.Skip
			return self, fmt.Errorf("%w: more than %d controller owners above %s %s; %s %s is owned by %s %s (metadata.ownerReferences)",
				ErrOwnerChainTooLong, maxDepth, kind, objectName(self.Namespace, self.Name), top.Kind, objectName(top.Namespace, top.Name), ref.Kind, ref.Name)
		}
		seen = append(seen, ref.UID)
		owner, err := owners.get(ctx, *ref, current.GetNamespace())
		if err != nil {
			return top, err
		}
		top = Owner{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: owner.GetNamespace(), Name: owner.GetName(), UID: owner.GetUID(),
			ResourceVersion: owner.GetResourceVersion(), Generation: owner.GetGeneration(), Labels: owner.GetLabels(), Annotations: owner.GetAnnotations(), Depth: top.Depth + 1,
			Skip: top.Skip || owner.GetAnnotations()[SkipAnnotation] == "true"}
		current = owner
	}
}

// checkOwnerRef reports what makes a controller owner reference unusable: a missing kind,
// name or UID, an apiVersion that does not parse.
func checkOwnerRef(ref *metav1.OwnerReference) error {
	if ref.APIVersion != "" && ref.Kind != "" && ref.Name != "" && ref.UID != "" && strings.Count(ref.APIVersion, "/") <= 1 {
		return nil // every pod's decision walks here: the usual reference costs no more
	}
	var missing []string
	for _, f := range []struct{ name, value string }{{"apiVersion", ref.APIVersion}, {"kind", ref.Kind}, {"name", ref.Name}, {"uid", string(ref.UID)}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: its controller owner reference %s %q has no %s (metadata.ownerReferences)", ErrOwnerInvalid, ref.Kind, ref.Name, strings.Join(missing, ", "))
	}
	if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		return fmt.Errorf("%w: its controller owner reference %s %s has apiVersion %q (metadata.ownerReferences): %v", ErrOwnerInvalid, ref.Kind, ref.Name, ref.APIVersion, err)
	}
	return nil
}

// objectName is namespace/name, or name for a cluster-scoped object.
func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
