package main

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/catalog"
)

var workloadDefinitions = v1alpha1.SchemeGroupVersion.WithResource("workloaddefinitions")

// Where a definition comes from, in increasing precedence: a later layer's definition of a
// kind overrides an earlier one's.
const (
	sourceEmbedded = "embedded"
	sourceCluster  = "cluster"
	sourceFile     = "file"
)

var sourceRank = map[string]int{sourceEmbedded: 0, sourceCluster: 1, sourceFile: 2}

// registry builds the definitions in effect offline: the embedded catalog (with Kubernetes'
// own kinds workmap-scheduler gangs, a Job, a bare pod), overridden by --definitions.
func (o *options) registry() (*definitions.Registry, error) {
	return layeredRegistry(nil, o.definitionDirs)
}

// layeredDefinition is one definition of one layer (the embedded catalog, the cluster, the
// --definitions files) and what became of it.
type layeredDefinition struct {
	source string
	// def is the definition as read; of a cluster object that does not decode (undecoded),
	// only the name is known.
	def       *v1alpha1.WorkloadDefinition
	undecoded bool
	// compiled is the cluster's or a file's definition compiled (the catalog's, known to
	// compile, are compiled when first looked up). When it is invalid, problems say why, one
	// line each, with the field path ("spec.roles[0].replicas: Invalid value: ..."), and
	// compiled is nil, or the last valid generation its status records.
	compiled *definitions.Definition
	problems []string
	// inEffect is set on the definition each kind uses; overriddenBy is the one that
	// overrides a valid definition that is not in effect.
	inEffect     bool
	overriddenBy *layeredDefinition
}

// valid reports whether the definition compiles.
func (d *layeredDefinition) valid() bool { return d.problems == nil }

// groupKind is the kind the definition describes.
func (d *layeredDefinition) groupKind() schema.GroupKind {
	return schema.GroupKind{Group: d.def.Spec.Workload.Group, Kind: d.def.Spec.Workload.Kind}
}

// status says, in a few words, what became of the definition: In effect, Overridden by
// another layer, or Invalid with its problems.
func (d *layeredDefinition) status() string {
	switch {
	case !d.valid() && d.inEffect:
		return fmt.Sprintf("Invalid: %s; its generation %d, the last valid one, is in effect", strings.Join(d.problems, "; "), d.compiled.Source.Generation)
	case !d.valid():
		return "Invalid: " + strings.Join(d.problems, "; ")
	case d.inEffect:
		return "In effect"
	case d.overriddenBy != nil:
		by := d.overriddenBy.source
		if d.overriddenBy.def.Name != d.def.Name {
			by += " " + d.overriddenBy.def.Name
		}
		return "Overridden by " + by
	}
	return "Overridden"
}

// layers are the definitions of every layer, with the registry of those in effect.
type layers struct {
	// all are sorted by group, kind, then precedence.
	all      []*layeredDefinition
	registry *definitions.Registry
}

// layerOf returns the layer's entry of a definition (or of the last valid generation one
// keeps in effect).
func (l *layers) layerOf(def *v1alpha1.WorkloadDefinition) *layeredDefinition {
	for _, e := range l.all {
		if e.def == def || (e.compiled != nil && e.compiled.Source == def) {
			return e
		}
	}
	return nil
}

// layered reads every layer: the embedded catalog, the cluster's definitions (when given) and
// the --definitions files, and marks the one in effect for each kind. An invalid file is an
// error, as everywhere; an invalid cluster definition is listed with its problems. The
// catalog's definitions are compiled only when looked up.
func (o *options) layered(fromCluster []*layeredDefinition) (*layers, error) {
	builtin, err := embedded()
	if err != nil {
		return nil, err
	}
	l := &layers{registry: definitions.NewRegistry()}
	for _, d := range builtin {
		l.all = append(l.all, &layeredDefinition{source: sourceEmbedded, def: d})
	}
	l.registry.AddUncompiled(builtin...)
	l.all = append(l.all, fromCluster...)
	for _, d := range fromCluster {
		if d.compiled != nil {
			l.registry.Add(d.compiled)
		}
	}
	if len(o.definitionDirs) > 0 {
		local, err := definitions.LoadFiles(o.definitionDirs...)
		if err != nil {
			return nil, err
		}
		for _, d := range local {
			l.all = append(l.all, &layeredDefinition{source: sourceFile, def: d.Source, compiled: d})
		}
		l.registry.Add(local...)
	}
	for _, d := range l.all {
		if d.compiled == nil && !d.valid() {
			continue
		}
		gk := d.groupKind()
		if d.compiled != nil {
			gk = d.compiled.GroupKind
		}
		winner, _ := l.registry.Source(gk)
		d.inEffect = winner == d.def || (d.compiled != nil && winner == d.compiled.Source)
		if !d.inEffect {
			d.overriddenBy = l.layerOf(winner)
		}
	}
	sort.SliceStable(l.all, func(i, j int) bool {
		a, b := l.all[i], l.all[j]
		if ga, gb := a.groupKind(), b.groupKind(); ga != gb {
			if ga.Group != gb.Group {
				return ga.Group < gb.Group
			}
			return ga.Kind < gb.Kind
		}
		return sourceRank[a.source] < sourceRank[b.source]
	})
	return l, nil
}

// embedded are the definitions every binary embeds: the catalog's frameworks and Kubernetes'
// own kinds that workmap-scheduler gangs.
func embedded() ([]*v1alpha1.WorkloadDefinition, error) {
	frameworks, err := catalog.Raw()
	if err != nil {
		return nil, err
	}
	kinds, err := catalog.KubernetesKinds()
	if err != nil {
		return nil, err
	}
	return append(frameworks, kinds...), nil
}

// rootResource is the resource of a definition's root kind in one version, named offline
// from the definition (its <plural>.<group> name). With a cluster at hand, prefer
// (*workloadReader).servedRoot or the reader's mapper, which read the name from discovery.
func rootResource(d *definitions.Definition, version string) schema.GroupVersionResource {
	return d.GroupKind.WithVersion(version).GroupVersion().WithResource(definitionPlural(d))
}
