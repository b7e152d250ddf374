package karta

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/manifest"
)

// The input kinds Convert accepts.
var inputKinds = map[schema.GroupVersionKind]bool{
	{Group: "run.ai", Version: "v1alpha1", Kind: "Karta"}:                              true,
	{Group: "optimization.nvidia.com", Version: "v1alpha1", Kind: "ResourceInterface"}: true,
}

// Convert converts every Karta and ResourceInterface document of a (multi-document) YAML or
// JSON manifest; other kinds are ignored. It fails only when the manifest cannot be parsed,
// holds no Karta, or a Karta does not have the shape of the format. A document that cannot be
// converted at all gives a Result without Definition; everything left out or changed in
// meaning is in Result.Issues.
func Convert(data []byte, source string) ([]Result, error) {
	docs, err := manifest.Read(data, source)
	if err != nil {
		return nil, err
	}
	var out []Result
	var others []string
	for _, d := range docs {
		gvk := d.Object.GroupVersionKind()
		if !inputKinds[gvk] {
			if gvk.Kind == "Karta" || gvk.Kind == "ResourceInterface" {
				return nil, fmt.Errorf("%s: %s %q: unsupported apiVersion %s (want run.ai/v1alpha1 Karta or optimization.nvidia.com/v1alpha1 ResourceInterface)", d.Where(), gvk.Kind, d.Object.GetName(), d.Object.GetAPIVersion())
			}
			others = append(others, gvk.Kind)
			continue
		}
		res, err := convertDocument(d)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	if len(out) == 0 {
		found := "no objects"
		if len(others) > 0 {
			found = strings.Join(others, ", ")
		}
		return nil, fmt.Errorf("%s: no Karta (run.ai/v1alpha1) or ResourceInterface (optimization.nvidia.com/v1alpha1) in the file (found: %s)", source, found)
	}
	return out, nil
}

func convertDocument(d manifest.Document) (Result, error) {
	raw, err := json.Marshal(d.Object.Object)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", d.Where(), err)
	}
	var doc Document
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Result{}, fmt.Errorf("%s: %s %q: %s", d.Where(), d.Object.GetKind(), d.Object.GetName(), strings.TrimPrefix(err.Error(), "json: "))
	}
	cv := &converter{is: &issues{}, roleNames: map[string]bool{}, byName: map[string]*component{}}
	def := cv.convert(&doc)
	unknownFields(d.Object.Object, reflect.TypeFor[Document](), nil, cv.is)
	res := Result{Source: d.Where(), Name: doc.Metadata.Name, Definition: def, Issues: *cv.is}
	if def != nil {
		if _, err := definitions.Compile(def, definitions.CompileOptions{}); err != nil {
			res.Err = err
		}
	}
	return res, nil
}

// converter holds the state of converting one document.
type converter struct {
	is         *issues
	roleNames  map[string]bool
	comps      []*component
	byName     map[string]*component
	rootKind   string
	rootName   string
	childKinds []string
}

func (cv *converter) convert(doc *Document) *v1alpha1.WorkloadDefinition {
	sd := &doc.Spec.StructureDefinition
	sf := field.NewPath("spec", "structureDefinition")
	root, rf := &sd.RootComponent, sf.Child("rootComponent")
	if root.Kind == nil || root.Kind.Kind == "" || root.Kind.Version == "" {
		cv.is.notConverted(rf.Child("kind").String(), "the root component needs a kind with a version: nothing is converted")
		return nil
	}
	cv.rootKind, cv.rootName = root.Kind.Kind, root.Name
	cv.add(root, rf)
	for i := range sd.ChildComponents {
		c := &sd.ChildComponents[i]
		if c.Kind != nil {
			cv.childKinds = append(cv.childKinds, c.Kind.Kind)
		}
		cv.add(c, sf.Child("childComponents").Index(i))
	}
	for _, cp := range cv.comps {
		cv.convertRole(cp)
	}
	cv.inheritReplicaSelectors()

	gvk := schema.GroupVersionKind{Group: root.Kind.Group, Version: root.Kind.Version, Kind: root.Kind.Kind}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	name := plural.Resource
	if gvk.Group != "" {
		name += "." + gvk.Group
	}
	def := &v1alpha1.WorkloadDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "WorkloadDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.WorkloadDefinitionSpec{
			Workload: v1alpha1.WorkloadType{Group: gvk.Group, Kind: gvk.Kind, Versions: []string{gvk.Version}},
		},
	}
	for _, cp := range cv.comps {
		if cp.role != nil {
			def.Spec.Roles = append(def.Spec.Roles, *cp.role)
		}
	}
	if len(def.Spec.Roles) == 0 {
		cv.is.notConverted(sf.String(), "no component has a specDefinition that could be converted: a workmap definition needs at least one role, so nothing is converted")
		return nil
	}
	def.Spec.Children = cv.children(sd, sf)
	def.Spec.Status = cv.convertStatus(root.StatusDefinition, rf.Child("statusDefinition"))
	for _, cp := range cv.comps[1:] {
		if cp.c.StatusDefinition != nil {
			cv.is.notConverted(cp.field.Child("statusDefinition").String(), "workmap's status comes from the root object (rules may read `children` in live mode): the status of component %s is not converted", cp.c.Name)
		}
	}
	var gs *GangScheduling
	if oi := doc.Spec.OptimizationInstructions; oi != nil {
		gs = oi.GangScheduling
	}
	g := cv.convertGang(gs, field.NewPath("spec", "optimizationInstructions", "gangScheduling"))
	if len(g.groups) > 0 {
		def.Spec.Gang = &v1alpha1.Gang{Groups: g.groups}
	}
	if g.nameLabel != "" {
		def.Spec.Pods = &v1alpha1.PodSelection{Selector: fmt.Sprintf("{%s: self.metadata.name}", celString(g.nameLabel))}
		cv.is.changed(g.nameLabelField, "live pods are found by their label %s, taken to be the workload's name (Karta follows owner references)", g.nameLabel)
	}
	return def
}

