package karta

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The subset of jq the converter understands: simple paths (`.`, `.a.b`, `."a.b"`, `.a[]`,
// `.a["k"]`, `.a[0]`, each step optionally followed by `?`), and a simple path followed by
// `// LITERAL`. Everything else is reported, with what it uses.

type stepKind int

const (
	fieldStep stepKind = iota // .name or ["name"]
	indexStep                 // [N]
	iterStep                  // []
)

type step struct {
	kind  stepKind
	name  string
	index int
}

// jqPath is a parsed simple jq path; empty is `.`, the input itself.
type jqPath []step

// iterates reports whether the path has a `[]` step.
func (p jqPath) iterates() bool {
	for _, s := range p {
		if s.kind == iterStep {
			return true
		}
	}
	return false
}

// splitAtLastIter returns the path up to and including its last `[]`, and the rest; a path
// without `[]` returns nil and itself.
func (p jqPath) splitAtLastIter() (prefix, rest jqPath) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].kind == iterStep {
			return p[:i+1], p[i+1:]
		}
	}
	return nil, p
}

// hasPrefix reports whether p starts with q.
func (p jqPath) hasPrefix(q jqPath) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

func (p jqPath) equal(q jqPath) bool { return len(p) == len(q) && p.hasPrefix(q) }

// notSimpleError says why a jq expression is not a simple path.
type notSimpleError struct {
	src  string
	uses []string
}

func (e *notSimpleError) Error() string {
	if len(e.uses) == 0 {
		return fmt.Sprintf("`%s` is not a simple jq path", e.src)
	}
	return fmt.Sprintf("`%s` is not a simple jq path (it uses %s)", e.src, strings.Join(e.uses, ", "))
}

func notSimple(src string) error { return &notSimpleError{src: src, uses: jqFeatures(src)} }

// parsePath parses a simple jq path.
func parsePath(src string) (jqPath, error) {
	s := strings.TrimSpace(src)
	if s == "" {
		return nil, fmt.Errorf("empty jq path")
	}
	if s[0] != '.' {
		return nil, notSimple(src)
	}
	p := jqPath{}
	i := 1
	if s == "." {
		return p, nil
	}
	if s[1] != '[' { // `.name` or `."name"` right after the leading dot
		st, n, ok := dotStep(s[1:])
		if !ok {
			return nil, notSimple(src)
		}
		p = append(p, st)
		i += n
	}
	for i < len(s) {
		switch s[i] {
		case '.':
			if i+1 < len(s) && s[i+1] == '[' { // `.a.[0]` (jq 1.7)
				i++
				continue
			}
			st, n, ok := dotStep(s[i+1:])
			if !ok {
				return nil, notSimple(src)
			}
			p = append(p, st)
			i += 1 + n
		case '[':
			st, n, ok := bracketStep(s[i:])
			if !ok {
				return nil, notSimple(src)
			}
			p = append(p, st)
			i += n
		case '?': // error suppression: the converted paths are null-safe anyway
			if i > 0 && s[i-1] == '?' {
				return nil, notSimple(src)
			}
			i++
		default:
			return nil, notSimple(src)
		}
	}
	return p, nil
}

// dotStep parses the step after a `.`: an identifier or a quoted name.
func dotStep(s string) (step, int, bool) {
	if s == "" {
		return step{}, 0, false
	}
	if s[0] == '"' {
		name, n, ok := jqString(s)
		return step{kind: fieldStep, name: name}, n, ok
	}
	n := 0
	for n < len(s) && isIdentByte(s[n], n == 0) {
		n++
	}
	if n == 0 {
		return step{}, 0, false
	}
	return step{kind: fieldStep, name: s[:n]}, n, true
}

// bracketStep parses `[]`, `[N]` or `["name"]`.
func bracketStep(s string) (step, int, bool) {
	switch {
	case strings.HasPrefix(s, "[]"):
		return step{kind: iterStep}, 2, true
	case strings.HasPrefix(s, `["`):
		name, n, ok := jqString(s[1:])
		if !ok || 1+n >= len(s) || s[1+n] != ']' {
			return step{}, 0, false
		}
		return step{kind: fieldStep, name: name}, n + 2, true
	}
	j := 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == 1 || j >= len(s) || s[j] != ']' {
		return step{}, 0, false
	}
	idx, err := strconv.Atoi(s[1:j])
	if err != nil {
		return step{}, 0, false
	}
	return step{kind: indexStep, index: idx}, j + 1, true
}

