package definitions

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/manifest"
)

// Decode reads the WorkloadDefinitions of a manifest (other kinds are ignored). Unknown
// fields are errors, so a typo never silently disables part of a definition.
func Decode(data []byte, source string) ([]*v1alpha1.WorkloadDefinition, error) {
	docs, err := manifest.Read(data, source)
	if err != nil {
		return nil, err
	}
	var out []*v1alpha1.WorkloadDefinition
	for _, d := range docs {
		gvk := d.Object.GroupVersionKind()
		if gvk.Group != v1alpha1.SchemeGroupVersion.Group || gvk.Kind != "WorkloadDefinition" {
			continue
		}
		if gvk.Version != v1alpha1.SchemeGroupVersion.Version {
			return nil, fmt.Errorf("%s: unsupported version %s of WorkloadDefinition (want %s)", d.Where(), gvk.Version, v1alpha1.SchemeGroupVersion.Version)
		}
		raw := d.Raw
		if raw == nil { // an item of a List: the manifest keeps only the decoded object
			if raw, err = json.Marshal(d.Object.Object); err != nil {
				return nil, fmt.Errorf("%s: WorkloadDefinition %q: %w", d.Where(), d.Object.GetName(), err)
			}
		}
		var def v1alpha1.WorkloadDefinition
		if err := yaml.UnmarshalStrict(raw, &def); err != nil {
			return nil, fmt.Errorf("%s: WorkloadDefinition %q: %s", d.Where(), d.Object.GetName(), strings.TrimPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: "))
		}
		out = append(out, &def)
	}
	return out, nil
}

// LoadFiles decodes and compiles the definitions in files and directories (every *.yaml,
// *.yml and *.json file of a directory, not recursive). Every error names its file.
func LoadFiles(names ...string) ([]*Definition, error) {
	var files []string
	for _, n := range names {
		st, err := os.Stat(n)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, n)
			continue
		}
		entries, err := os.ReadDir(n)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml", ".json":
				files = append(files, filepath.Join(n, e.Name()))
			}
		}
	}
	sort.Strings(files)
	var raw []*v1alpha1.WorkloadDefinition
	var sources []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		defs, err := Decode(data, f)
		if err != nil {
			return nil, err
		}
		raw = append(raw, defs...)
		for range defs {
			sources = append(sources, f)
		}
	}
	return CompileAll(raw, sources)
}

// CompileAll validates a set of definitions used together (no duplicate group/kind) and
// compiles each; sources name where each came from for error messages.
func CompileAll(defs []*v1alpha1.WorkloadDefinition, sources []string) ([]*Definition, error) {
	if err := ValidateSet(defs); err != nil {
		return nil, err
	}
	out := make([]*Definition, 0, len(defs))
	for i, def := range defs {
		d, err := Compile(def, CompileOptions{})
		if err != nil {
			if i < len(sources) {
				return nil, fmt.Errorf("%s: %w", sources[i], err)
			}
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
