package webhook

import (
	"context"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/internal/nativeapi"
)

// NativeGroup is the API group of Kubernetes' own Workload and PodGroup.
const NativeGroup = nativeapi.Group

// ServedNativePodGroups finds the native PodGroup resource the cluster serves, if any: the
// newest version workmap knows that the cluster serves (v1beta1 in Kubernetes 1.37, v1alpha2
// in 1.36; the fields workmap sets are the same).
func ServedNativePodGroups(d discovery.DiscoveryInterface) (schema.GroupVersionResource, bool, error) {
	v, ok, err := nativeapi.Served(d)
	if err != nil || !ok {
		return schema.GroupVersionResource{}, false, err
	}
	return v.PodGroups(), true, nil
}

// NativePodGroups makes sure native PodGroups exist: one create per gang, the existing ones
// known from a cache of them.
type NativePodGroups struct {
	resource schema.GroupVersionResource
	client   dynamic.Interface
	informer cache.SharedIndexInformer
	// made are the PodGroups this process created lately, by namespace/name, for the time the
	// cache may not have them yet: bounded (past maxMade the oldest go: an Ensure that misses
	// one only tries a create that finds it exists) and dropped once the cache sees them
	// deleted, so that a workload made again under the same name gets its PodGroup again.
	made *lru.Cache
	// levels maps topology level names to their node labels (a gang may ask for either).
	levels map[string]string
	// topologyDropped is set once the API server dropped a PodGroup's topology constraint
	// (its TopologyAwareWorkloadScheduling gate is off): said once, in the log.
	topologyDropped sync.Once
}

// maxMade bounds the PodGroups a NativePodGroups remembers making.
const maxMade = 10_000

// NewNativePodGroups caches the native PodGroups workmap manages once Run is called. levels
// maps topology level names to node labels, for gangs that ask for a level by name.
func NewNativePodGroups(client dynamic.Interface, resource schema.GroupVersionResource, levels map[string]string) *NativePodGroups {
	selector := grouper.ManagedByLabel + "=" + grouper.ManagedByValue
	informer := dynamicinformer.NewFilteredDynamicInformer(client, resource, metav1.NamespaceAll, 0, cache.Indexers{ownerIndex: ownerUIDs},
		func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
	n := &NativePodGroups{resource: resource, client: client, informer: informer, levels: levels, made: lru.New(maxMade)}
	// Adding a handler fails only once the informer has stopped; it has not started yet.
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			n.made.Remove(key)
		}
	}})
	return n
}

// CountWatchErrors has w count the failed lists and watches of the cache (call it before Run).
func (n *NativePodGroups) CountWatchErrors(w *grouper.WatchErrors) error {
	return w.Watch(n.informer, n.resource.GroupResource(), nil)
}

// Run keeps the cache until ctx ends.
func (n *NativePodGroups) Run(ctx context.Context) { n.informer.RunWithContext(ctx) }

// HasSynced reports whether the cache was filled.
func (n *NativePodGroups) HasSynced() bool { return n.informer.HasSynced() }

// Resource is the native PodGroup resource in use.
func (n *NativePodGroups) Resource() schema.GroupVersionResource { return n.resource }

// Ensure creates the native PodGroup of a gang unless it exists: owned by the workload's top
// owner (garbage-collected with it), minCount the gang's minMember. One that exists takes the
// gang's minMember where the served version lets minCount change (MinCountMutable; a change
// refused is logged, and the PodGroup is still the pod's); its other fields are left as they
// are.
func (n *NativePodGroups) Ensure(ctx context.Context, desired *v1alpha1.PodGroup) error {
	key := desired.Namespace + "/" + desired.Name
	if obj, exists, err := n.informer.GetStore().GetByKey(key); err == nil && exists {
		// The pod joins the PodGroup that exists even when its minCount cannot be brought to
		// the gang's: a gang of the old size is better than none.
		if pg, ok := obj.(*unstructured.Unstructured); ok {
			if err := n.FollowMinMember(ctx, pg, desired.Spec.MinMember, false); err != nil {
				klog.FromContext(ctx).Error(err, "the native PodGroup keeps its minCount", "podGroup", key)
			}
		}
		return nil
	}
	if _, ok := n.made.Get(key); ok {
		return nil
	}
	pg, err := NativePodGroup(n.resource.GroupVersion(), desired, n.levels)
	if err != nil {
		klog.FromContext(ctx).Error(err, "the gang's topology is not written on its native PodGroup", "podGroup", key)
	}
	created, err := n.client.Resource(n.resource).Namespace(desired.Namespace).Create(ctx, pg, metav1.CreateOptions{FieldManager: "workmap-webhook"})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating native PodGroup %s: %w", key, err)
	}
	if err == nil && topologyKey(pg) != "" && topologyKey(created) == "" {
		n.topologyDropped.Do(func() {
			klog.FromContext(ctx).Error(nil, "kube-apiserver dropped the topology constraint of native PodGroups (its TopologyAwareWorkloadScheduling gate is off): Kubernetes' scheduler places these gangs without topology", "podGroup", key)
		})
	}
	n.made.Add(key, struct{}{})
	return nil
}

