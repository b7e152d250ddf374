// Package crdschema reads CustomResourceDefinitions and answers the two questions definition
// linting asks of a schema: does this path exist, and what CEL type is at it. It builds on
// apiextensions-apiserver's structural schemas and their CEL declarations.
package crdschema

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions/paths"
)

// CRD is the schema of one custom resource kind, per served version.
type CRD struct {
	Group    string
	Kind     string
	Plural   string
	Versions map[string]*structuralschema.Structural
}

// Parse reads every CustomResourceDefinition in a (multi-document) YAML or JSON stream.
// Other documents are ignored.
func Parse(data []byte) ([]*CRD, error) {
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*CRD
	for i := 0; ; i++ {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if head.Kind != "CustomResourceDefinition" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(doc, &crd); err != nil {
			if err := yaml.Unmarshal(doc, &crd); err != nil {
				return nil, fmt.Errorf("document %d: %w", i+1, err)
			}
		}
		c, err := fromCRD(&crd)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func fromCRD(crd *apiextensionsv1.CustomResourceDefinition) (*CRD, error) {
	c := &CRD{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind, Plural: crd.Spec.Names.Plural, Versions: map[string]*structuralschema.Structural{}}
	for _, v := range crd.Spec.Versions {
		props := v.Schema
		if !v.Served || props == nil || props.OpenAPIV3Schema == nil {
			continue
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props.OpenAPIV3Schema, &internal, nil); err != nil {
			return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return nil, fmt.Errorf("CRD %s version %s: schema is not structural: %w", crd.Name, v.Name, err)
		}
		c.Versions[v.Name] = s
	}
	return c, nil
}

// objectMeta is the part of ObjectMeta definitions may read, which CRD schemas leave out
// (the API server validates metadata itself).
func objectMeta() structuralschema.Structural {
	str := structuralschema.Structural{Generic: structuralschema.Generic{Type: "string"}}
	strMap := structuralschema.Structural{Generic: structuralschema.Generic{Type: "object"}, AdditionalProperties: &structuralschema.StructuralOrBool{Structural: &str}}
	return structuralschema.Structural{
		Generic: structuralschema.Generic{Type: "object"},
		Properties: map[string]structuralschema.Structural{
			"name": str, "generateName": str, "namespace": str, "uid": str, "resourceVersion": str,
			"creationTimestamp": str, "deletionTimestamp": str,
			"generation":  {Generic: structuralschema.Generic{Type: "integer"}},
			"labels":      strMap,
			"annotations": strMap,
		},
	}
}

// withObjectMeta returns s with full metadata at its root and at every embedded resource.
func withObjectMeta(s *structuralschema.Structural, root bool) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	out := *s
	if root || s.XEmbeddedResource {
		props := make(map[string]structuralschema.Structural, len(s.Properties)+3)
		for k, v := range s.Properties {
			props[k] = v
		}
		str := structuralschema.Structural{Generic: structuralschema.Generic{Type: "string"}}
		props["apiVersion"], props["kind"], props["metadata"] = str, str, objectMeta()
		out.Properties = props
	}
	if len(out.Properties) > 0 {
		props := make(map[string]structuralschema.Structural, len(out.Properties))
		for k, v := range out.Properties {
			if k == "metadata" && (root || s.XEmbeddedResource) {
				props[k] = v
				continue
			}
			props[k] = *withObjectMeta(&v, false)
		}
		out.Properties = props
	}
	if out.Items != nil {
		out.Items = withObjectMeta(out.Items, false)
	}
	if out.AdditionalProperties != nil && out.AdditionalProperties.Structural != nil {
		out.AdditionalProperties = &structuralschema.StructuralOrBool{Bool: out.AdditionalProperties.Bool, Structural: withObjectMeta(out.AdditionalProperties.Structural, false)}
	}
	return &out
}

// Root returns the schema of one version with the object metadata fields definitions use.
func (c *CRD) Root(version string) (*structuralschema.Structural, bool) {
	s, ok := c.Versions[version]
	if !ok {
		return nil, false
	}
	return withObjectMeta(s, true), true
}

// DeclType returns the CEL type of a schema (nil when the schema is nil or exposes nothing to
// CEL). Parts of the schema that preserve unknown fields are dynamic: definitions may read
// anything there, as Lookup allows (Kubernetes' validation rules cannot see unknown fields).
func DeclType(s *structuralschema.Structural) *apiservercel.DeclType {
	if s == nil { // Lookup's answer under preserve-unknown-fields
		return nil
	}
	return model.SchemaDeclType(unknownAsDyn(s), false)
}

// unknownAsDyn returns s with every part that preserves unknown fields marked
// x-kubernetes-int-or-string, the marker SchemaDeclType turns into dyn.
func unknownAsDyn(s *structuralschema.Structural) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	out := *s
	if s.XPreserveUnknownFields {
		out.XIntOrString = true
		return &out
	}
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]structuralschema.Structural, len(s.Properties))
		for k, v := range s.Properties {
			out.Properties[k] = *unknownAsDyn(&v)
		}
	}
	out.Items = unknownAsDyn(s.Items)
	if ap := s.AdditionalProperties; ap != nil && ap.Structural != nil {
		out.AdditionalProperties = &structuralschema.StructuralOrBool{Bool: ap.Bool, Structural: unknownAsDyn(ap.Structural)}
	}
	return &out
}

