// Package paths parses and evaluates workmap paths: readable and writable locations in an
// unstructured object such as `spec.replicatedJobs[*].template.spec.template` or
// `metadata.labels["app.kubernetes.io/name"]`.
//
// Grammar: a path is a sequence of steps. `.name` (or a bare name at the start) selects a
// field or map key; `["key"]` or `['key']` selects a key that contains dots or brackets; `[3]`
// selects a list index; `[*]` selects every list item or every map value (its key becomes the
// instance id). An empty path (or ".") is the object itself. ParseJQ reads the same steps
// written as a jq path (`.a["k"][]`), for tools that convert jq-based definitions.
package paths

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// StepKind says what one step of a path selects.
type StepKind int

const (
	// Field selects a field or map key by name.
	Field StepKind = iota
	// Index selects one list item.
	Index
	// Wildcard selects every list item or map value.
	Wildcard
)

// Step is one step of a path.
type Step struct {
	Kind  StepKind
	Name  string // for Field
	Index int    // for Index
}

// Path is a parsed path.
type Path struct {
	source string
	steps  []Step
}

// SyntaxError reports where a path could not be parsed.
type SyntaxError struct {
	Path     string
	Position int // byte offset into Path, 0-based
	Msg      string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("path %q: at position %d: %s", e.Path, e.Position, e.Msg)
}

// MustParse parses a path and panics on error; for constant paths in code and tests.
func MustParse(s string) Path {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Parse parses a path.
func Parse(s string) (Path, error) {
	if s == "." {
		return Path{source: s}, nil
	}
	ps := &parser{s: s}
	err := ps.read(func(c byte) (bool, error) {
		if ps.i == 0 {
			return false, ps.name(fmt.Sprintf("unexpected %q", c))
		}
		return false, ps.fail(ps.i, "unexpected %q: expected '.' or '['", c)
	})
	if err != nil {
		return Path{}, err
	}
	return Path{source: s, steps: ps.steps}, nil
}

// Steps returns the steps of the path.
func (p Path) Steps() []Step { return p.steps }

// IsEmpty reports whether the path is the object itself.
func (p Path) IsEmpty() bool { return len(p.steps) == 0 }

// Wildcards returns the number of `[*]` steps.
func (p Path) Wildcards() int {
	n := 0
	for _, s := range p.steps {
		if s.Kind == Wildcard {
			n++
		}
	}
	return n
}

// Join returns p followed by q.
func (p Path) Join(q Path) Path {
	steps := make([]Step, 0, len(p.steps)+len(q.steps))
	steps = append(append(steps, p.steps...), q.steps...)
	return Path{steps: steps}
}

// Equal reports whether p and q have the same steps, however they were written.
func (p Path) Equal(q Path) bool { return slices.Equal(p.steps, q.steps) }

// CutPrefix returns the steps of p after prefix, and whether p starts with prefix's steps.
func (p Path) CutPrefix(prefix Path) (rest Path, ok bool) {
	n := len(prefix.steps)
	if len(p.steps) < n || !slices.Equal(p.steps[:n], prefix.steps) {
		return Path{}, false
	}
	return Path{steps: p.steps[n:]}, true
}

// SplitAtLastWildcard returns the path up to and including its last `[*]`, and the rest.
// A path without wildcards returns an empty prefix and itself.
func (p Path) SplitAtLastWildcard() (prefix, rest Path) {
	for i := len(p.steps) - 1; i >= 0; i-- {
		if p.steps[i].Kind == Wildcard {
			return Path{steps: p.steps[: i+1 : i+1]}, Path{steps: p.steps[i+1:]}
		}
	}
	return Path{}, p
}

// String renders the path in canonical form.
func (p Path) String() string {
	if p.source != "" {
		return p.source
	}
	return render(p.steps)
}

func render(steps []Step) string { return renderIn(steps, false) }

// renderIn writes steps in workmap notation or, with jq set, in jq's (where every field step
// starts with a dot).
func renderIn(steps []Step, jq bool) string {
	var b strings.Builder
	for i, s := range steps {
		switch {
		case s.Kind == Field && jq && isJQName(s.Name):
			b.WriteString("." + s.Name)
		case s.Kind == Field && jq:
			b.WriteString("[" + jqString(s.Name) + "]")
		case s.Kind == Field && isPlainName(s.Name):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Name)
		case s.Kind == Field:
			b.WriteString(`["`)
			b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s.Name))
			b.WriteString(`"]`)
		case s.Kind == Index:
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		case jq:
			b.WriteString("[]")
		default:
			b.WriteString("[*]")
		}
	}
	return b.String()
}

func isPlainName(name string) bool {
	_, n := scanName(name)
	return n == len(name) && n > 0
}

// FromSteps builds a path from steps.
func FromSteps(steps []Step) Path { return Path{steps: steps} }
