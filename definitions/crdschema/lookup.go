package crdschema

import (
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"

	"github.com/workmap/workmap/definitions/paths"
)

// Lookup follows a path through a schema and returns the schema at its end. It returns
// (nil, nil) when the path enters a part of the schema that preserves unknown fields, where any
// path is allowed and nothing more is known. An error names the first step the schema lacks.
func Lookup(s *structuralschema.Structural, p paths.Path) (*structuralschema.Structural, error) {
	cur := s
	var done []paths.Step
	for _, step := range p.Steps() {
		if cur == nil {
			return nil, nil
		}
		next, err := stepInto(cur, step)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where(p, done, step), err)
		}
		done = append(done, step)
		cur = next
	}
	return cur, nil
}

func where(p paths.Path, done []paths.Step, step paths.Step) string {
	return paths.FromSteps(append(append([]paths.Step(nil), done...), step)).String()
}

func stepInto(s *structuralschema.Structural, step paths.Step) (*structuralschema.Structural, error) {
	switch step.Kind {
	case paths.Field:
		if s.Type != "object" && !s.XPreserveUnknownFields && !s.XIntOrString {
			return nil, fmt.Errorf("schema has type %q here, not object", s.Type)
		}
		if prop, ok := s.Properties[step.Name]; ok {
			return &prop, nil
		}
		if ap := s.AdditionalProperties; ap != nil {
			if ap.Structural != nil {
				return ap.Structural, nil
			}
			if ap.Bool {
				return nil, nil
			}
		}
		if s.XPreserveUnknownFields {
			return nil, nil
		}
		return nil, fmt.Errorf("field %q is not in the schema", step.Name)
	case paths.Index:
		if s.Type != "array" {
			return nil, fmt.Errorf("schema has type %q here, not array", s.Type)
		}
		return s.Items, nil
	default:
		switch {
		case s.Type == "array":
			return s.Items, nil
		case s.Type == "object" && s.AdditionalProperties != nil:
			return s.AdditionalProperties.Structural, nil
		case s.XPreserveUnknownFields:
			return nil, nil
		}
		return nil, fmt.Errorf("[*] needs an array or a map, schema has type %q", s.Type)
	}
}
