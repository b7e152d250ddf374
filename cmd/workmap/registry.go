package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/internal/access"
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
	return o.buildRegistry(nil)
}

// buildRegistry layers the catalog, then the cluster's definitions (when given), then files.
func (o *options) buildRegistry(fromCluster []*definitions.Definition) (*definitions.Registry, error) {
	reg, err := catalog.WithKubernetesKinds()
	if err != nil {
		return nil, err
	}
	reg.Add(fromCluster...)
	if len(o.definitionDirs) > 0 {
		local, err := definitions.LoadFiles(o.definitionDirs...)
		if err != nil {
			return nil, err
		}
		reg.Add(local...)
	}
	return reg, nil
}

// liveRegistry adds the WorkloadDefinitions installed in the cluster. A cluster without the
// CRD simply has none; a user not allowed to list them is warned, once, that only the
// embedded catalog (and --definitions) is in effect; an invalid one is skipped with a warning
// per problem, or, when its status records its last valid generation (workmap-scheduler keeps
// that one in effect), that generation is used, with the same warnings saying so.
func (o *options) liveRegistry(ctx context.Context, c *cluster) (*definitions.Registry, error) {
	fromCluster, err := o.clusterDefinitions(ctx, c)
	if err != nil {
		return nil, err
	}
	if c.definitionsRefused != nil {
		fmt.Fprintf(o.errOut, "warning: %s: %s\n", o.definitionsInEffect(), c.definitionsRefused.Message())
	}
	var valid []*definitions.Definition
	for _, d := range fromCluster {
		if !d.valid() {
			o.warnInvalid(d)
		}
		if d.compiled != nil {
			valid = append(valid, d.compiled)
		}
	}
	return o.buildRegistry(valid)
}

// warnInvalid prints one warning line for each problem of an invalid cluster definition.
func (o *options) warnInvalid(d *layeredDefinition) {
	what := "skipped"
	if d.compiled != nil {
		what = fmt.Sprintf("its generation %d, the last valid one, is used instead, as workmap-scheduler does", d.compiled.Source.Generation)
	}
	for _, p := range d.problems {
		fmt.Fprintf(o.errOut, "warning: WorkloadDefinition %s in the cluster is invalid, %s: %s\n", d.def.Name, what, p)
	}
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

// definitionsInEffect says, for a user who may not read the cluster's WorkloadDefinitions,
// which definitions are used instead.
func (o *options) definitionsInEffect() string {
	if len(o.definitionDirs) > 0 {
		return "the cluster's WorkloadDefinitions could not be read, so only the embedded catalog's definitions and --definitions are used"
	}
	return "the cluster's WorkloadDefinitions could not be read, so only the embedded catalog's definitions are used"
}

// definitionsNote is what a message that no definition describes a kind adds when the
// cluster's WorkloadDefinitions could not be read ("" when they were): one of them may.
func (c *cluster) definitionsNote() string {
	if c.definitionsRefused == nil {
		return ""
	}
	return fmt.Sprintf(" (only the embedded catalog's and --definitions were looked at: the cluster's WorkloadDefinitions could not be read, %s)", c.definitionsRefused.Short())
}

// clusterDefinitions reads and compiles the WorkloadDefinitions installed in the cluster, in
// the API server's order (by name). A cluster without the CRD simply has none; when the user
// may not list them there are none either, and c.definitionsRefused says why.
func (o *options) clusterDefinitions(ctx context.Context, c *cluster) ([]*layeredDefinition, error) {
	list, err := c.dynamic.Resource(workloadDefinitions).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err):
		c.definitionsRefused = access.New("list", workloadDefinitions.GroupResource(), "", err)
		return nil, nil
	default:
		return nil, c.explain(err)
	}
	out := make([]*layeredDefinition, 0, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		d := &layeredDefinition{source: sourceCluster, def: &v1alpha1.WorkloadDefinition{}}
		out = append(out, d)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, d.def); err != nil {
			d.def = &v1alpha1.WorkloadDefinition{ObjectMeta: metav1.ObjectMeta{Name: item.GetName()}}
			d.undecoded = true
			d.problems = []string{err.Error()}
			continue
		}
		if d.compiled, err = definitions.Compile(d.def, definitions.CompileOptions{}); err != nil {
			d.problems = problems(err)
			d.compiled = definitions.CompileLastValid(d.def, definitions.CompileOptions{})
		}
	}
	return out, nil
}

// problems lists what is wrong with a definition, one line each with its field path.
func problems(err error) []string {
	var de *definitions.DefinitionError
	if !errors.As(err, &de) || len(de.Errors) == 0 {
		return []string{err.Error()}
	}
	out := make([]string, len(de.Errors))
	for i, e := range de.Errors {
		out[i] = e.Error()
	}
	return out
}

// rootResource is the resource of a definition's root kind in one version, named offline
// from the definition (its <plural>.<group> name). With a cluster at hand, prefer
// (*cluster).servedRoot or c.mapper, which read the name from discovery.
func rootResource(d *definitions.Definition, version string) schema.GroupVersionResource {
	return d.GroupKind.WithVersion(version).GroupVersion().WithResource(definitionPlural(d))
}
