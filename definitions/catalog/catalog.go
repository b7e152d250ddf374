// Package catalog holds workmap's tested WorkloadDefinitions, one YAML file per framework,
// and beside them the definitions of Kubernetes' own kinds that workmap-scheduler gangs with
// its built-in groupers; every binary embeds them.
//
// The YAML files in this folder are the catalog's source. Binaries embed catalog.json, which
// `make generate` writes from them (FromSources), because every command reads the whole
// catalog when it starts and decoding JSON takes a tenth of the time decoding the YAML does.
// The package's tests fail when catalog.json is not what the YAML files give.
package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// GeneratedFile is the file in this folder that holds the catalog as binaries embed it.
const GeneratedFile = "catalog.json"

//go:embed catalog.json
var generated []byte

// Catalog is every definition of the catalog.
type Catalog struct {
	// Frameworks are the frameworks' definitions, sorted by file name.
	Frameworks []*v1alpha1.WorkloadDefinition `json:"frameworks"`
	// Kubernetes are the definitions of Kubernetes' own kinds, sorted by file name.
	Kubernetes []*v1alpha1.WorkloadDefinition `json:"kubernetes"`
}

// FromSources decodes the catalog from its YAML files in dir (this package's folder): the
// frameworks' *.yaml and Kubernetes' own kinds' kubernetes/*.yaml.
func FromSources(dir fs.FS) (*Catalog, error) {
	frameworks, err := decodeAll(dir, "*.yaml")
	if err != nil {
		return nil, err
	}
	kubernetes, err := decodeAll(dir, "kubernetes/*.yaml")
	if err != nil {
		return nil, err
	}
	return &Catalog{Frameworks: frameworks, Kubernetes: kubernetes}, nil
}

// JSON is the catalog as GeneratedFile holds it.
func (c *Catalog) JSON() ([]byte, error) {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func decodeAll(dir fs.FS, pattern string) ([]*v1alpha1.WorkloadDefinition, error) {
	names, err := fs.Glob(dir, pattern)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*v1alpha1.WorkloadDefinition
	for _, n := range names {
		data, err := fs.ReadFile(dir, n)
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

// embedded decodes the catalog binaries embed, anew on each call (callers may change what
// they get).
func embedded() (*Catalog, error) {
	var c Catalog
	dec := json.NewDecoder(bytes.NewReader(generated))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("the embedded catalog (%s) does not decode, run `make generate`: %w", GeneratedFile, err)
	}
	return &c, nil
}

// Raw returns the catalog's definitions of frameworks as decoded, sorted by file name.
func Raw() ([]*v1alpha1.WorkloadDefinition, error) {
	c, err := embedded()
	if err != nil {
		return nil, err
	}
	return c.Frameworks, nil
}

// KubernetesKinds returns the definitions of Kubernetes' own kinds that workmap-scheduler
// gangs with its built-in groupers (a batch Job, a pod on its own), sorted by file name. The
// scheduler groups these kinds in Go and does not read these definitions: they describe the
// kinds to the commands (tree, get, groups, serve) as the frameworks' definitions describe
// theirs, and their tests hold their gangs to be the groupers'.
func KubernetesKinds() ([]*v1alpha1.WorkloadDefinition, error) {
	c, err := embedded()
	if err != nil {
		return nil, err
	}
	return c.Kubernetes, nil
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
	c, err := embedded()
	if err != nil {
		return nil, err
	}
	reg := definitions.NewRegistry()
	reg.AddUncompiled(c.Frameworks...)
	reg.AddUncompiled(c.Kubernetes...)
	return reg, nil
}
