package definitions

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What counts as a GPU by default: the extended resources of whole GPUs (nvidia.com/pgpu is a
// whole GPU passed through to a Kata VM), and the DRA device class of NVIDIA's DRA driver. MIG
// slices (nvidia.com/mig-*) and TPUs stay other extended resources; IMEX channels are no GPUs.
var (
	DefaultGPUResources     = []corev1.ResourceName{"nvidia.com/gpu", "nvidia.com/pgpu", "amd.com/gpu"}
	DefaultGPUDeviceClasses = []string{"gpu.nvidia.com"}
)

// GPUFractionAnnotation on a pod asks for a fraction of one GPU (KAI Scheduler's
// `gpu-fraction: "0.5"`); such a pod counts as that fraction.
const GPUFractionAnnotation = "gpu-fraction"

// GPUCounting says what counts as a GPU. Empty lists mean the defaults.
type GPUCounting struct {
	// Resources are the extended resources that are whole GPUs.
	Resources []corev1.ResourceName
	// DeviceClasses are the DRA device classes whose devices are GPUs.
	DeviceClasses []string
}

func (g GPUCounting) resources() []corev1.ResourceName {
	if len(g.Resources) == 0 {
		return DefaultGPUResources
	}
	return g.Resources
}

func (g GPUCounting) deviceClasses() []string {
	if len(g.DeviceClasses) == 0 {
		return DefaultGPUDeviceClasses
	}
	return g.DeviceClasses
}

// ClaimTemplates finds a ResourceClaimTemplate (or ResourceClaim, kind "ResourceClaim") by
// namespace and name: from the same manifest offline, from the cluster live. An empty
// namespace is the workload's. nil finds none.
type ClaimTemplates func(kind, namespace, name string) (*unstructured.Unstructured, bool)

// ExpandOptions change how a workload is expanded. The zero value counts the default GPUs and
// finds no claim templates.
type ExpandOptions struct {
	GPUs   GPUCounting
	Claims ClaimTemplates
}

// The sources of GPUs in a breakdown, besides the resource names themselves.
const (
	gpuSourceFraction = "gpu-fraction"
	gpuSourceDRA      = "dra:" // + device class
)

// podGPUs counts one pod's GPUs by source: GPU resources among its effective requests, GPU
// devices of the claims it names (inPlace: those its workload describes itself, by claim
// name), and a fraction asked for by annotation. A ResourceClaim the pod names (not a
// template) is one object every pod naming it shares: its GPUs come back among shared, once,
// not per pod. Claims that cannot be counted come back as notes, and so do claims of other
// device classes when the pod counts no GPU at all.
func (o ExpandOptions) podGPUs(requests corev1.ResourceList, tmpl *corev1.PodTemplateSpec, inPlace map[string]claimInPlace) (map[string]float64, []sharedGPUs, []string) {
	sources := map[string]float64{}
	for _, name := range o.GPUs.resources() {
		if q, ok := requests[name]; ok && !q.IsZero() {
			sources[string(name)] += float64(q.Value())
		}
	}
	if v, ok := tmpl.Annotations[GPUFractionAnnotation]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f <= 1 {
			sources[gpuSourceFraction] += f
		}
	}
	var shared []sharedGPUs
	var notes, otherDevices []string
	counted := false
	for _, rc := range tmpl.Spec.ResourceClaims {
		var c claimCount
		into := sources
		if ic, ok := inPlace[rc.Name]; ok {
			c = o.countRequests(ic.Location, ic.Requests)
		} else {
			switch {
			case rc.ResourceClaimTemplateName != nil:
				c = o.claimGPUs("ResourceClaimTemplate", "", *rc.ResourceClaimTemplateName)
			case rc.ResourceClaimName != nil:
				c = o.claimGPUs("ResourceClaim", "", *rc.ResourceClaimName)
				into = map[string]float64{}
				shared = append(shared, sharedGPUs{key: c.what, gpus: into})
			default:
				continue
			}
		}
		for class, count := range c.gpus {
			into[gpuSourceDRA+class] += count
			counted = counted || count > 0
		}
		if c.note != "" {
			notes = append(notes, c.note)
		}
		if len(c.gpus) == 0 && len(c.otherClasses) > 0 {
			otherDevices = append(otherDevices, c.otherDevicesNote(o.GPUs.deviceClasses()))
		}
	}
	if sumGPUs(sources) == 0 && !counted {
		notes = append(notes, otherDevices...)
	}
	return sources, shared, notes
}

