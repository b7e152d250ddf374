package webview

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/grouper"
)

var nodesResource = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// TopologyLevel is one level of the cluster's topology (see grouper.TopologyLevel).
type TopologyLevel = grouper.TopologyLevel

// Node is one node as the view shows it.
type Node struct {
	Name string
	// Labels are its values of the topology levels' labels.
	Labels map[string]string
	// GPUs are its allocatable GPUs: the resources counted as whole GPUs.
	GPUs float64
	// Ready is its Ready condition; Unschedulable its spec's.
	Ready, Unschedulable bool
}

// nodeOf reads a cached node.
func nodeOf(u *unstructured.Unstructured, labelKeys []string, gpuNames []corev1.ResourceName) Node {
	n := Node{Name: u.GetName(), Labels: map[string]string{}}
	labels := u.GetLabels()
	for _, k := range labelKeys {
		if v, ok := labels[k]; ok {
			n.Labels[k] = v
		}
	}
	allocatable, _, _ := unstructured.NestedMap(u.Object, "status", "allocatable")
	for _, name := range gpuNames {
		if v, ok := allocatable[string(name)]; ok {
			n.GPUs += quantityValue(v)
		}
	}
	n.Unschedulable, _, _ = unstructured.NestedBool(u.Object, "spec", "unschedulable")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == string(corev1.NodeReady) {
			n.Ready = m["status"] == string(corev1.ConditionTrue)
		}
	}
	return n
}

// stripNode keeps of a node what the view reads — its name, labels, whether it is
// unschedulable, its allocatable resources and whether it is Ready — so that the cache stays
// small (no images, no annotations) and a heartbeat changes nothing in it.
func stripNode(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	md := map[string]any{"name": u.GetName(), "uid": string(u.GetUID()), "resourceVersion": u.GetResourceVersion()}
	if l := u.GetLabels(); len(l) > 0 {
		labels := make(map[string]any, len(l))
		for k, v := range l {
			labels[k] = v
		}
		md["labels"] = labels
	}
	out := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": md}
	if v, ok, _ := unstructured.NestedBool(u.Object, "spec", "unschedulable"); ok {
		out["spec"] = map[string]any{"unschedulable": v}
	}
	status := map[string]any{}
	if a, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "allocatable"); ok {
		status["allocatable"] = a
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == string(corev1.NodeReady) {
			status["conditions"] = []any{map[string]any{"type": m["type"], "status": m["status"]}}
		}
	}
	out["status"] = status
	return &unstructured.Unstructured{Object: out}, nil
}

// sameNode says two stripped nodes differ in nothing the view shows.
func sameNode(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		c.SetResourceVersion("")
		return c.Object
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// nodesOf reads the cached nodes, sorted by name.
func nodesOf(objs []*unstructured.Unstructured, levels []TopologyLevel, gpuNames []corev1.ResourceName) []Node {
	keys := make([]string, 0, len(levels))
	for _, l := range levels {
		keys = append(keys, l.NodeLabel)
	}
	out := make([]Node, 0, len(objs))
	for _, u := range objs {
		out = append(out, nodeOf(u, keys, gpuNames))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
