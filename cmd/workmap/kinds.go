package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// resolveKind finds the definition a kind names offline, from the definitions' own names:
// the kind (`JobSet`, `jobset`), the definition's plural (`jobsets`), each alone or followed
// by the group (`jobsets.jobset.x-k8s.io`) or by version and group
// (`jobsets.v1alpha2.jobset.x-k8s.io`). Against a cluster, (*cluster).resolveKind reads the
// names from discovery instead, short names and categories included.
func resolveKind(reg *definitions.Registry, arg string) (*definitions.Definition, error) {
	lower := strings.ToLower(arg)
	var matches []*v1alpha1.WorkloadDefinition
	for _, s := range reg.Sources() {
		if offlineNames(s)[lower] {
			matches = append(matches, s)
		}
	}
	switch len(matches) {
	case 1:
		d, _ := reg.Lookup(sourceKind(matches[0]))
		return d, nil
	case 0:
		return nil, fmt.Errorf("unknown workload kind %q: no definition for it; see `workmap catalog list`, or pass --definitions", arg)
	}
	var names []string
	for _, s := range matches {
		names = append(names, sourcePlural(s)+"."+s.Spec.Workload.Group)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("kind %q is ambiguous: use one of %s", arg, strings.Join(names, ", "))
}

// sourceKind is the root kind a definition describes.
func sourceKind(s *v1alpha1.WorkloadDefinition) schema.GroupKind {
	return schema.GroupKind{Group: s.Spec.Workload.Group, Kind: s.Spec.Workload.Kind}
}

// offlineNames are the lower-case names a definition answers to without a cluster.
func offlineNames(s *v1alpha1.WorkloadDefinition) map[string]bool {
	group := strings.ToLower(s.Spec.Workload.Group)
	names := map[string]bool{}
	for _, base := range []string{strings.ToLower(s.Spec.Workload.Kind), sourcePlural(s)} {
		names[base] = true
		if group == "" {
			continue
		}
		names[base+"."+group] = true
		for _, v := range s.Spec.Workload.Versions {
			names[base+"."+strings.ToLower(v)+"."+group] = true
		}
	}
	return names
}

// definitionPlural is the plural resource name of a definition's kind as the definition gives
// it: definitions are named <plural>.<group> (`milvuses.milvus.io`); a definition named
// otherwise falls back to the usual English plural of its kind.
func definitionPlural(d *definitions.Definition) string { return sourcePlural(d.Source) }

// sourcePlural is definitionPlural of an uncompiled definition.
func sourcePlural(s *v1alpha1.WorkloadDefinition) string {
	gk := sourceKind(s)
	if gk.Group != "" {
		if plural, ok := strings.CutSuffix(strings.ToLower(s.Name), "."+strings.ToLower(gk.Group)); ok && plural != "" && !strings.Contains(plural, ".") {
			return plural
		}
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gk.WithVersion(""))
	return gvr.Resource
}

// servedKind is a workload kind the cluster serves, with the resource its objects are read
// through.
type servedKind struct {
	def      *definitions.Definition
	resource schema.GroupVersionResource
}

// name is how kubectl names the kind's resource: `jobsets.jobset.x-k8s.io`.
func (k servedKind) name() string { return k.resource.GroupResource().String() }

// resolveKind finds the definition a kind names exactly as kubectl resolves the name: through
// discovery and the REST mapper, so short names (`lws`), singular and plural names, kinds,
// `resource.group` and `resource.version.group` work, and a name several groups serve means
// what it means to kubectl (`services` is the core Service). When the kind it means has no
// definition, the error names the definitions the user may have meant.
func (c *cluster) resolveKind(reg *definitions.Registry, arg string) (servedKind, error) {
	mapping, explicitVersion, err := mappingFor(c.mapper, arg)
	if err != nil {
		if !meta.IsNoMatchError(err) {
			return servedKind{}, c.explain(err)
		}
		if d, derr := resolveKind(reg, arg); derr == nil {
			return servedKind{}, notInstalled(d)
		}
		return servedKind{}, fmt.Errorf("unknown workload kind %q: the cluster serves no resource of that name and no definition names it%s; see `workmap catalog list`, or pass --definitions", arg, c.definitionsNote())
	}
	gk := mapping.GroupVersionKind.GroupKind()
	others := c.otherKinds(arg, gk)
	def, ok := reg.Lookup(gk)
	if !ok {
		var suggestions []string
		for _, o := range others {
			if _, ok := reg.Lookup(o.kind); ok {
				suggestions = append(suggestions, c.spellings(o.resource))
			}
		}
		meaning := fmt.Sprintf("%q means %s (%s), as in kubectl", arg, kindText(gk), mapping.Resource.GroupResource())
		if len(suggestions) > 0 {
			return servedKind{}, fmt.Errorf("%s, and no definition describes that kind%s; for the workload kind of the same name use %s", meaning, c.definitionsNote(), strings.Join(suggestions, "; or "))
		}
		if c.definitionsRefused != nil {
			return servedKind{}, fmt.Errorf("%s; the cluster's WorkloadDefinitions could not be read (%s), and neither the embedded catalog nor --definitions describes that kind; %s", meaning, c.definitionsRefused.Short(), c.definitionsRefused.Role())
		}
		return servedKind{}, fmt.Errorf("%s, and no definition describes that kind; see `workmap catalog list`, or pass --definitions", meaning)
	}
	if len(others) > 0 {
		names := make([]string, len(others))
		for i, o := range others {
			names[i] = o.resource.String()
		}
		c.warnf("%q also names %s; using %s as kubectl does", arg, strings.Join(names, ", "), mapping.Resource.GroupResource())
	}
	if explicitVersion {
		return servedKind{def: def, resource: mapping.Resource}, nil
	}
	k, ok, err := c.servedRoot(def)
	if err != nil {
		return servedKind{}, err
	}
	if !ok {
		return servedKind{}, notInstalled(def)
	}
	return k, nil
}

func notInstalled(d *definitions.Definition) error {
	return fmt.Errorf("%s is not installed in the cluster (no %s in versions %s)", d.GroupKind, definitionPlural(d), strings.Join(d.Source.Spec.Workload.Versions, ", "))
}

func kindText(gk schema.GroupKind) string {
	if gk.Group == "" {
		return "the core kind " + gk.Kind
	}
	return gk.Kind + " of " + gk.Group
}

// otherKind is another kind a plain name (no group) could mean.
type otherKind struct {
	kind     schema.GroupKind
	resource schema.GroupResource
}

// otherKinds are the kinds of other groups that a name without a group also names (the
// kinds kubectl did not pick), in kubectl's order of preference.
func (c *cluster) otherKinds(arg string, picked schema.GroupKind) []otherKind {
	_, gr := schema.ParseResourceArg(strings.ToLower(arg))
	if gr.Group != "" {
		return nil
	}
	gvks, err := c.mapper.KindsFor(gr.WithVersion(""))
	if err != nil {
		return nil
	}
	var out []otherKind
	seen := map[schema.GroupKind]bool{picked: true}
	for _, gvk := range gvks {
		gk := gvk.GroupKind()
		if seen[gk] {
			continue
		}
		seen[gk] = true
		m, err := c.mapper.RESTMapping(gk, gvk.Version)
		if err != nil {
			continue
		}
		out = append(out, otherKind{kind: gk, resource: m.Resource.GroupResource()})
	}
	return out
}

// spellings are the unambiguous names of a resource: `services.serving.knative.dev / ksvc`
// (a short name another resource also uses, or uses as its name, is left out).
func (c *cluster) spellings(gr schema.GroupResource) string {
	names := []string{gr.String()}
	_, lists, _ := c.discovery.ServerGroupsAndResources()
	owners := map[string]map[schema.GroupResource]bool{} // name or short name → resources using it
	use := func(name string, r schema.GroupResource) {
		if owners[name] == nil {
			owners[name] = map[schema.GroupResource]bool{}
		}
		owners[name][r] = true
	}
	var shorts []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			res := gv.WithResource(r.Name).GroupResource()
			use(r.Name, res)
			use(r.SingularName, res)
			for _, short := range r.ShortNames {
				use(short, res)
				if res == gr && !slices.Contains(shorts, short) {
					shorts = append(shorts, short)
				}
			}
		}
	}
	for _, short := range shorts {
		if len(owners[short]) == 1 {
			names = append(names, short)
		}
	}
	return strings.Join(names, " / ")
}

