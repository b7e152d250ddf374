package webview

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/live"
)

// podUses are the workload's pods with their nodes and GPUs: those its roles place with the
// engine's GPUs per pod of their role, the others with what their containers request.
func podUses(res *live.Result, gpuNames []corev1.ResourceName) []PodUse {
	w := res.Workload
	raw := make(map[string]*unstructured.Unstructured, len(res.Pods))
	for _, p := range res.Pods {
		raw[p.GetName()] = p
	}
	var out []PodUse
	placed := map[string]bool{}
	for _, role := range w.Roles {
		add := func(pods []definitions.FoundPod) {
			for _, p := range pods {
				u := PodUse{Namespace: w.Workload.Namespace, Name: p.Name, Node: p.Node, Phase: p.Phase, Role: role.Name, GPUs: perPodGPUs(role)}
				if role.Pods == 0 && raw[p.Name] != nil {
					u.GPUs = podSpecGPUs(raw[p.Name].Object, gpuNames)
				}
				out = append(out, u)
				placed[p.Name] = true
			}
		}
		add(role.FoundPods)
		for _, in := range role.Instances {
			add(in.FoundPods)
		}
	}
	for _, p := range res.Pods {
		if !placed[p.GetName()] {
			out = append(out, podUseOf(p, gpuNames))
		}
	}
	return out
}

// podUseOf reads a pod of no role: its node, phase and the GPUs its containers request.
func podUseOf(p *unstructured.Unstructured, gpuNames []corev1.ResourceName) PodUse {
	phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
	if phase == "" {
		phase = string(corev1.PodPending)
	}
	node, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
	return PodUse{Namespace: p.GetNamespace(), Name: p.GetName(), Node: node, Phase: phase, GPUs: podSpecGPUs(p.Object, gpuNames)}
}

// gpuResources are the extended resources that count as whole GPUs.
func gpuResources(o definitions.ExpandOptions) []corev1.ResourceName {
	if len(o.GPUs.Resources) == 0 {
		return definitions.DefaultGPUResources
	}
	return o.GPUs.Resources
}

// podSpecGPUs are the GPUs a pod's containers request, as its node accounts them: the
// effective request of each GPU resource (the larger of its containers' and sidecars' sum and
// any one init container's; a request defaults to the limit), and a gpu-fraction annotation.
func podSpecGPUs(pod map[string]any, gpuNames []corev1.ResourceName) float64 {
	total := 0.0
	for _, name := range gpuNames {
		sum, initMax := 0.0, 0.0
		containers, _, _ := unstructured.NestedSlice(pod, "spec", "containers")
		for _, c := range containers {
			sum += containerRequest(c, name)
		}
		inits, _, _ := unstructured.NestedSlice(pod, "spec", "initContainers")
		for _, c := range inits {
			if m, _ := c.(map[string]any); m["restartPolicy"] == "Always" {
				sum += containerRequest(c, name) // a sidecar runs beside the containers
			} else {
				initMax = max(initMax, containerRequest(c, name))
			}
		}
		total += max(sum, initMax)
	}
	if v, ok, _ := unstructured.NestedString(pod, "metadata", "annotations", definitions.GPUFractionAnnotation); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f <= 1 {
			total += f
		}
	}
	return total
}

// containerRequest is a container's request of a resource (its limit when it gives no
// request).
func containerRequest(c any, name corev1.ResourceName) float64 {
	m, _ := c.(map[string]any)
	for _, field := range []string{"requests", "limits"} {
		if v, ok, _ := unstructured.NestedFieldNoCopy(m, "resources", field, string(name)); ok {
			return quantityValue(v)
		}
	}
	return 0
}

// quantityValue reads a quantity as unstructured objects hold it: a string or a number.
func quantityValue(v any) float64 {
	switch v := v.(type) {
	case string:
		if q, err := resource.ParseQuantity(v); err == nil {
			return q.AsApproximateFloat64()
		}
	case int64:
		return float64(v)
	case float64:
		return v
	}
	return 0
}
