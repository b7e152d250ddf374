package main

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// definitionNamed finds the definition a kind names offline, from the definitions' own names:
// the kind (`JobSet`, `jobset`), the definition's plural (`jobsets`), each alone or followed
// by the group (`jobsets.jobset.x-k8s.io`) or by version and group
// (`jobsets.v1alpha2.jobset.x-k8s.io`). Against a cluster, (*workloadReader).kindNamed reads
// the names from discovery instead, short names and categories included.
func definitionNamed(reg *definitions.Registry, arg string) (*definitions.Definition, error) {
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
