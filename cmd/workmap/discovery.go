package main

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/workmap/workmap/definitions"
)

// servedRoot finds the resource the cluster serves a definition's kind as: in the first of
// the definition's versions the cluster serves, else in the cluster's preferred version (the
// expansion then warns that the definition was not tested with it). ok is false when the
// cluster does not serve the kind at all. Discovery is read once per command, cached on disk
// like kubectl's and refreshed when a kind is missing from the cache.
func (c *cluster) servedRoot(d *definitions.Definition) (servedKind, bool, error) {
	m, err := c.mapper.RESTMapping(d.GroupKind, d.Source.Spec.Workload.Versions...)
	if meta.IsNoMatchError(err) {
		m, err = c.mapper.RESTMapping(d.GroupKind)
	}
	switch {
	case meta.IsNoMatchError(err):
		return servedKind{}, false, nil
	case err != nil:
		return servedKind{}, false, c.explain(err)
	}
	return servedKind{def: d, resource: m.Resource}, true, nil
}

// servedKinds are the kinds of defs the cluster serves, in the order of defs.
func (c *cluster) servedKinds(defs []*definitions.Definition) ([]servedKind, error) {
	var out []servedKind
	for _, d := range defs {
		k, ok, err := c.servedRoot(d)
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
func (c *cluster) kindsToList(reg *definitions.Registry, arg string) ([]servedKind, error) {
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
		if resources, ok := c.categories.Expand(name); ok {
			var kinds []servedKind
			var others []string
			for _, gr := range resources {
				gvk, err := c.mapper.KindFor(gr.WithVersion(""))
				if err != nil {
					continue
				}
				d, ok := reg.Lookup(gvk.GroupKind())
				if !ok {
					others = append(others, gr.String())
					continue
				}
				k, ok, err := c.servedRoot(d)
				if err != nil {
					return nil, err
				}
				if ok {
					kinds = append(kinds, k)
				}
			}
			if len(kinds) == 0 {
				sort.Strings(others)
				return nil, fmt.Errorf("category %q has no workload kind a definition describes (it has %s)%s; see `workmap catalog list`", name, orNone(others), c.definitionsNote())
			}
			for _, k := range kinds {
				add(k)
			}
			continue
		}
		k, err := c.resolveKind(reg, name)
		if err != nil {
			return nil, err
		}
		add(k)
	}
	return out, nil
}
