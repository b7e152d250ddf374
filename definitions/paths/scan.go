package paths

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// parser reads the steps of a path in workmap's notation or, with jq set, in jq's (see ParseJQ).
type parser struct {
	s     string
	i     int // offset of the next byte to read
	jq    bool
	steps []Step
}

// read reads `.` and `[` steps to the end of s, handing any other byte to other, which reads
// on or says the path stops there.
func (p *parser) read(other func(c byte) (stop bool, err error)) error {
	for p.i < len(p.s) {
		var stop bool
		var err error
		switch c := p.s[p.i]; c {
		case '.':
			err = p.dot()
		case '[':
			err = p.bracket()
		default:
			stop, err = other(c)
		}
		if stop || err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) fail(pos int, format string, args ...any) error {
	return &SyntaxError{Path: p.s, Position: pos, Msg: fmt.Sprintf(format, args...)}
}

// dot reads a `.` and the field step after it (in jq notation `."key"`, or nothing before a `[`).
func (p *parser) dot() error {
	if p.i == len(p.s)-1 {
		return p.fail(p.i, "path ends with '.'")
	}
	p.i++
	if p.jq {
		switch p.s[p.i] {
		case '[':
			return nil
		case '"':
			name, err := p.quoted()
			if err == nil {
				p.steps = append(p.steps, Step{Kind: Field, Name: name})
			}
			return err
		}
	}
	return p.name("expected a field name after '.'")
}

// name reads a field name; missing is the message when there is none.
func (p *parser) name(missing string) error {
	scan := scanName
	if p.jq {
		scan = scanIdent
	}
	name, n := scan(p.s[p.i:])
	if n == 0 {
		return p.fail(p.i, "%s", missing)
	}
	p.steps = append(p.steps, Step{Kind: Field, Name: name})
	p.i += n
	return nil
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

// bracket reads the bracket step at p.s[p.i] == '['.
func (p *parser) bracket() error {
	start := p.i
	i := start + 1
	if i >= len(p.s) {
		return p.fail(start, "unterminated '['")
	}
	step := Step{Kind: Wildcard}
	switch c := p.s[i]; {
	case c == '*' && !p.jq:
		if i+1 >= len(p.s) || p.s[i+1] != ']' {
			return p.fail(i+1, "expected ']' after '[*'")
		}
		p.i = i + 2
	case c == ']' && p.jq:
		p.i = i + 1
	case c == '"' || (c == '\'' && !p.jq):
		p.i = i
		name, err := p.quoted()
		if err != nil {
			return err
		}
		if p.i >= len(p.s) || p.s[p.i] != ']' {
			return p.fail(p.i, "expected ']' after quoted key")
		}
		step = Step{Kind: Field, Name: name}
		p.i++
	case c >= '0' && c <= '9':
		j := i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		if j >= len(p.s) || p.s[j] != ']' {
			return p.fail(j, "expected ']' after list index")
		}
		n, err := strconv.Atoi(p.s[i:j])
		if err != nil {
			return p.fail(i, "list index %q out of range", p.s[i:j])
		}
		step = Step{Kind: Index, Index: n}
		p.i = j + 1
	case p.jq:
		return p.fail(i, "expected ']', a list index or a quoted key after '['")
	default:
		return p.fail(i, "expected '*', a list index or a quoted key after '['")
	}
	p.steps = append(p.steps, step)
	return nil
}

// quoted reads the quoted key at p.s[p.i]. In workmap notation it is single- or double-quoted
// and a backslash keeps the next byte as it is; in jq notation it is a JSON string.
func (p *parser) quoted() (string, error) {
	start, q := p.i, p.s[p.i]
	var b strings.Builder
	j := start + 1
	for ; j < len(p.s) && p.s[j] != q; j++ {
		if p.s[j] == '\\' {
			j++
			if j >= len(p.s) {
				break
			}
			if p.jq && p.s[j] == '(' {
				return "", p.fail(j-1, "string interpolation `\\(...)` is not a path")
			}
		}
		b.WriteByte(p.s[j])
	}
	if j >= len(p.s) {
		return "", p.fail(start, "unterminated quoted key")
	}
	p.i = j + 1
	if !p.jq {
		return b.String(), nil
	}
	var name string
	if err := json.Unmarshal([]byte(p.s[start:p.i]), &name); err != nil {
		return "", p.fail(start, "invalid string: %v", err)
	}
	return name, nil
}
