package grouper

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// PreemptedReason is the reason of the event workmap-scheduler writes on a victim gang's
// PodGroup when it preempts the gang; the event relates the preemptor.
const PreemptedReason = "Preempted"

// Labels on the PodGroups workmap makes.
const (
	// ManagedByLabel marks PodGroups workmap maintains (others are left alone).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is ManagedByLabel's value on workmap's PodGroups.
	ManagedByValue = "workmap"
	// GroupLabel names the definition's gang group a PodGroup comes from.
	GroupLabel = "workmap.dev/group"
)

// PodGroupsOf returns the PodGroups the gangs of the workload named name in namespace become,
// owned by its top owner so they are garbage-collected with it: the one place workmap makes
// PodGroups from gangs.
func PodGroupsOf(namespace, name string, groups []definitions.Group, owner metav1.OwnerReference) []*v1alpha1.PodGroup {
	out := make([]*v1alpha1.PodGroup, 0, len(groups))
	for _, g := range groups {
		pg := newPodGroup(g.PodGroupName(name), namespace, g.Name, owner, v1alpha1.PodGroupSpec{
			MinMember:              g.MinMember,
			MinResources:           g.MinResources,
			ScheduleTimeoutSeconds: g.TimeoutSeconds,
		})
		pg.Annotations = topologyAnnotations(g.Topology)
		if g.LeaderFirst {
			if pg.Annotations == nil {
				pg.Annotations = map[string]string{}
			}
			pg.Annotations[LeaderFirstAnnotation] = "true"
		}
		out = append(out, pg)
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

// DesiredPodGroups returns the PodGroups an expanded workload's gangs become.
func DesiredPodGroups(w *definitions.Workload, owner metav1.OwnerReference) []*v1alpha1.PodGroup {
	return PodGroupsOf(w.Workload.Namespace, w.Workload.Name, w.Groups, owner)
}

// OwnerReference points at a workload's root object; it does not block the owner's deletion.
func OwnerReference(w *definitions.Workload) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: w.Workload.APIVersion, Kind: w.Workload.Kind, Name: w.Workload.Name, UID: types.UID(w.Workload.UID)}
}

// PodGroupClient reads and writes scheduling.x-k8s.io PodGroups through a dynamic client
// (they are custom resources: the scheduler's typed clientset does not reach them).
type PodGroupClient struct {
	Resource dynamic.NamespaceableResourceInterface
}

// NewPodGroupClient returns a PodGroup client on a dynamic client.
func NewPodGroupClient(c dynamic.Interface) PodGroupClient {
	return PodGroupClient{Resource: c.Resource(v1alpha1.Resource)}
}

// Get reads a PodGroup.
func (c PodGroupClient) Get(ctx context.Context, namespace, name string) (*v1alpha1.PodGroup, error) {
	u, err := c.Resource.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return FromUnstructured(u)
}

// Create creates a PodGroup and returns it as created.
func (c PodGroupClient) Create(ctx context.Context, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	return c.write(ctx, pg, func(r dynamic.ResourceInterface, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return r.Create(ctx, u, metav1.CreateOptions{})
	})
}

// Update writes a PodGroup's metadata and spec (optimistic concurrency on its resource version).
func (c PodGroupClient) Update(ctx context.Context, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	return c.write(ctx, pg, func(r dynamic.ResourceInterface, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return r.Update(ctx, u, metav1.UpdateOptions{})
	})
}

// UpdateStatus writes a PodGroup's status (optimistic concurrency on its resource version).
func (c PodGroupClient) UpdateStatus(ctx context.Context, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	return c.write(ctx, pg, func(r dynamic.ResourceInterface, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return r.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	})
}

func (c PodGroupClient) write(_ context.Context, pg *v1alpha1.PodGroup, do func(dynamic.ResourceInterface, *unstructured.Unstructured) (*unstructured.Unstructured, error)) (*v1alpha1.PodGroup, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	u.SetKind("PodGroup")
	out, err := do(c.Resource.Namespace(pg.Namespace), u)
	if err != nil {
		return nil, err
	}
	return FromUnstructured(out)
}

// FromUnstructured converts a PodGroup read through a dynamic client or informer.
func FromUnstructured(u *unstructured.Unstructured) (*v1alpha1.PodGroup, error) {
	pg := &v1alpha1.PodGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pg); err != nil {
		return nil, fmt.Errorf("PodGroup %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return pg, nil
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
// references to the desired values. current is the cached copy (nil: not cached, so it is
// created). Creating a PodGroup that another writer created first is success; update
// conflicts are retried. A PodGroup with the same name that workmap does not manage is left
// alone and reported.
func EnsurePodGroup(ctx context.Context, c PodGroupClient, desired, current *v1alpha1.PodGroup) (*v1alpha1.PodGroup, Change, error) {
	if current == nil {
		created, err := c.Create(ctx, desired.DeepCopy())
		if err == nil {
			return created, Created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, "", fmt.Errorf("creating PodGroup %s/%s: %w", desired.Namespace, desired.Name, err)
		}
	}
	change := Unchanged
	var result *v1alpha1.PodGroup
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if current == nil {
			var err error
			if current, err = c.Get(ctx, desired.Namespace, desired.Name); err != nil {
				return err
			}
		}
		cur := current
		current = nil // a retry reads it again
		if cur.Labels[ManagedByLabel] != ManagedByValue {
			return fmt.Errorf("PodGroup %s/%s exists and is not managed by workmap: left alone", desired.Namespace, desired.Name)
		}
		if upToDate(cur, desired) {
			change, result = Unchanged, cur
			return nil
		}
		updated := cur.DeepCopy()
		updated.Spec = desired.Spec
		updated.OwnerReferences = desired.OwnerReferences
		if updated.Labels == nil {
			updated.Labels = map[string]string{}
		}
		for k, v := range desired.Labels {
			updated.Labels[k] = v
		}
		setGangAnnotations(updated, desired)
		written, err := c.Update(ctx, updated)
		if err != nil {
			return err
		}
		change, result = Updated, written
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("updating PodGroup %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return result, change, nil
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
	for _, key := range gangAnnotations {
		if current.Annotations[key] != desired.Annotations[key] {
			return false
		}
	}
	return true
}

// gangAnnotations are the annotations through which workmap's PodGroups say how their gang
// is placed; workmap keeps them as its decision says and leaves other annotations alone.
var gangAnnotations = []string{TopologyRequiredAnnotation, TopologyPreferredAnnotation, TopologyNestedAnnotation, LeaderFirstAnnotation}

// setGangAnnotations makes a PodGroup's gang annotations those of desired.
func setGangAnnotations(pg, desired *v1alpha1.PodGroup) {
	for _, key := range gangAnnotations {
		value := desired.Annotations[key]
		if value == "" {
			delete(pg.Annotations, key)
			continue
		}
		if pg.Annotations == nil {
			pg.Annotations = map[string]string{}
		}
		pg.Annotations[key] = value
	}
}
