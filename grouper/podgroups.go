package grouper

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
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

// PodGroupClient reads and writes scheduling.x-k8s.io PodGroups. They are custom resources,
// which the scheduler's clientset does not reach; this client decodes the API server's JSON
// straight into PodGroups, as a generated clientset would.
type PodGroupClient struct {
	rest rest.Interface
}

// podGroupCodecs encode and decode PodGroups and the options of requests about them.
var podGroupCodecs, podGroupParameters = func() (serializer.CodecFactory, runtime.ParameterCodec) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme), runtime.NewParameterCodec(scheme)
}()

// NewPodGroupClient returns a PodGroup client on cfg; it draws from cfg's rate limiter.
func NewPodGroupClient(cfg *rest.Config) (PodGroupClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &v1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.NegotiatedSerializer = podGroupCodecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return PodGroupClient{}, fmt.Errorf("PodGroup client: %w", err)
	}
	return PodGroupClient{rest: client}, nil
}

// In returns the client of namespace's PodGroups ("": of every namespace, to list and watch).
func (c PodGroupClient) In(namespace string) *gentype.ClientWithList[*v1alpha1.PodGroup, *v1alpha1.PodGroupList] {
	return gentype.NewClientWithList[*v1alpha1.PodGroup, *v1alpha1.PodGroupList](v1alpha1.Resource.Resource, c.rest, podGroupParameters, namespace,
		func() *v1alpha1.PodGroup { return &v1alpha1.PodGroup{} }, func() *v1alpha1.PodGroupList { return &v1alpha1.PodGroupList{} })
}

// withTypeMeta fills in the apiVersion and kind that decoding into a typed object leaves out:
// an event's reference to the PodGroup needs them (kube-scheduler's recorder does not know
// the kind). On an error it returns no PodGroup, as the typed client's empty one means nothing.
func withTypeMeta(pg *v1alpha1.PodGroup, err error) (*v1alpha1.PodGroup, error) {
	if err != nil {
		return nil, err
	}
	setTypeMeta(pg)
	return pg, nil
}

func setTypeMeta(pg *v1alpha1.PodGroup) {
	pg.APIVersion, pg.Kind = v1alpha1.SchemeGroupVersion.String(), "PodGroup"
}

// Get reads a PodGroup.
func (c PodGroupClient) Get(ctx context.Context, namespace, name string) (*v1alpha1.PodGroup, error) {
	return withTypeMeta(c.In(namespace).Get(ctx, name, metav1.GetOptions{}))
}

// Create creates a PodGroup and returns it as created.
func (c PodGroupClient) Create(ctx context.Context, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	return withTypeMeta(c.In(pg.Namespace).Create(ctx, pg, metav1.CreateOptions{}))
}

// Update writes a PodGroup's metadata and spec (optimistic concurrency on its resource version).
func (c PodGroupClient) Update(ctx context.Context, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	return withTypeMeta(c.In(pg.Namespace).Update(ctx, pg, metav1.UpdateOptions{}))
}

// UpdateStatus writes a PodGroup's status (optimistic concurrency on its resource version).
func (c PodGroupClient) UpdateStatus(ctx context.Context, pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, error) {
	return withTypeMeta(c.In(pg.Namespace).UpdateStatus(ctx, pg, metav1.UpdateOptions{}))
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