// MinCountMutable reports whether the served native PodGroups let a gang's minCount change
// (scheduling.k8s.io/v1beta1, Kubernetes 1.37; v1alpha2's spec is immutable).
func (n *NativePodGroups) MinCountMutable() bool {
	v, ok := nativeapi.Lookup(n.resource.Version)
	return ok && v.MinCountMutable
}

// FollowMinMember brings a native PodGroup's minCount to its gang's minMember, where it may
// change; one that has it already, or may not change, is left alone. pg is the cached
// PodGroup; fresh reads it from the API server first (a workload changed twice within the
// cache's delay would otherwise be compared with a minCount it no longer has).
func (n *NativePodGroups) FollowMinMember(ctx context.Context, pg *unstructured.Unstructured, minMember int32, fresh bool) error {
	if !n.MinCountMutable() || minMember < 1 {
		return nil
	}
	if fresh {
		read, err := n.client.Resource(n.resource).Namespace(pg.GetNamespace()).Get(ctx, pg.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading native PodGroup %s/%s: %w", pg.GetNamespace(), pg.GetName(), err)
		}
		pg = read
	}
	current, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
	if current == int64(minMember) {
		return nil
	}
	patch := fmt.Sprintf(`{"spec":{"schedulingPolicy":{"gang":{"minCount":%d}}}}`, minMember)
	_, err := n.client.Resource(n.resource).Namespace(pg.GetNamespace()).Patch(ctx, pg.GetName(), types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "workmap-webhook"})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting minCount %d on native PodGroup %s/%s: %w", minMember, pg.GetNamespace(), pg.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("native PodGroup follows its workload", "podGroup", klog.KObj(pg), "minCount", minMember, "was", current)
	return nil
}

// OwnedBy are the native PodGroups workmap made for a workload, by its UID.
func (n *NativePodGroups) OwnedBy(uid types.UID) []*unstructured.Unstructured {
	items, err := n.informer.GetIndexer().ByIndex(ownerIndex, string(uid))
	if err != nil {
		return nil
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		if pg, ok := item.(*unstructured.Unstructured); ok {
			out = append(out, pg)
		}
	}
	return out
}

// ownerIndex indexes native PodGroups by their owners' UIDs.
const ownerIndex = "workmap.dev/owner"

func ownerUIDs(obj any) ([]string, error) {
	pg, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	refs := pg.GetOwnerReferences()
	uids := make([]string, 0, len(refs))
	for _, ref := range refs {
		uids = append(uids, string(ref.UID))
	}
	return uids, nil
}

// topologyKey is the node label of a native PodGroup's topology constraint ("" for none).
func topologyKey(pg *unstructured.Unstructured) string {
	list, _, _ := unstructured.NestedSlice(pg.Object, "spec", "schedulingConstraints", "topology")
	if len(list) == 0 {
		return ""
	}
	m, _ := list[0].(map[string]any)
	key, _ := m["key"].(string)
	return key
}

// NativePodGroup is the native PodGroup of one of workmap's gangs: the same name, labels,
// annotations and owner as the scheduling.x-k8s.io PodGroup workmap-scheduler would make,
// with a gang policy, and its required topology level as the PodGroup's topology constraint
// (levels maps level names to node labels; a level asked for by node label needs none). A
// level that names no node label is an error, and the PodGroup is made without it.
func NativePodGroup(gv schema.GroupVersion, pg *v1alpha1.PodGroup, levels map[string]string) (*unstructured.Unstructured, error) {
	owners := make([]any, 0, len(pg.OwnerReferences))
	for _, o := range pg.OwnerReferences {
		owners = append(owners, map[string]any{"apiVersion": o.APIVersion, "kind": o.Kind, "name": o.Name, "uid": string(o.UID)})
	}
	labels := map[string]any{}
	for k, v := range pg.Labels {
		labels[k] = v
	}
	metadata := map[string]any{"name": pg.Name, "namespace": pg.Namespace, "labels": labels, "ownerReferences": owners}
	if len(pg.Annotations) > 0 {
		annotations := map[string]any{}
		for k, v := range pg.Annotations {
			annotations[k] = v
		}
		metadata["annotations"] = annotations
	}
	spec := map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(pg.Spec.MinMember)}}}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gv.String(), "kind": "PodGroup", "metadata": metadata, "spec": spec}}
	required := grouper.TopologyOf(pg).Required
	if required == "" {
		return out, nil
	}
	key, ok := levels[required]
	if !ok {
		if !strings.ContainsAny(required, "./") || len(validation.IsQualifiedName(required)) > 0 {
			return out, fmt.Errorf("topology level %q is not one of --topology-levels nor a node label", required)
		}
		key = required
	}
	spec["schedulingConstraints"] = map[string]any{"topology": []any{map[string]any{"key": key}}}
	return out, nil
}

// ParseLevels reads topology levels given as name=nodeLabel pairs, comma-separated, into a
// map from name to node label.
func ParseLevels(s string) (map[string]string, error) {
	levels, err := grouper.ParseTopologyLevels(s)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(levels))
	for _, l := range levels {
		out[l.Name] = l.NodeLabel
	}
	return out, nil
}
