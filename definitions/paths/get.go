package paths

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Binding is the element a `[*]` step stood on in one match.
type Binding struct {
	Key   string // map key, or list index in decimal
	Value any
}

// Match is one location a path resolved to.
type Match struct {
	// Value at the location.
	Value any
	// Location is the concrete path of the match, without wildcards.
	Location string
	// Bindings has one entry per `[*]` of the path, outermost first.
	Bindings []Binding
}

// TypeError reports a step that met a value of the wrong type.
type TypeError struct {
	Location string // concrete path up to the failing step
	Want     string
	Got      any
}

func (e *TypeError) Error() string {
	loc := e.Location
	if loc == "" {
		loc = "<root>"
	}
	return fmt.Sprintf("%s: expected %s, found %s", loc, e.Want, typeName(e.Got))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	case int64, int, int32, float64:
		return "number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// Get returns every location the path resolves to in obj, in document order (map keys sorted).
// Missing fields and nulls are not matches; stepping into a value of the wrong type is an error.
func (p Path) Get(obj any) ([]Match, error) {
	var out []Match
	err := walk(obj, p.steps, nil, nil, func(v any, loc []Step, b []Binding) {
		out = append(out, Match{Value: v, Location: render(loc), Bindings: append([]Binding(nil), b...)})
	})
	return out, err
}

// GetOne returns the single value at a path without wildcards, and whether it exists.
func (p Path) GetOne(obj any) (any, bool, error) {
	if p.Wildcards() > 0 {
		return nil, false, fmt.Errorf("path %s: expected a single location, has [*]", p)
	}
	m, err := p.Get(obj)
	if err != nil || len(m) == 0 {
		return nil, false, err
	}
	return m[0].Value, true, nil
}

func walk(v any, steps, loc []Step, b []Binding, visit func(any, []Step, []Binding)) error {
	if v == nil { // nulls are not matches, and nothing is below them
		return nil
	}
	if len(steps) == 0 {
		visit(v, loc, b)
		return nil
	}
	s := steps[0]
	switch s.Kind {
	case Field:
		m, ok := v.(map[string]any)
		if !ok {
			return &TypeError{Location: render(loc), Want: "object", Got: v}
		}
		child, ok := m[s.Name]
		if !ok {
			return nil
		}
		return walk(child, steps[1:], append(loc, s), b, visit)
	case Index:
		l, ok := v.([]any)
		if !ok {
			return &TypeError{Location: render(loc), Want: "list", Got: v}
		}
		if s.Index >= len(l) {
			return nil
		}
		return walk(l[s.Index], steps[1:], append(loc, s), b, visit)
	default: // Wildcard
		switch c := v.(type) {
		case []any:
			for i, item := range c {
				if err := walk(item, steps[1:], append(loc, Step{Kind: Index, Index: i}), append(b, Binding{Key: strconv.Itoa(i), Value: item}), visit); err != nil {
					return err
				}
			}
		case map[string]any:
			for _, k := range sortedKeys(c) {
				if err := walk(c[k], steps[1:], append(loc, Step{Kind: Field, Name: k}), append(b, Binding{Key: k, Value: c[k]}), visit); err != nil {
					return err
				}
			}
		default:
			return &TypeError{Location: render(loc), Want: "list or object", Got: v}
		}
		return nil
	}
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