// jqString reads a double-quoted jq string (without interpolation) at the start of s.
func jqString(s string) (string, int, bool) {
	for j := 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if j+1 < len(s) && s[j+1] == '(' {
				return "", 0, false // string interpolation
			}
			j++
		case '"':
			var out string
			if err := json.Unmarshal([]byte(s[:j+1]), &out); err != nil {
				return "", 0, false
			}
			return out, j + 1, true
		}
	}
	return "", 0, false
}

func isIdentByte(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}

// literal is a jq literal (number, string, boolean, null, [] or {}) rendered as CEL.
type literal struct {
	jq, cel string
}

// parseDefaulted parses a simple path, optionally followed by `// LITERAL`.
func parseDefaulted(src string) (jqPath, *literal, error) {
	at := topLevelIndex(src, "//")
	if at < 0 {
		p, err := parsePath(src)
		return p, nil, err
	}
	p, err := parsePath(src[:at])
	if err != nil {
		return nil, nil, notSimple(src)
	}
	lit, ok := parseLiteral(src[at+2:])
	if !ok {
		return nil, nil, notSimple(src)
	}
	return p, lit, nil
}

// parseLiteral parses a jq literal.
func parseLiteral(src string) (*literal, bool) {
	s := strings.TrimSpace(src)
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || d.More() {
		return nil, false
	}
	c, ok := celLiteral(v)
	if !ok {
		return nil, false
	}
	return &literal{jq: s, cel: c}, true
}

// topLevelIndex returns the index of sub in s outside string literals, or -1.
func topLevelIndex(s, sub string) int {
	inString := false
	for i := 0; i < len(s); i++ {
		switch {
		case inString && s[i] == '\\':
			i++
		case s[i] == '"':
			inString = !inString
		case !inString && strings.HasPrefix(s[i:], sub):
			return i
		}
	}
	return -1
}

// jqFeatures lists the jq features an expression uses beyond simple paths, for messages.
func jqFeatures(src string) []string {
	var out []string
	add := func(f string) {
		for _, o := range out {
			if o == f {
				return
			}
		}
		out = append(out, f)
	}
	s := src
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case strings.HasPrefix(s[i:], "//"):
			add("a `//` default")
			i++
		case strings.HasPrefix(s[i:], "|="), c == '=' && (i == 0 || !strings.ContainsRune("=!<>", rune(s[i-1]))) && (i+1 >= len(s) || s[i+1] != '='):
			add("an assignment")
		case c == '|':
			add("a pipe")
		case strings.HasPrefix(s[i:], ".."):
			add("recursive descent")
			i++
		case strings.ContainsRune("=!<>", rune(c)):
			add("a comparison")
			if i+1 < len(s) && s[i+1] == '=' {
				i++
			}
		case strings.ContainsRune("+-*/%", rune(c)):
			add("arithmetic")
		case c == ',':
			add("several outputs (`,`)")
		case c == '$':
			add("a variable")
			for i+1 < len(s) && isIdentByte(s[i+1], false) {
				i++
			}
		case c == '[' && i+1 < len(s) && (s[i+1] == '-' || s[i+1] == '.' || strings.Contains(s[i:min(len(s), i+12)], ":")):
			add("a computed index or slice")
		case isIdentByte(c, true) && (i == 0 || (s[i-1] != '.' && !isIdentByte(s[i-1], false))):
			j := i
			for j < len(s) && isIdentByte(s[j], false) {
				j++
			}
			switch word := s[i:j]; word {
			case "and", "or", "not":
				add("a boolean operator (`" + word + "`)")
			case "if", "then", "elif", "else", "end":
				add("a conditional")
			case "as":
				add("a variable binding")
			case "select":
				add("a filter (`select`)")
			case "true", "false", "null":
				add("a literal")
			default:
				add("a function (`" + word + "`)")
			}
			i = j - 1
		}
	}
	return out
}