// mappingFor resolves a resource or kind argument as kubectl's resource builder does: as a
// resource first (`jobsets`, `lws`, `jobsets.jobset.x-k8s.io`, `jobsets.v1alpha2.jobset.x-k8s.io`),
// then as a kind (`JobSet`, `JobSet.jobset.x-k8s.io`, `JobSet.v1alpha2.jobset.x-k8s.io`).
// explicitVersion says the argument named the version.
func mappingFor(mapper meta.RESTMapper, arg string) (mapping *meta.RESTMapping, explicitVersion bool, err error) {
	fullySpecifiedGVR, groupResource := schema.ParseResourceArg(arg)
	gvk := schema.GroupVersionKind{}
	if fullySpecifiedGVR != nil {
		if gvk, _ = mapper.KindFor(*fullySpecifiedGVR); !gvk.Empty() {
			explicitVersion = true
		}
	}
	if gvk.Empty() {
		gvk, _ = mapper.KindFor(groupResource.WithVersion(""))
	}
	if !gvk.Empty() {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return m, explicitVersion, err
	}
	fullySpecifiedGVK, groupKind := schema.ParseKindArg(arg)
	if fullySpecifiedGVK == nil {
		gvk := groupKind.WithVersion("")
		fullySpecifiedGVK = &gvk
	}
	if !fullySpecifiedGVK.Empty() {
		if m, err := mapper.RESTMapping(fullySpecifiedGVK.GroupKind(), fullySpecifiedGVK.Version); err == nil {
			return m, fullySpecifiedGVK.Version != "", nil
		}
	}
	m, err := mapper.RESTMapping(groupKind)
	return m, false, err
}