// sharedGPUs are the GPUs of claims several pods share: a ResourceClaim holds its devices
// once, however many pods use it.
type sharedGPUs struct {
	// key names the claims in the workload, so that roles sharing them count them once.
	key  string
	gpus map[string]float64
}

// claimCount is what one claim of a pod gives: its GPUs by device class, the other device
// classes it asks for, and why some of its devices cannot be counted.
type claimCount struct {
	// what names the claim in notes: "ResourceClaimTemplate two-gpus", or where the workload
	// describes it.
	what         string
	gpus         map[string]float64
	otherClasses []string
	note         string
}

// otherDevicesNote says that a claim asks for devices, none of them GPUs.
func (c claimCount) otherDevicesNote(gpuClasses []string) string {
	return fmt.Sprintf("%s asks for devices of class %s, none of a GPU device class (%s): no GPUs are counted from it",
		c.what, strings.Join(c.otherClasses, ", "), strings.Join(gpuClasses, ", "))
}

// claimGPUs counts the GPU devices a claim (template) requests, by device class. An empty
// namespace is the workload's.
func (o ExpandOptions) claimGPUs(kind, namespace, name string) claimCount {
	what := kind + " " + name
	if namespace != "" {
		what = kind + " " + namespace + "/" + name
	}
	if o.Claims == nil {
		return claimCount{what: what, note: what + " is not known here: its GPUs are not counted"}
	}
	obj, ok := o.Claims(kind, namespace, name)
	if !ok {
		return claimCount{what: what, note: what + " not found: its GPUs are not counted"}
	}
	spec := obj.Object
	if kind == "ResourceClaimTemplate" {
		spec, _, _ = unstructured.NestedMap(obj.Object, "spec")
	}
	requests, _, _ := unstructured.NestedSlice(spec, "spec", "devices", "requests")
	return o.countRequests(what, requests)
}

// countRequests counts the GPU devices of a claim's device requests (resource.k8s.io/v1 or
// v1beta1), by device class.
func (o ExpandOptions) countRequests(what string, requests []any) claimCount {
	c := claimCount{what: what, gpus: map[string]float64{}}
	var uncounted []string
	for _, item := range requests {
		req, _ := item.(map[string]any)
		// resource.k8s.io/v1 nests the request under exactly; v1beta1 has it inline.
		exact, ok := req["exactly"].(map[string]any)
		if !ok {
			exact = req
		}
		class, _ := exact["deviceClassName"].(string)
		if !slices.Contains(o.GPUs.deviceClasses(), class) {
			if class != "" && !slices.Contains(c.otherClasses, class) {
				c.otherClasses = append(c.otherClasses, class)
			}
			continue
		}
		if mode, _ := exact["allocationMode"].(string); mode == "All" {
			uncounted = append(uncounted, fmt.Sprintf("request %v asks for all devices of class %s", req["name"], class))
			continue
		}
		count := int64(1)
		if n, ok := exact["count"].(int64); ok {
			count = n
		} else if n, ok := exact["count"].(float64); ok {
			count = int64(n)
		}
		c.gpus[class] += float64(count)
	}
	if len(c.gpus) == 0 {
		c.gpus = nil
	}
	if len(uncounted) > 0 {
		c.note = fmt.Sprintf("%s: %s (allocationMode All): that cannot be counted from the spec", what, strings.Join(uncounted, "; "))
	}
	return c
}

// sumGPUs is the total of a breakdown.
func sumGPUs(sources map[string]float64) float64 {
	t := 0.0
	for _, v := range sources {
		t += v
	}
	return t
}

// addGPUs adds a breakdown times n into another.
func addGPUs(into map[string]float64, sources map[string]float64, n float64) {
	for k, v := range sources {
		into[k] += v * n
	}
}

// resourceGroup is the API group of ResourceClaims and ResourceClaimTemplates.
const resourceGroup = "resource.k8s.io"

// ClaimsIn finds claim templates among objects (the documents of a manifest); namespace is
// the workload's.
func ClaimsIn(objects []*unstructured.Unstructured, namespace string) ClaimTemplates {
	return func(kind, ns, name string) (*unstructured.Unstructured, bool) {
		if ns == "" {
			ns = namespace
		}
		for _, o := range objects {
			if o.GroupVersionKind().Group == resourceGroup && o.GetKind() == kind && o.GetName() == name && o.GetNamespace() == ns {
				return o, true
			}
		}
		return nil, false
	}
}
