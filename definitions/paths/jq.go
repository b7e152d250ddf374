package paths

import (
	"encoding/json"
	"strings"
)

// ParseJQ parses the jq path at the start of s, after any whitespace: `.`, `.a.b`, `."a.b"`,
// `.a[]`, `.a["k"]`, `.a[0]` or `.a.[0]`, each step optionally followed by `?`. A name after
// `.` is a jq identifier and a quoted key is a JSON string; `[]` is a Wildcard step and `?`
// (jq's error suppression) is accepted and not kept. ParseJQ stops at the first byte that
// cannot continue the path (whitespace, or an operator such as `|` or `//`) and returns the
// offset where it stopped: what follows is the caller's to read. Errors are *SyntaxError
// with positions in s.
func ParseJQ(s string) (Path, int, error) {
	ps := &parser{s: s, jq: true}
	for ps.i < len(s) && strings.IndexByte(" \t\n\r", s[ps.i]) >= 0 {
		ps.i++
	}
	if ps.i == len(s) || s[ps.i] != '.' {
		return Path{}, 0, ps.fail(ps.i, "a jq path starts with '.'")
	}
	if ps.i+1 == len(s) || !startsStep(s[ps.i+1]) { // `.` alone: the input itself
		ps.i++
	}
	err := ps.read(func(c byte) (bool, error) {
		if c == '?' && s[ps.i-1] != '?' {
			ps.i++
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return Path{}, 0, err
	}
	return Path{steps: ps.steps}, ps.i, nil
}

// startsStep reports whether c, right after a `.`, starts a step in jq notation.
func startsStep(c byte) bool { return c == '[' || c == '"' || isIdentByte(c, true) }

// scanIdent returns the jq identifier at the start of s.
func scanIdent(s string) (string, int) {
	n := 0
	for n < len(s) && isIdentByte(s[n], n == 0) {
		n++
	}
	return s[:n], n
}

func isIdentByte(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}

// JQ renders the path as a jq path: `.a["k.l"][0][]`, or `.` for the object itself.
func (p Path) JQ() string {
	if len(p.steps) == 0 {
		return "."
	}
	s := renderIn(p.steps, true)
	if s[0] == '[' {
		return "." + s
	}
	return s
}

// jqString quotes s as a JSON string, leaving <, > and & as they are.
func jqString(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

func isJQName(name string) bool {
	_, n := scanIdent(name)
	return n == len(name) && n > 0
}
