package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
)

// servedKind is a workload kind the cluster serves, with the resource its objects are read
// through.
type servedKind struct {
	def      *definitions.Definition
	resource schema.GroupVersionResource
}

// name is how kubectl names the kind's resource: `jobsets.jobset.x-k8s.io`.
func (k servedKind) name() string { return k.resource.GroupResource().String() }

// kindNamed finds the kind a name means and its definition exactly as kubectl resolves the
// name: through discovery and the REST mapper, so short names (`lws`), singular and plural
// names, kinds, `resource.group` and `resource.version.group` work, and a name several groups
// serve means what it means to kubectl (`services` is the core Service). When the kind it
// means has no definition, the error names the definitions the user may have meant.
func (r *workloadReader) kindNamed(ctx context.Context, arg string) (servedKind, error) {
	reg, err := r.registry(ctx)
	if err != nil {
		return servedKind{}, err
	}
	mapping, explicitVersion, err := mappingFor(r.mapper, arg)
	if err != nil {
		if !meta.IsNoMatchError(err) {
			return servedKind{}, r.explain(err)
		}
		if d, derr := definitionNamed(reg, arg); derr == nil {
			return servedKind{}, notInstalled(d)
		}
		return servedKind{}, fmt.Errorf("unknown workload kind %q: the cluster serves no resource of that name and no definition names it%s; see `workmap catalog list`, or pass --definitions", arg, r.definitionsNote())
	}
	gk := mapping.GroupVersionKind.GroupKind()
	others := r.otherKinds(arg, gk)
	def, ok := reg.Lookup(gk)
	if !ok {
		var suggestions []string
		for _, o := range others {
			if _, ok := reg.Lookup(o.kind); ok {
				suggestions = append(suggestions, r.spellings(o.resource))
			}
		}
		meaning := fmt.Sprintf("%q means %s (%s), as in kubectl", arg, kindText(gk), mapping.Resource.GroupResource())
		if len(suggestions) > 0 {
			return servedKind{}, fmt.Errorf("%s, and no definition describes that kind%s; for the workload kind of the same name use %s", meaning, r.definitionsNote(), strings.Join(suggestions, "; or "))
		}
		if r.definitionsRefused != nil {
			return servedKind{}, fmt.Errorf("%s; the cluster's WorkloadDefinitions could not be read (%s), and neither the embedded catalog nor --definitions describes that kind; %s", meaning, r.definitionsRefused.Short(), r.definitionsRefused.Role())
		}
		return servedKind{}, fmt.Errorf("%s, and no definition describes that kind; see `workmap catalog list`, or pass --definitions", meaning)
	}
	if len(others) > 0 {
		names := make([]string, len(others))
		for i, o := range others {
			names[i] = o.resource.String()
		}
		r.warnf("%q also names %s; using %s as kubectl does", arg, strings.Join(names, ", "), mapping.Resource.GroupResource())
	}
	if explicitVersion {
		return servedKind{def: def, resource: mapping.Resource}, nil
	}
	k, ok, err := r.servedRoot(def)
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
func (r *workloadReader) otherKinds(arg string, picked schema.GroupKind) []otherKind {
	_, gr := schema.ParseResourceArg(strings.ToLower(arg))
	if gr.Group != "" {
		return nil
	}
	gvks, err := r.mapper.KindsFor(gr.WithVersion(""))
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
		m, err := r.mapper.RESTMapping(gk, gvk.Version)
		if err != nil {
			continue
		}
		out = append(out, otherKind{kind: gk, resource: m.Resource.GroupResource()})
	}
	return out
}

// spellings are the unambiguous names of a resource: `services.serving.knative.dev / ksvc`
// (a short name another resource also uses, or uses as its name, is left out).
func (r *workloadReader) spellings(gr schema.GroupResource) string {
	names := []string{gr.String()}
	_, lists, _ := r.discovery.ServerGroupsAndResources()
	owners := map[string]map[schema.GroupResource]bool{} // name or short name → resources using it
	use := func(name string, res schema.GroupResource) {
		if owners[name] == nil {
			owners[name] = map[schema.GroupResource]bool{}
		}
		owners[name][res] = true
	}
	var shorts []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, api := range l.APIResources {
			if strings.Contains(api.Name, "/") {
				continue // a subresource
			}
			res := gv.WithResource(api.Name).GroupResource()
			use(api.Name, res)
			use(api.SingularName, res)
			for _, short := range api.ShortNames {
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

// servedRoot finds the resource the cluster serves a definition's kind as: in the first of
// the definition's versions the cluster serves, else in the cluster's preferred version (the
// expansion then warns that the definition was not tested with it). ok is false when the
// cluster does not serve the kind at all. Discovery is read once per command, cached on disk
// like kubectl's and refreshed when a kind is missing from the cache.
func (r *workloadReader) servedRoot(d *definitions.Definition) (servedKind, bool, error) {
	m, err := r.mapper.RESTMapping(d.GroupKind, d.Source.Spec.Workload.Versions...)
	if meta.IsNoMatchError(err) {
		m, err = r.mapper.RESTMapping(d.GroupKind)
	}
	switch {
	case meta.IsNoMatchError(err):
		return servedKind{}, false, nil
	case err != nil:
		return servedKind{}, false, r.explain(err)
	}
	return servedKind{def: d, resource: m.Resource}, true, nil
}

// servedKinds are the kinds of the definitions in effect the cluster serves, in the
// registry's order.
func (r *workloadReader) servedKinds(ctx context.Context) ([]servedKind, error) {
	reg, err := r.registry(ctx)
	if err != nil {
		return nil, err
	}
	var out []servedKind
	for _, d := range reg.All() {
		k, ok, err := r.servedRoot(d)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, k)
		}
	}
	return out, nil
}

// kindsToList resolves the KIND argument of `get` as kubectl does: a comma-separated list of
// kind names and categories (`all`, `ray`); a category stands for its workload kinds (kinds
// without a definition are not workloads and are left out).
func (r *workloadReader) kindsToList(ctx context.Context, arg string) ([]servedKind, error) {
	reg, err := r.registry(ctx)
	if err != nil {
		return nil, err
	}
	var out []servedKind
	seen := map[string]bool{}
	add := func(k servedKind) {
		if !seen[k.name()] {
			seen[k.name()] = true
			out = append(out, k)
		}
	}
	for _, name := range strings.Split(arg, ",") {
		if name == "" {
			continue
		}
		if resources, ok := r.categories.Expand(name); ok {
			var kinds []servedKind
			var others []string
			for _, gr := range resources {
				gvk, err := r.mapper.KindFor(gr.WithVersion(""))
				if err != nil {
					continue
				}
				d, ok := reg.Lookup(gvk.GroupKind())
				if !ok {
					others = append(others, gr.String())
					continue
				}
				k, ok, err := r.servedRoot(d)
				if err != nil {
					return nil, err
				}
				if ok {
					kinds = append(kinds, k)
				}
			}
			if len(kinds) == 0 {
				sort.Strings(others)
				return nil, fmt.Errorf("category %q has no workload kind a definition describes (it has %s)%s; see `workmap catalog list`", name, orNone(others), r.definitionsNote())
			}
			for _, k := range kinds {
				add(k)
			}
			continue
		}
		k, err := r.kindNamed(ctx, name)
		if err != nil {
			return nil, err
		}
		add(k)
	}
	return out, nil
}
