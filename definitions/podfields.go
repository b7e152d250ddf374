package definitions

import (
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
}

// mainContainerResources is where podFields.resources lands in the assembled pod template.
var mainContainerResources = paths.MustParse("spec.containers[*].resources")

// assembleTemplate builds an unstructured PodTemplateSpec from the scattered fields of one
// instance (base is the value at podFields.base).
func (r *role) assembleTemplate(base any) (map[string]any, error) {
	tmpl := map[string]any{}
	var containers []any
	for _, f := range podFieldList {
		rel, ok := r.fields[f.name]
		if !ok {
			continue
		}
		v, found, err := rel.GetOne(base)
		if err != nil {
			return nil, err
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
		default:
			if _, err := f.template.Set(tmpl, v); err != nil {
				return nil, err
			}
		}
	}
	if len(containers) > 0 {
		if _, err := paths.MustParse("spec.containers").Set(tmpl, containers); err != nil {
			return nil, err
		}
	}
	return tmpl, nil
}
