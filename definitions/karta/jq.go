package karta

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/workmap/workmap/definitions/paths"
)

// The subset of jq the converter understands: simple paths, read by paths.ParseJQ (`.`,
// `.a.b`, `."a.b"`, `.a[]`, `.a["k"]`, `.a[0]`, each step optionally followed by `?`), and a
// simple path followed by `// LITERAL`. Everything else is reported, with what it uses.

// notSimpleError says why a jq expression is not a simple path: the jq features it uses or,
// when it uses none, where its path syntax breaks.
type notSimpleError struct {
	src  string
	uses []string
	pos  int
	msg  string
}

func (e *notSimpleError) Error() string {
	if len(e.uses) == 0 {
		return fmt.Sprintf("`%s` is not a simple jq path: at position %d: %s", e.src, e.pos, e.msg)
	}
	return fmt.Sprintf("`%s` is not a simple jq path (it uses %s)", e.src, strings.Join(e.uses, ", "))
}

func notSimple(src string, pos int, msg string) error {
	return &notSimpleError{src: src, uses: jqFeatures(src), pos: pos, msg: msg}
}

// parsePath parses a simple jq path.
func parsePath(src string) (paths.Path, error) {
	p, end, err := leadingPath(src)
	if err == nil {
		err = trailing(src, end)
	}
	if err != nil {
		return paths.Path{}, err
	}
	return p, nil
}

// parseDefaulted parses a simple path, optionally followed by `// LITERAL`.
func parseDefaulted(src string) (paths.Path, *literal, error) {
	p, end, err := leadingPath(src)
	if err != nil {
		return paths.Path{}, nil, err
	}
	rest := strings.TrimLeft(src[end:], jqSpace)
	after, ok := strings.CutPrefix(rest, "//")
	switch {
	case rest == "":
		return p, nil, nil
	case !ok:
		return paths.Path{}, nil, trailing(src, end)
	}
	lit, ok := parseLiteral(after)
	if !ok {
		return paths.Path{}, nil, notSimple(src, len(src)-len(after), "expected a literal after `//`")
	}
	return p, lit, nil
}

const jqSpace = " \t\n\r"

// leadingPath parses the simple path at the start of src and returns where it ends.
func leadingPath(src string) (paths.Path, int, error) {
	if strings.TrimSpace(src) == "" {
		return paths.Path{}, 0, fmt.Errorf("empty jq path")
	}
	p, end, err := paths.ParseJQ(src)
	if se := (*paths.SyntaxError)(nil); errors.As(err, &se) {
		return paths.Path{}, 0, notSimple(src, se.Position, se.Msg)
	}
	return p, end, err
}

// trailing reports anything but whitespace after the path that ends at end.
func trailing(src string, end int) error {
	rest := strings.TrimLeft(src[end:], jqSpace)
	if rest == "" {
		return nil
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return notSimple(src, len(src)-len(rest), fmt.Sprintf("unexpected %q after the path", r))
}

// literal is a jq literal (number, string, boolean, null, [] or {}) rendered as CEL.
type literal struct {
	jq, cel string
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