// add registers a component; a duplicate name is reported and skipped.
func (cv *converter) add(c *Component, f *field.Path) {
	if _, dup := cv.byName[c.Name]; dup {
		cv.is.notConverted(f.Child("name").String(), "duplicate component name %q: component not converted", c.Name)
		return
	}
	cp := &component{c: c, field: f}
	cv.comps = append(cv.comps, cp)
	cv.byName[c.Name] = cp
}

// inheritReplicaSelectors gives roles without a replicaSelector the one of their nearest
// owner (e.g. a LeaderWorkerSet's virtual group component), and reports selectors no role uses.
func (cv *converter) inheritReplicaSelectors() {
	for _, cp := range cv.comps {
		if cp.role == nil || cp.role.PodReplica != "" || (cp.c.PodSelector != nil && cp.c.PodSelector.ReplicaSelector != nil) {
			continue
		}
		owner := cp.c.OwnerRef
		for hops := 0; owner != nil && hops < len(cv.comps); hops++ {
			anc := cv.byName[*owner]
			if anc == nil {
				break
			}
			if ps := anc.c.PodSelector; ps != nil && ps.ReplicaSelector != nil {
				anc.replicaUsed = true
				cv.podReplica(cp, cp.role, anc, anc.field.Child("podSelector", "replicaSelector", "keyPath"))
				break
			}
			owner = anc.c.OwnerRef
		}
	}
	for _, cp := range cv.comps {
		if ps := cp.c.PodSelector; ps != nil && ps.ReplicaSelector != nil && !cp.replicaUsed {
			cv.is.notConverted(cp.field.Child("podSelector", "replicaSelector").String(), "component %s has no pods and no converted component below it: its replicaSelector is not converted", cp.c.Name)
		}
	}
}

// maxChildren is the CRD's limit on spec.children.
const maxChildren = 16

// children lists the kinds of the child components and additionalChildKinds, once each. Pods
// are left out: workmap finds them through spec.pods and places them in roles.
func (cv *converter) children(sd *StructureDefinition, sf *field.Path) []v1alpha1.ChildKind {
	var out []v1alpha1.ChildKind
	seen := map[GroupVersionKind]bool{}
	kinds := map[string]GroupVersionKind{}
	add := func(k GroupVersionKind, f *field.Path) {
		switch {
		case k.Kind == "" || k.Version == "":
			cv.is.notConverted(f.String(), "a child kind needs a version and a kind: not converted")
			return
		case k.Group == "" && k.Kind == "Pod", seen[k]:
			return
		}
		seen[k] = true
		if other, dup := kinds[k.Kind]; dup {
			cv.is.notConverted(f.String(), "kind %s is also in group %q: children of one kind name in two groups need distinct names; set spec.children[].name by hand", k.Kind, other.Group)
			return
		}
		kinds[k.Kind] = k
		out = append(out, v1alpha1.ChildKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	}
	for i, c := range sd.ChildComponents {
		if c.Kind != nil {
			add(*c.Kind, sf.Child("childComponents").Index(i).Child("kind"))
		}
	}
	for i, k := range sd.AdditionalChildKinds {
		add(k, sf.Child("additionalChildKinds").Index(i))
	}
	if len(out) > maxChildren {
		var dropped []string
		for _, c := range out[maxChildren:] {
			dropped = append(dropped, c.Group+"/"+c.Version+" "+c.Kind)
		}
		cv.is.notConverted(sf.String(), "a definition lists at most %d child kinds: %s not converted", maxChildren, strings.Join(dropped, ", "))
		out = out[:maxChildren]
	}
	return out
}