// WithField returns a copy of the CRD whose schema of version has one more field, untyped
// (any value, dynamic in CEL), at p: its parent must be in the schema and the field must not.
// It lets a definition that reads a field newer than a given release be checked against that
// release's CRD for everything else.
func (c *CRD) WithField(version string, p paths.Path) (*CRD, error) {
	s, ok := c.Versions[version]
	if !ok {
		return nil, fmt.Errorf("the CRD of %s/%s does not serve version %s", c.Group, c.Kind, version)
	}
	added, err := withField(*s, p.Steps())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	out := *c
	out.Versions = maps.Clone(c.Versions)
	out.Versions[version] = &added
	return &out, nil
}

func withField(s structuralschema.Structural, steps []paths.Step) (structuralschema.Structural, error) {
	step := steps[0]
	if len(steps) == 1 {
		if step.Kind != paths.Field {
			return s, fmt.Errorf("the field to add must be named")
		}
		if _, ok := s.Properties[step.Name]; ok {
			return s, fmt.Errorf("field %q is in the schema already", step.Name)
		}
		s.Properties = maps.Clone(s.Properties)
		if s.Properties == nil {
			s.Properties = map[string]structuralschema.Structural{}
		}
		s.Properties[step.Name] = structuralschema.Structural{Extensions: structuralschema.Extensions{XPreserveUnknownFields: true}}
		return s, nil
	}
	switch step.Kind {
	case paths.Field:
		prop, ok := s.Properties[step.Name]
		if !ok {
			return s, fmt.Errorf("field %q is not in the schema", step.Name)
		}
		next, err := withField(prop, steps[1:])
		if err != nil {
			return s, err
		}
		s.Properties = maps.Clone(s.Properties)
		s.Properties[step.Name] = next
	default:
		if s.Items == nil {
			return s, fmt.Errorf("an index or [*] needs an array")
		}
		next, err := withField(*s.Items, steps[1:])
		if err != nil {
			return s, err
		}
		s.Items = &next
	}
	return s, nil
}

// ReadFiles parses the CRDs of every file, keyed by group/kind. A file without a
// CustomResourceDefinition is an error, naming it.
func ReadFiles(files []string) (map[string]*CRD, error) {
	out := map[string]*CRD{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crds, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if len(crds) == 0 {
			return nil, fmt.Errorf("%s: no CustomResourceDefinition in the file", f)
		}
		for _, c := range crds {
			out[c.Group+"/"+c.Kind] = c
		}
	}
	return out, nil
}
