// Package catalog embeds workmap's tested WorkloadDefinitions, one YAML file per framework,
// into every binary, and beside them the definitions of Kubernetes' own kinds that
// workmap-scheduler gangs with its built-in groupers.
package catalog

import (
	"embed"
	"io/fs"
	"sort"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

//go:embed *.yaml
var files embed.FS

//go:embed kubernetes/*.yaml
var kubernetesFiles embed.FS

// Raw returns the catalog's definitions of frameworks as decoded, sorted by file name.
func Raw() ([]*v1alpha1.WorkloadDefinition, error) {
	return decodeAll(files, "*.yaml")
}

// KubernetesKinds returns the definitions of Kubernetes' own kinds that workmap-scheduler
// gangs with its built-in groupers (a batch Job, a pod on its own), sorted by file name. The
// scheduler groups these kinds in Go and does not read these definitions: they describe the
// kinds to the commands (tree, get, groups, serve) as the frameworks' definitions describe
// theirs, and their tests hold their gangs to be the groupers'.
func KubernetesKinds() ([]*v1alpha1.WorkloadDefinition, error) {
	return decodeAll(kubernetesFiles, "kubernetes/*.yaml")
}

func decodeAll(fsys embed.FS, pattern string) ([]*v1alpha1.WorkloadDefinition, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*v1alpha1.WorkloadDefinition
	for _, n := range names {
		data, err := fsys.ReadFile(n)
		if err != nil {
			return nil, err
		}
		defs, err := definitions.Decode(data, "catalog/"+n)
		if err != nil {
			return nil, err
		}
		out = append(out, defs...)
	}
	return out, nil
}

// Definitions returns the catalog compiled (the frameworks' definitions).
func Definitions() ([]*definitions.Definition, error) {
	raw, err := Raw()
	if err != nil {
		return nil, err
	}
	return definitions.CompileAll(raw, nil)
}

// Registry returns a registry holding the catalog, for callers to layer other definitions on.
// Each definition is compiled when first looked up (a command that reads one JobSet compiles
// one definition); the catalog's tests compile them all. Long-running callers that want every
// definition compiled at start use Definitions.
func Registry() (*definitions.Registry, error) {
	raw, err := Raw()
	if err != nil {
		return nil, err
	}
	reg := definitions.NewRegistry()
	reg.AddUncompiled(raw...)
	return reg, nil
}

// WithKubernetesKinds returns a registry holding the catalog and the definitions of
// Kubernetes' own kinds (KubernetesKinds): every kind workmap-scheduler gangs is a workload
// to whoever reads it, as the commands do.
func WithKubernetesKinds() (*definitions.Registry, error) {
	reg, err := Registry()
	if err != nil {
		return nil, err
	}
	kinds, err := KubernetesKinds()
	if err != nil {
		return nil, err
	}
	reg.AddUncompiled(kinds...)
	return reg, nil
}
