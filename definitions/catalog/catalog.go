// Package catalog embeds workmap's tested WorkloadDefinitions, one YAML file per framework,
// into every binary.
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

// Raw returns the catalog's definitions as decoded, sorted by file name.
func Raw() ([]*v1alpha1.WorkloadDefinition, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*v1alpha1.WorkloadDefinition
	for _, n := range names {
		data, err := files.ReadFile(n)
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

// Definitions returns the catalog compiled.
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
