// Package nativeapi is the shape of Kubernetes' own gang API (scheduling.k8s.io PodGroups and
// a pod's spec.schedulingGroup) as workmap writes and reads it: the versions it knows, newest
// first, what differs between them, the fields it uses, and a check of those fields against
// the schemas a cluster serves, so that a field renamed upstream fails a check with its name
// instead of being dropped silently by the API server.
package nativeapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Group is the API group of Kubernetes' own Workloads and PodGroups.
const Group = "scheduling.k8s.io"

// Version is a version of the native gang API that workmap knows.
type Version struct {
	// Name is the API version ("v1beta1").
	Name string
	// Kubernetes is the release that serves it (behind the GenericWorkload feature gate).
	Kubernetes string
	// ScheduledCondition is the PodGroup status condition kube-scheduler sets once the gang
	// is scheduled (false, with why, while it cannot be).
	ScheduledCondition string
	// MinCountMutable: a PodGroup's gang minCount may change after creation (it follows a
	// scaled workload); in earlier versions the spec is immutable.
	MinCountMutable bool
}

// Versions are the native API versions workmap writes and reads, newest first: a cluster's
// native PodGroups are the first of them it serves.
var Versions = []Version{
	{Name: "v1beta1", Kubernetes: "1.37", ScheduledCondition: "PodGroupInitiallyScheduled", MinCountMutable: true},
	{Name: "v1alpha2", Kubernetes: "1.36", ScheduledCondition: "PodGroupScheduled"},
}

// Lookup is the known version of that name.
func Lookup(name string) (Version, bool) {
	i := slices.IndexFunc(Versions, func(v Version) bool { return v.Name == name })
	if i < 0 {
		return Version{}, false
	}
	return Versions[i], true
}

// PodGroups is the PodGroup resource of a version.
func (v Version) PodGroups() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: v.Name, Resource: "podgroups"}
}

// ScheduledConditions are the scheduled condition types of every known version.
func ScheduledConditions() []string {
	out := make([]string, len(Versions))
	for i, v := range Versions {
		out[i] = v.ScheduledCondition
	}
	return out
}

// Field is a field of the native API that workmap writes or reads.
type Field struct {
	// Kind is the object's kind: PodGroup (in the native version's schema) or Pod (core/v1).
	Kind string
	// Path is the field's path from the object's root; "[]" steps into a list's items.
	Path string
	// Use says what workmap does with it.
	Use string
}

// Fields are the native API fields workmap writes and reads.
var Fields = []Field{
	{Kind: "PodGroup", Path: "spec.schedulingPolicy.gang.minCount", Use: "workmap-webhook writes the gang's minMember; workmap reads it"},
	{Kind: "PodGroup", Path: "spec.schedulingConstraints.topology[].key", Use: "workmap-webhook writes the node label of the gang's required topology level"},
	{Kind: "PodGroup", Path: "status.conditions[].type", Use: "workmap reads whether the gang was scheduled"},
	{Kind: "PodGroup", Path: "status.conditions[].message", Use: "workmap reads why the gang waits"},
	{Kind: "Pod", Path: "spec.schedulingGroup.podGroupName", Use: "workmap-webhook points a pod at its native PodGroup; workmap reads it"},
}

// Served is the known native version whose PodGroups the cluster serves (newest first), if
// any.
func Served(d discovery.DiscoveryInterface) (Version, bool, error) {
	for _, v := range Versions {
		list, err := d.ServerResourcesForGroupVersion(Group + "/" + v.Name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return Version{}, false, fmt.Errorf("discovering %s/%s: %w", Group, v.Name, err)
		}
		if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "podgroups" }) {
			return v, true, nil
		}
	}
	return Version{}, false, nil
}

