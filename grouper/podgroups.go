package grouper

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Labels on the PodGroups workmap makes.
const (
	// ManagedByLabel marks PodGroups workmap maintains (others are left alone).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is ManagedByLabel's value on workmap's PodGroups.
	ManagedByValue = "workmap"
	// GroupLabel names the definition's gang group a PodGroup comes from.
	GroupLabel = "workmap.dev/group"
)

// DesiredPodGroups returns the PodGroups a workload's gangs become, owned by the workload's
// top owner so they are garbage-collected with it.
func DesiredPodGroups(w *definitions.Workload, owner metav1.OwnerReference) []*v1alpha1.PodGroup {
	out := make([]*v1alpha1.PodGroup, 0, len(w.Groups))
	for _, g := range w.Groups {
		out = append(out, newPodGroup(g.PodGroupName(w.Workload.Name), w.Workload.Namespace, g.Name, owner, v1alpha1.PodGroupSpec{
			MinMember:              g.MinMember,
			MinResources:           g.MinResources,
			ScheduleTimeoutSeconds: g.TimeoutSeconds,
		}))
	}
	return out
}

// newPodGroup is a PodGroup workmap manages, made from one gang group of a workload.
func newPodGroup(name, namespace, group string, owner metav1.OwnerReference, spec v1alpha1.PodGroupSpec) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       namespace,
			Labels:          map[string]string{ManagedByLabel: ManagedByValue, GroupLabel: group},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: spec,
	}
}

// OwnerReference points at a workload's root object; it does not block the owner's deletion.
func OwnerReference(w *definitions.Workload) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: w.Workload.APIVersion, Kind: w.Workload.Kind, Name: w.Workload.Name, UID: types.UID(w.Workload.UID)}
}

// Change says what EnsurePodGroup did.
type Change string

// What EnsurePodGroup can do.
const (
	Created   Change = "Created"
	Updated   Change = "Updated"
	Unchanged Change = "Unchanged"
)

// EnsurePodGroup creates the PodGroup, or brings an existing one's spec, labels and owner
// references to the desired values. Creating a PodGroup that another writer created first
// is success; update conflicts are retried. A PodGroup with the same name that workmap does
// not manage is left alone and reported.
func EnsurePodGroup(ctx context.Context, c client.Client, desired *v1alpha1.PodGroup) (*v1alpha1.PodGroup, Change, error) {
	created := desired.DeepCopy()
	err := c.Create(ctx, created)
	if err == nil {
		return created, Created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, "", fmt.Errorf("creating PodGroup %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	var current v1alpha1.PodGroup
	change := Unchanged
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(desired), &current); err != nil {
			return err
		}
		if current.Labels[ManagedByLabel] != ManagedByValue {
			return fmt.Errorf("PodGroup %s/%s exists and is not managed by workmap: left alone", desired.Namespace, desired.Name)
		}
		if upToDate(&current, desired) {
			change = Unchanged
			return nil
		}
		change = Updated
		current.Spec = desired.Spec
		current.OwnerReferences = desired.OwnerReferences
		for k, v := range desired.Labels {
			if current.Labels == nil {
				current.Labels = map[string]string{}
			}
			current.Labels[k] = v
		}
		return c.Update(ctx, &current)
	})
	if err != nil {
		return nil, "", fmt.Errorf("updating PodGroup %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return &current, change, nil
}

func upToDate(current, desired *v1alpha1.PodGroup) bool {
	if !apiequality.Semantic.DeepEqual(current.Spec, desired.Spec) || !apiequality.Semantic.DeepEqual(current.OwnerReferences, desired.OwnerReferences) {
		return false
	}
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			return false
		}
	}
	return true
}
