// Package paths parses and evaluates workmap paths: readable and writable locations in an
// unstructured object such as `spec.replicatedJobs[*].template.spec.template` or
// `metadata.labels["app.kubernetes.io/name"]`.
//
// Grammar: a path is a sequence of steps. `.name` (or a bare name at the start) selects a
// field or map key; `["key"]` or `['key']` selects a key that contains dots or brackets; `[3]`
// selects a list index; `[*]` selects every list item or every map value (its key becomes the
// instance id). An empty path (or ".") is the object itself.
package paths

import (
	"fmt"
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
	p := Path{source: s}
	i := 0
	if s == "." {
		return p, nil
	}
	fail := func(pos int, format string, args ...any) (Path, error) {
		return Path{}, &SyntaxError{Path: s, Position: pos, Msg: fmt.Sprintf(format, args...)}
	}
	for i < len(s) {
		switch c := s[i]; {
		case c == '.':
			if i == len(s)-1 {
				return fail(i, "path ends with '.'")
			}
			i++
			name, n := scanName(s[i:])
			if n == 0 {
				return fail(i, "expected a field name after '.'")
			}
			p.steps = append(p.steps, Step{Kind: Field, Name: name})
			i += n
		case c == '[':
			step, n, err := parseBracket(s, i)
			if err != nil {
				return Path{}, err
			}
			p.steps = append(p.steps, step)
			i += n
		case i == 0:
			name, n := scanName(s)
			if n == 0 {
				return fail(0, "unexpected %q", c)
			}
			p.steps = append(p.steps, Step{Kind: Field, Name: name})
			i += n
		default:
			return fail(i, "unexpected %q: expected '.' or '['", c)
		}
	}
	return p, nil
}

// scanName returns the longest field name at the start of s.
func scanName(s string) (string, int) {
	n := 0
	for n < len(s) {
		c := s[n]
		if c == '.' || c == '[' || c == ']' || c == '"' || c == '\'' || c == ' ' || c == '\t' || c == '\n' {
			break
		}
		n++
	}
	return s[:n], n
}

// parseBracket parses the bracket step starting at s[start] == '[' and returns it and its length.
func parseBracket(s string, start int) (Step, int, error) {
	fail := func(pos int, format string, args ...any) (Step, int, error) {
		return Step{}, 0, &SyntaxError{Path: s, Position: pos, Msg: fmt.Sprintf(format, args...)}
	}
	i := start + 1
	if i >= len(s) {
		return fail(start, "unterminated '['")
	}
	switch c := s[i]; {
	case c == '*':
		if i+1 >= len(s) || s[i+1] != ']' {
			return fail(i+1, "expected ']' after '[*'")
		}
		return Step{Kind: Wildcard}, i + 2 - start, nil
	case c == '"' || c == '\'':
		var b strings.Builder
		j := i + 1
		for ; j < len(s) && s[j] != c; j++ {
			if s[j] == '\\' {
				j++
				if j >= len(s) {
					break
				}
			}
			b.WriteByte(s[j])
		}
		if j >= len(s) {
			return fail(i, "unterminated quoted key")
		}
		if j+1 >= len(s) || s[j+1] != ']' {
			return fail(j+1, "expected ']' after quoted key")
		}
		return Step{Kind: Field, Name: b.String()}, j + 2 - start, nil
	case c >= '0' && c <= '9':
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j >= len(s) || s[j] != ']' {
			return fail(j, "expected ']' after list index")
		}
		n, err := strconv.Atoi(s[i:j])
		if err != nil {
			return fail(i, "list index %q out of range", s[i:j])
		}
		return Step{Kind: Index, Index: n}, j + 1 - start, nil
	default:
		return fail(i, "expected '*', a list index or a quoted key after '['")
	}
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

func render(steps []Step) string {
	var b strings.Builder
	for i, s := range steps {
		switch s.Kind {
		case Field:
			if isPlainName(s.Name) {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(s.Name)
			} else {
				b.WriteString(`["`)
				b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s.Name))
				b.WriteString(`"]`)
			}
		case Index:
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		case Wildcard:
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
