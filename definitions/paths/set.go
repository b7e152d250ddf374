package paths

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Set writes a deep copy of value at every location the path resolves to in obj. Missing
// fields (and nulls) on the way are created as objects; `[*]` visits only existing elements; a
// list index beyond the end is an error. It returns the number of locations written.
func (p Path) Set(obj map[string]any, value any) (int, error) {
	v, err := jsonValue(value)
	if err != nil {
		return 0, fmt.Errorf("path %s: %w", p, err)
	}
	return p.Update(obj, func(any, bool) (any, error) { return runtime.DeepCopyJSONValue(v), nil })
}

// jsonValue converts any JSON-marshalable Go value into the unstructured form (maps, slices,
// int64, float64, string, bool, nil).
func jsonValue(value any) (any, error) {
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	var v any
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

func hasWildcard(steps []Step) bool {
	for _, s := range steps {
		if s.Kind == Wildcard {
			return true
		}
	}
	return false
}

// Update replaces the value at every location of the path with fn(old, existed). It returns
// the number of locations written. The empty path cannot be updated. Locations are written in
// document order and an error stops the walk: callers that need all-or-nothing work on a copy.
func (p Path) Update(obj map[string]any, fn func(old any, exists bool) (any, error)) (int, error) {
	if len(p.steps) == 0 {
		return 0, fmt.Errorf("path %q: cannot replace the whole object", p.String())
	}
	if obj == nil {
		return 0, fmt.Errorf("path %s: object is nil", p)
	}
	n := 0
	_, err := update(obj, p.steps, nil, func(old any, exists bool) (any, error) {
		n++
		return fn(old, exists)
	})
	return n, err
}

// update returns the new value for v after applying the steps.
func update(v any, steps, loc []Step, fn func(any, bool) (any, error)) (any, error) {
	s := steps[0]
	last := len(steps) == 1
	switch s.Kind {
	case Field:
		if v == nil && hasWildcard(steps) {
			return nil, nil // nothing exists to visit: leave the object unchanged
		}
		m, ok := v.(map[string]any)
		if v == nil {
			m, ok = map[string]any{}, true
		}
		if !ok {
			return nil, &TypeError{Location: render(loc), Want: "object", Got: v}
		}
		child, exists := m[s.Name]
		if !exists && hasWildcard(steps[1:]) {
			return m, nil
		}
		nv, err := apply(child, exists, last, steps, append(loc, s), fn)
		if err != nil {
			return nil, err
		}
		m[s.Name] = nv
		return m, nil
	case Index:
		l, ok := v.([]any)
		if !ok {
			return nil, &TypeError{Location: render(loc), Want: "list", Got: v}
		}
		if s.Index >= len(l) {
			return nil, fmt.Errorf("%s: index %d out of range (list has %d items)", render(append(loc, s)), s.Index, len(l))
		}
		nv, err := apply(l[s.Index], true, last, steps, append(loc, s), fn)
		if err != nil {
			return nil, err
		}
		l[s.Index] = nv
		return l, nil
	default: // Wildcard
		switch c := v.(type) {
		case nil:
			return nil, nil
		case []any:
			for i := range c {
				nv, err := apply(c[i], true, last, steps, append(loc, Step{Kind: Index, Index: i}), fn)
				if err != nil {
					return nil, err
				}
				c[i] = nv
			}
			return c, nil
		case map[string]any:
			for _, k := range sortedKeys(c) {
				nv, err := apply(c[k], true, last, steps, append(loc, Step{Kind: Field, Name: k}), fn)
				if err != nil {
					return nil, err
				}
				c[k] = nv
			}
			return c, nil
		default:
			return nil, &TypeError{Location: render(loc), Want: "list or object", Got: v}
		}
	}
}

func apply(child any, exists, last bool, steps, loc []Step, fn func(any, bool) (any, error)) (any, error) {
	if last {
		return fn(child, exists)
	}
	return update(child, steps[1:], loc, fn)
}