// Check checks Fields against the schemas the cluster serves: the PodGroup of the native
// version it serves (none: nothing to check of it) and the Pod. Each field a schema lacks is
// one error, naming the field, the version and what workmap needs it for.
func Check(d discovery.DiscoveryInterface) (Version, bool, []error, error) {
	v, served, err := Served(d)
	if err != nil {
		return Version{}, false, nil, err
	}
	paths, err := d.OpenAPIV3().Paths()
	if err != nil {
		return v, served, nil, fmt.Errorf("reading the cluster's OpenAPI v3 paths: %w", err)
	}
	docs := map[string]string{"Pod": "api/v1"}
	if served {
		docs["PodGroup"] = "apis/" + Group + "/" + v.Name
	}
	var problems []error
	for _, kind := range []string{"PodGroup", "Pod"} {
		path, ok := docs[kind]
		if !ok {
			continue
		}
		gv, ok := paths[path]
		if !ok {
			return v, served, nil, fmt.Errorf("the cluster's OpenAPI v3 has no %s", path)
		}
		doc, err := gv.Schema("application/json")
		if err != nil {
			return v, served, nil, fmt.Errorf("reading the OpenAPI v3 schema of %s: %w", path, err)
		}
		version := "v1"
		if kind == "PodGroup" {
			version = v.Name
		}
		found, err := CheckSchema(doc, kind, version)
		if err != nil {
			return v, served, nil, err
		}
		problems = append(problems, found...)
	}
	return v, served, problems, nil
}

// CheckSchema checks the Fields of a kind against an OpenAPI v3 document of one group version
// (as kube-apiserver serves it at /openapi/v3/<path>): version is "v1" for Pod, the native
// version for PodGroup.
func CheckSchema(doc []byte, kind, version string) ([]error, error) {
	var d openAPIDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("the OpenAPI v3 document of %s %s: %w", kind, version, err)
	}
	name := "io.k8s.api.core.v1.Pod"
	apiVersion := "v1"
	if kind == "PodGroup" {
		name = "io.k8s.api.scheduling." + version + ".PodGroup"
		apiVersion = Group + "/" + version
	}
	root, ok := d.Components.Schemas[name]
	if !ok {
		return nil, fmt.Errorf("the OpenAPI v3 document of %s has no schema %s", apiVersion, name)
	}
	var problems []error
	for _, f := range Fields {
		if f.Kind != kind {
			continue
		}
		if missing := d.missing(root, f.Path); missing != "" {
			problems = append(problems, fmt.Errorf("%s %s has no field %s (in %s): %s", apiVersion, kind, missing, f.Path, f.Use))
		}
	}
	return problems, nil
}

// openAPIDoc is the part of an OpenAPI v3 document the check reads.
type openAPIDoc struct {
	Components struct {
		Schemas map[string]*openAPISchema `json:"schemas"`
	} `json:"components"`
}

type openAPISchema struct {
	Ref        string                    `json:"$ref"`
	AllOf      []*openAPISchema          `json:"allOf"`
	Properties map[string]*openAPISchema `json:"properties"`
	Items      *openAPISchema            `json:"items"`
}

// resolve follows a schema's reference (directly or as its single allOf).
func (d openAPIDoc) resolve(s *openAPISchema) *openAPISchema {
	for range 32 { // a cycle of references ends here
		switch {
		case s == nil:
			return nil
		case s.Ref != "":
			s = d.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
		case len(s.AllOf) == 1 && s.Properties == nil && s.Items == nil:
			s = s.AllOf[0]
		default:
			return s
		}
	}
	return nil
}

// missing is the first step of path the schema lacks (or whose schema cannot be resolved), as
// the path up to it ("" when the whole path exists).
func (d openAPIDoc) missing(s *openAPISchema, path string) string {
	var walked []string
	s = d.resolve(s)
	for _, step := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(step, "[]")
		walked = append(walked, step)
		if s = d.resolve(s.Properties[name]); s == nil {
			return strings.Join(walked, ".")
		}
		if list {
			if s = d.resolve(s.Items); s == nil {
				return strings.Join(walked, ".")
			}
		}
	}
	return ""
}
