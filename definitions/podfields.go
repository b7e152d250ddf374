package definitions

import (
	"fmt"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/paths"
)

// podField names one field of the scattered podFields form.
type podField string

type podFieldInfo struct {
	name podField
	get  func(*v1alpha1.PodFields) string
	// template is where the field lives in a PodTemplateSpec; resources has none (it becomes
	// the main container's resources).
	template paths.Path
}

var podFieldList = []podFieldInfo{
	{"containers", func(f *v1alpha1.PodFields) string { return f.Containers }, paths.MustParse("spec.containers")},
	{"resources", func(f *v1alpha1.PodFields) string { return f.Resources }, paths.Path{}},
	{"labels", func(f *v1alpha1.PodFields) string { return f.Labels }, paths.MustParse("metadata.labels")},
	{"annotations", func(f *v1alpha1.PodFields) string { return f.Annotations }, paths.MustParse("metadata.annotations")},
	{"schedulerName", func(f *v1alpha1.PodFields) string { return f.SchedulerName }, paths.MustParse("spec.schedulerName")},
	{"nodeSelector", func(f *v1alpha1.PodFields) string { return f.NodeSelector }, paths.MustParse("spec.nodeSelector")},
	{"tolerations", func(f *v1alpha1.PodFields) string { return f.Tolerations }, paths.MustParse("spec.tolerations")},
	{"affinity", func(f *v1alpha1.PodFields) string { return f.Affinity }, paths.MustParse("spec.affinity")},
	{"priorityClassName", func(f *v1alpha1.PodFields) string { return f.PriorityClassName }, paths.MustParse("spec.priorityClassName")},
	{"resourceClaims", func(f *v1alpha1.PodFields) string { return f.ResourceClaims }, paths.MustParse("spec.resourceClaims")},
}

// mainContainerResources is where podFields.resources lands in the assembled pod template.
var mainContainerResources = paths.MustParse("spec.containers[*].resources")

// assembleTemplate builds an unstructured PodTemplateSpec from the scattered fields of one
// instance (base is the value at podFields.base), and returns the claims the instance
// describes in place, by the name of the pod's claim.
func (r *role) assembleTemplate(base any) (map[string]any, map[string]claimInPlace, error) {
	tmpl := map[string]any{}
	var containers []any
	var inPlace map[string]claimInPlace
	for _, f := range podFieldList {
		rel, ok := r.fields[f.name]
		if !ok {
			continue
		}
		v, found, err := rel.GetOne(base)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			continue
		}
		switch f.name {
		case "resources":
			name := r.source.PodFields.ContainerName
			if name == "" {
				name = "main"
			}
			containers = append([]any{map[string]any{"name": name, "resources": v}}, containers...)
		case "containers":
			if l, ok := v.([]any); ok {
				containers = append(containers, l...)
			}
		case "resourceClaims":
			var claims []any
			if claims, inPlace, err = podResourceClaims(rel, v); err != nil {
				return nil, nil, err
			}
			if _, err := f.template.Set(tmpl, claims); err != nil {
				return nil, nil, err
			}
		default:
			if _, err := f.template.Set(tmpl, v); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(containers) > 0 {
		if _, err := paths.MustParse("spec.containers").Set(tmpl, containers); err != nil {
			return nil, nil, err
		}
	}
	return tmpl, inPlace, nil
}

// claimInPlace is a claim an operator's field describes in place rather than naming a
// ResourceClaimTemplate (the NIM operator's claimCreationSpec): the operator makes the
// template from it, so its devices are counted from the workload itself, offline and live.
type claimInPlace struct {
	// Location is where the claim is described, relative to the role's location until the
	// role is expanded, then in the object (spec.draResources[0].claimCreationSpec).
	Location string
	// Requests are its device requests in a ResourceClaim spec's form (resource.k8s.io/v1).
	Requests []any
}

// The NIM operator's defaults for a device of a claimCreationSpec.
const (
	claimInPlaceCount       = int64(1)
	claimInPlaceDeviceClass = "gpu.nvidia.com"
)

// podResourceClaims turns the list at podFields.resourceClaims (rel) into a pod's
// spec.resourceClaims: each item keeps its name (or is named after its place, as operators
// name the pod's claims themselves) and the ResourceClaim or ResourceClaimTemplate it names;
// an item with a claimCreationSpec comes back among the claims described in place instead.
func podResourceClaims(rel paths.Path, v any) ([]any, map[string]claimInPlace, error) {
	items, ok := v.([]any)
	if !ok {
		return nil, nil, &paths.TypeError{Location: rel.String(), Want: "list", Got: v}
	}
	claims := make([]any, 0, len(items))
	var inPlace map[string]claimInPlace
	for i, it := range items {
		where := fmt.Sprintf("%s[%d]", rel, i)
		item, ok := it.(map[string]any)
		if !ok {
			return nil, nil, &paths.TypeError{Location: where, Want: "object", Got: it}
		}
		claim := map[string]any{}
		for _, k := range []string{"name", "resourceClaimName", "resourceClaimTemplateName"} {
			v, ok := item[k]
			if !ok || v == nil {
				continue
			}
			if _, ok := v.(string); !ok {
				return nil, nil, &paths.TypeError{Location: where + "." + k, Want: "string", Got: v}
			}
			claim[k] = v
		}
		name, _ := claim["name"].(string)
		if name == "" {
			name = where
			claim["name"] = name
		}
		if spec, ok := item["claimCreationSpec"]; ok {
			cs, ok := spec.(map[string]any)
			if !ok {
				return nil, nil, &paths.TypeError{Location: where + ".claimCreationSpec", Want: "object", Got: spec}
			}
			requests, err := claimCreationRequests(where+".claimCreationSpec", cs)
			if err != nil {
				return nil, nil, err
			}
			if inPlace == nil {
				inPlace = map[string]claimInPlace{}
			}
			inPlace[name] = claimInPlace{Location: where + ".claimCreationSpec", Requests: requests}
		}
		claims = append(claims, claim)
	}
	return claims, inPlace, nil
}

// claimCreationRequests are the device requests of the ResourceClaimTemplate the NIM operator
// makes of a claimCreationSpec: one per device, count devices (default 1) of deviceClassName
// (default gpu.nvidia.com).
func claimCreationRequests(where string, spec map[string]any) ([]any, error) {
	raw, ok := spec["devices"]
	if !ok {
		return nil, nil
	}
	devices, ok := raw.([]any)
	if !ok {
		return nil, &paths.TypeError{Location: where + ".devices", Want: "list", Got: raw}
	}
	requests := make([]any, 0, len(devices))
	for i, d := range devices {
		dev, ok := d.(map[string]any)
		if !ok {
			return nil, &paths.TypeError{Location: fmt.Sprintf("%s.devices[%d]", where, i), Want: "object", Got: d}
		}
		exactly := map[string]any{"deviceClassName": claimInPlaceDeviceClass, "count": claimInPlaceCount}
		if class, ok := dev["deviceClassName"].(string); ok && class != "" {
			exactly["deviceClassName"] = class
		}
		if count, ok := dev["count"]; ok {
			exactly["count"] = count
		}
		requests = append(requests, map[string]any{"name": dev["name"], "exactly": exactly})
	}
	return requests, nil
}
