package karta

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/workmap/workmap/definitions/paths"
)

// Rendering of parsed jq paths as workmap paths and as CEL.

// workmapPath renders a jq path as a workmap path: `[]` → `[*]`, no leading dot.
func workmapPath(p paths.Path) string {
	if p.IsEmpty() {
		return "."
	}
	return p.String()
}

// fieldPath is the path of one field.
func fieldPath(name string) paths.Path {
	return paths.FromSteps([]paths.Step{{Kind: paths.Field, Name: name}})
}

// celChain renders base followed by the (iteration-free) steps of p. Steps from index
// optFrom on use optional selection (`.?f`, `[?'k']`, `[?0]`); it reports whether any did.
func celChain(base string, p paths.Path, optFrom int) (string, bool) {
	var b strings.Builder
	b.WriteString(base)
	opt := false
	for i, s := range p.Steps() {
		q := ""
		if i >= optFrom {
			q, opt = "?", true
		}
		switch s.Kind {
		case paths.Field:
			if isCELIdent(s.Name) {
				b.WriteString("." + q + s.Name)
			} else {
				b.WriteString("[" + q + celString(s.Name) + "]")
			}
		case paths.Index:
			b.WriteString("[" + q + strconv.Itoa(s.Index) + "]")
		}
	}
	return b.String(), opt
}

// celValue renders the value at p from base, with def when it is absent.
func celValue(base string, p paths.Path, optFrom int, def string) string {
	s, opt := celChain(base, p, optFrom)
	if !opt {
		return s
	}
	return s + ".orValue(" + def + ")"
}

// plainSteps is how many leading steps of a path from base are always present and so need no
// optional selection: `metadata` of any object, `spec` of a pod.
func plainSteps(base string, p paths.Path) int {
	if p.IsEmpty() || p.Steps()[0].Kind != paths.Field {
		return 0
	}
	if first := p.Steps()[0].Name; first == "metadata" || (base == "pod" && first == "spec") {
		return 1
	}
	return 0
}

// celString quotes s as a single-quoted CEL string.
func celString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// celReserved are CEL's reserved words, which cannot follow a `.`.
var celReserved = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "else": true, "false": true, "for": true,
	"function": true, "if": true, "import": true, "in": true, "let": true, "loop": true, "package": true,
	"namespace": true, "null": true, "return": true, "true": true, "var": true, "void": true, "while": true,
}

func isIdentByte(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}

func isCELIdent(s string) bool { return !celReserved[s] && isPlainIdent(s) }

// isPlainIdent reports whether s is an identifier: a letter or '_', then letters, digits, '_'.
func isPlainIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i], i == 0) {
			return false
		}
	}
	return true
}

// celLiteral renders a decoded JSON value (numbers as json.Number) as a CEL literal: whole
// numbers as ints, so a `// 1` default stays an int.
func celLiteral(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(x), true
	case string:
		return celString(x), true
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return strconv.FormatInt(i, 10), true
		}
		f, err := x.Float64()
		if err != nil {
			return "", false
		}
		if f == float64(int64(f)) {
			return strconv.FormatInt(int64(f), 10), true
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s, true
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			c, ok := celLiteral(e)
			if !ok {
				return "", false
			}
			parts = append(parts, c)
		}
		return "[" + strings.Join(parts, ", ") + "]", true
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(x))
		for _, k := range keys {
			c, ok := celLiteral(x[k])
			if !ok {
				return "", false
			}
			parts = append(parts, celString(k)+": "+c)
		}
		return "{" + strings.Join(parts, ", ") + "}", true
	}
	return "", false
}

// expectedLiteral renders a Karta expectedResult (the string form of a jq result) as the CEL
// literal it compares with: true/false, null, numbers, else a string.
func expectedLiteral(s string) string {
	switch s {
	case "true", "false", "null":
		return s
	}
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil && strings.ContainsAny(s, ".eE") {
		return s
	}
	return celString(strings.Trim(s, `"`))
}

// valueScope is what a jq path on the root object can be relative to: the role's item (the
// element of its pod template's last `[]`), or only self.
type valueScope struct {
	prefix paths.Path // through the pod template's last `[]`; empty when it has none
}

// objectValue converts a jq expression on the root object (a simple path, optionally with a
// `// literal` default) into CEL: relative to item when it goes through the same `[]` as the
// pod template, else to self. def is used when the value is absent and the jq gives no
// default. note is set when a jq default was converted.
func objectValue(src string, sc valueScope, def, itemDef string) (cel, note string, err error) {
	p, lit, err := parseDefaulted(src)
	if err != nil {
		return "", "", err
	}
	base := "self"
	if p.Wildcards() > 0 {
		rest, ok := p.CutPrefix(sc.prefix)
		if sc.prefix.IsEmpty() || !ok || rest.Wildcards() > 0 {
			if sc.prefix.IsEmpty() {
				return "", "", fmt.Errorf("`%s` iterates (`[]`) but the pod template does not: cannot pair its values with instances", src)
			}
			return "", "", fmt.Errorf("`%s` does not go through the pod template's `%s` only: cannot pair its values with instances", src, sc.prefix.JQ())
		}
		base, p, def = "item", rest, itemDef
	}
	if lit != nil {
		def, note = lit.cel, defaultNote(lit)
	}
	return celValue(base, p, plainSteps(base, p), def), note, nil
}

// podValue converts a jq expression on a pod into CEL over `pod`.
func podValue(src, def string) (cel, note string, err error) {
	p, lit, err := parseDefaulted(src)
	if err != nil {
		return "", "", err
	}
	if p.Wildcards() > 0 {
		return "", "", fmt.Errorf("`%s` iterates (`[]`): a pod-side path must give one value", src)
	}
	if lit != nil {
		def, note = lit.cel, defaultNote(lit)
	}
	return celValue("pod", p, plainSteps("pod", p), def), note, nil
}

func defaultNote(lit *literal) string {
	return fmt.Sprintf("jq default `// %s` became `.orValue(%s)`: jq also uses the default when the value is null or false", lit.jq, lit.cel)
}
