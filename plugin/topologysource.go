package plugin

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The kinds of Topology objects the plugin can read its levels from: Kueue's and KAI's, both
// cluster-scoped with spec.levels[].nodeLabel, broad to narrow.
const (
	TopologyKindKueue = "Kueue"
	TopologyKindKAI   = "KAI"
)

// topologyGroups are the API groups of those kinds.
var topologyGroups = map[string]string{TopologyKindKueue: "kueue.x-k8s.io", TopologyKindKAI: "kai.scheduler"}

// currentLevels holds the levels in force: the args' own, or those of the Topology object the
// args name, replaced whenever that object changes.
type currentLevels struct {
	p atomic.Pointer[topologyLevels]
}

func (c *currentLevels) get() topologyLevels { return *c.p.Load() }

func (c *currentLevels) set(l topologyLevels) { c.p.Store(&l) }

// followTopology keeps levels equal to those of the Topology object ref names, until ctx ends.
// The object's kind is found by discovery (its group's preferred version), retried while the
// kind is not served; while the object or its kind is missing, the levels are empty and say
// why, so a gang that asks for a level by name waits and its pods' events tell.
func followTopology(ctx context.Context, disc discovery.DiscoveryInterface, dyn dynamic.Interface, ref *TopologyReference, levels *currentLevels) {
	logger := klog.FromContext(ctx).WithValues("topology", ref.Kind+"/"+ref.Name)
	what := fmt.Sprintf("the %s Topology %s", ref.Kind, ref.Name)
	var gvr schema.GroupVersionResource
	err := wait.PollUntilContextCancel(ctx, 30*time.Second, true, func(context.Context) (bool, error) {
		var err error
		if gvr, err = topologyResource(disc, topologyGroups[ref.Kind]); err != nil {
			levels.set(topologyLevels{problem: fmt.Sprintf("%s cannot be read: %v", what, err)})
			logger.Error(err, "the Topology kind is not served; gangs that ask for a level by name wait")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return
	}
	informer := dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ref.Name).String()
	}).Informer()
	update := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		parsed, err := levelsOf(u)
		if err != nil {
			levels.set(topologyLevels{problem: fmt.Sprintf("%s: %v", what, err)})
			logger.Error(err, "the Topology object is malformed; gangs that ask for a level by name wait")
			return
		}
		levels.set(newTopologyLevels(parsed))
		logger.Info("topology levels", "levels", parsed)
	}
	levels.set(topologyLevels{problem: what + " does not exist"})
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, obj any) { update(obj) },
		DeleteFunc: func(any) {
			levels.set(topologyLevels{problem: what + " was deleted"})
			logger.Info("the Topology object was deleted; gangs that ask for a level by name wait")
		},
	}); err != nil {
		logger.Error(err, "watching the Topology object")
		return
	}
	informer.RunWithContext(ctx)
}

// topologyResource finds the topologies resource of a group in its preferred version.
func topologyResource(disc discovery.DiscoveryInterface, group string) (schema.GroupVersionResource, error) {
	groups, err := disc.ServerGroups()
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, g := range groups.Groups {
		if g.Name != group {
			continue
		}
		resources, err := disc.ServerResourcesForGroupVersion(g.PreferredVersion.GroupVersion)
		if err != nil {
			return schema.GroupVersionResource{}, err
		}
		for _, r := range resources.APIResources {
			if r.Name == "topologies" {
				return schema.GroupVersionResource{Group: group, Version: g.PreferredVersion.Version, Resource: r.Name}, nil
			}
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("the API server serves no topologies.%s", group)
}

// levelsOf reads a Topology object's levels. Each is named by its node label's last part
// without a "topology-" prefix (cloud.provider.com/topology-rack: rack; kubernetes.io/hostname:
// hostname); a name two levels would share is left to the second's node label.
func levelsOf(u *unstructured.Unstructured) ([]TopologyLevel, error) {
	items, found, err := unstructured.NestedSlice(u.Object, "spec", "levels")
	if err != nil || !found || len(items) == 0 {
		return nil, fmt.Errorf("spec.levels: want a list of {nodeLabel}")
	}
	var out []TopologyLevel
	names := map[string]bool{}
	for i, item := range items {
		m, _ := item.(map[string]any)
		label, _ := m["nodeLabel"].(string)
		if label == "" {
			return nil, fmt.Errorf("spec.levels[%d].nodeLabel: required", i)
		}
		name := strings.TrimPrefix(path.Base(label), "topology-")
		if names[name] || validateLevels([]TopologyLevel{{Name: name, NodeLabel: label}}, nil) != nil {
			name = label
		}
		names[name] = true
		out = append(out, TopologyLevel{Name: name, NodeLabel: label})
	}
	return out, nil
}
