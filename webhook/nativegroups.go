package webhook

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// NativeGroup is the API group of Kubernetes' own Workload and PodGroup.
const NativeGroup = "scheduling.k8s.io"

// nativeVersions are the versions of native PodGroups workmap writes, newest first (v1alpha2
// in Kubernetes 1.36, v1beta1 from 1.37; the fields workmap sets are the same).
var nativeVersions = []string{"v1beta1", "v1alpha2"}

// ServedNativePodGroups finds the native PodGroup resource the cluster serves, if any.
func ServedNativePodGroups(d discovery.DiscoveryInterface) (schema.GroupVersionResource, bool, error) {
	for _, v := range nativeVersions {
		gv := schema.GroupVersion{Group: NativeGroup, Version: v}
		list, err := d.ServerResourcesForGroupVersion(gv.String())
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return schema.GroupVersionResource{}, false, fmt.Errorf("discovering %s: %w", gv, err)
		}
		for _, r := range list.APIResources {
			if r.Name == "podgroups" {
				return gv.WithResource("podgroups"), true, nil
			}
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

// NativePodGroups makes sure native PodGroups exist: one create per gang, the existing ones
// known from a cache of them.
type NativePodGroups struct {
	resource schema.GroupVersionResource
	client   dynamic.Interface
	informer cache.SharedIndexInformer
	// made are the PodGroups created by this process (the cache may not have them yet).
	made sync.Map
}

// NewNativePodGroups caches the native PodGroups workmap manages once Run is called.
func NewNativePodGroups(client dynamic.Interface, resource schema.GroupVersionResource) *NativePodGroups {
	selector := grouper.ManagedByLabel + "=" + grouper.ManagedByValue
	informer := dynamicinformer.NewFilteredDynamicInformer(client, resource, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
	return &NativePodGroups{resource: resource, client: client, informer: informer}
}

// Run keeps the cache until ctx ends.
func (n *NativePodGroups) Run(ctx context.Context) { n.informer.RunWithContext(ctx) }

// HasSynced reports whether the cache was filled.
func (n *NativePodGroups) HasSynced() bool { return n.informer.HasSynced() }

// Resource is the native PodGroup resource in use.
func (n *NativePodGroups) Resource() schema.GroupVersionResource { return n.resource }

// Ensure creates the native PodGroup of a gang unless it exists: owned by the workload's top
// owner (garbage-collected with it), minCount the gang's minMember. A native PodGroup's spec
// is immutable: one that exists is left as it is.
func (n *NativePodGroups) Ensure(ctx context.Context, desired *v1alpha1.PodGroup) error {
	key := desired.Namespace + "/" + desired.Name
	if _, ok := n.made.Load(key); ok {
		return nil
	}
	if _, exists, err := n.informer.GetStore().GetByKey(key); err == nil && exists {
		return nil
	}
	_, err := n.client.Resource(n.resource).Namespace(desired.Namespace).Create(ctx, NativePodGroup(n.resource.GroupVersion(), desired), metav1.CreateOptions{FieldManager: "workmap-webhook"})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating native PodGroup %s: %w", key, err)
	}
	n.made.Store(key, struct{}{})
	return nil
}

// Forget drops a PodGroup this process made from its memory (it was deleted).
func (n *NativePodGroups) Forget(namespace, name string) { n.made.Delete(namespace + "/" + name) }

// NativePodGroup is the native PodGroup of one of workmap's gangs: the same name, labels and
// owner as the scheduling.x-k8s.io PodGroup workmap-scheduler would make, with a gang policy.
func NativePodGroup(gv schema.GroupVersion, pg *v1alpha1.PodGroup) *unstructured.Unstructured {
	owners := make([]any, 0, len(pg.OwnerReferences))
	for _, o := range pg.OwnerReferences {
		owners = append(owners, map[string]any{"apiVersion": o.APIVersion, "kind": o.Kind, "name": o.Name, "uid": string(o.UID)})
	}
	labels := map[string]any{}
	for k, v := range pg.Labels {
		labels[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gv.String(),
		"kind":       "PodGroup",
		"metadata": map[string]any{
			"name": pg.Name, "namespace": pg.Namespace, "labels": labels, "ownerReferences": owners,
		},
		"spec": map[string]any{
			"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(pg.Spec.MinMember)}},
		},
	}}
}
