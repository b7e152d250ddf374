package definitions

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/workmap/workmap/definitions/expr"
	"github.com/workmap/workmap/definitions/paths"
)

// FieldError is one problem with the workload's object that stopped the engine reading part
// of it: a value of the wrong type, a quantity Kubernetes does not accept, a negative request.
// Path is where the field is in the object (spec.replicatedJobs[0].replicas), "" when the
// engine cannot tell (a value a definition computes); Message says what is wrong with it.
type FieldError struct {
	Path    string
	Message string
}

func (e FieldError) String() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// roleError is a role's error as warnings and reasons show it, with the field of the object
// it is about.
type roleError struct {
	err   error
	field FieldError
}

func (e *roleError) Error() string { return e.err.Error() }
func (e *roleError) Unwrap() error { return e.err }

// fieldErrorOf is the FieldError of an expansion error: its field when the engine found it,
// else the error's text alone.
func fieldErrorOf(err error) FieldError {
	var re *roleError
	if errors.As(err, &re) {
		return re.field
	}
	return FieldError{Message: err.Error()}
}

// templateFieldError is a field of a pod template that is wrong; loc is relative to the
// template.
type templateFieldError struct {
	loc   []paths.Step
	value any
	msg   string
	err   error
}

func (e *templateFieldError) Error() string { return e.err.Error() }
func (e *templateFieldError) Unwrap() error { return e.err }

// fieldError finds the field of the object a role's error is about. Without one, it names
// the element of the object the role stands on (a replicatedJob), else its pod template.
func (r *role) fieldError(err error, out *Role, m paths.Match) FieldError {
	item := r.itemLocation(m)
	fallback := item
	if fallback == "" {
		fallback = out.Location
	}
	var te *paths.TypeError
	var tfe *templateFieldError
	var re *expr.ResultError
	switch {
	case errors.As(err, &tfe):
		if p, ok := r.templatePath(out.Location, tfe.loc); ok {
			return FieldError{Path: p, Message: tfe.msg}
		}
		return FieldError{Path: fallback, Message: paths.FromSteps(tfe.loc).String() + ": " + tfe.msg}
	case errors.As(err, &te):
		return FieldError{Path: te.Location, Message: typeErrorMessage(te)}
	case errors.As(err, &re):
		// The expression read a field of the role's element (or of the object) and found a
		// value of the wrong type: name that field when exactly one holds the value.
		base, within := item, out.item
		if !out.hasItem {
			base, within = "", m.Value
			if r.locator.IsEmpty() {
				within = nil
			}
		}
		if rel, ok := uniqueFieldWith(within, re.Got); ok {
			return FieldError{Path: joinLocation(base, rel), Message: resultMessage(re)}
		}
		return FieldError{Path: fallback, Message: resultMessage(re) + " (the definition's " + re.Field + ")"}
	}
	return FieldError{Path: fallback, Message: err.Error()}
}

// itemLocation is the concrete path of the element the role's last `[*]` stands on, "" when
// its path has none.
func (r *role) itemLocation(m paths.Match) string {
	if r.locator.Wildcards() == 0 {
		return ""
	}
	prefix, _ := r.locator.SplitAtLastWildcard()
	loc, err := paths.Parse(m.Location)
	if err != nil || len(loc.Steps()) < len(prefix.Steps()) {
		return ""
	}
	return paths.FromSteps(loc.Steps()[:len(prefix.Steps())]).String()
}

// templatePath turns a path in a role's pod template into a path in the object. A template
// the definition assembles from podFields has no one place in the object.
func (r *role) templatePath(location string, rel []paths.Step) (string, bool) {
	switch r.form {
	case formTemplate:
		return joinLocation(location, paths.FromSteps(rel).String()), true
	case formSpec:
		if len(rel) == 0 {
			return location, true
		}
		if len(rel) > 0 && rel[0].Kind == paths.Field && rel[0].Name == "spec" {
			return joinLocation(location, paths.FromSteps(rel[1:]).String()), true
		}
	}
	return "", false
}

// uniqueFieldWith returns the path (relative to v) of the only scalar in v equal to want.
func uniqueFieldWith(v, want any) (string, bool) {
	if v == nil || want == nil {
		return "", false
	}
	var found []string
	var walk func(v any, loc []paths.Step)
	walk = func(v any, loc []paths.Step) {
		if len(found) > 1 {
			return
		}
		switch c := v.(type) {
		case map[string]any:
			for k, e := range c {
				walk(e, append(loc[:len(loc):len(loc)], paths.Step{Kind: paths.Field, Name: k}))
			}
		case []any:
			for i, e := range c {
				walk(e, append(loc[:len(loc):len(loc)], paths.Step{Kind: paths.Index, Index: i}))
			}
		default:
			if sameScalar(c, want) {
				found = append(found, paths.FromSteps(loc).String())
			}
		}
	}
	walk(v, nil)
	if len(found) != 1 || found[0] == "" {
		return "", false
	}
	return found[0], true
}

func sameScalar(a, b any) bool {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return float64(x) == y
		}
	case float64:
		switch y := b.(type) {
		case int64:
			return x == float64(y)
		case float64:
			return x == y
		}
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && a == b
}

// wantNames are the result types of definition expressions, as a user reads them.
var wantNames = map[string]string{
	"int":                 "an integer",
	"bool":                "true or false",
	"string":              "a string",
	"map(string, string)": "a map of strings",
}

func resultMessage(e *expr.ResultError) string {
	want := wantNames[e.Want]
	if want == "" {
		want = e.Want
	}
	return fmt.Sprintf("expected %s, got %s", want, showValue(e.Got))
}

func typeErrorMessage(e *paths.TypeError) string {
	want := map[string]string{"object": "an object", "list": "a list", "list or object": "a list or an object"}[e.Want]
	if want == "" {
		want = e.Want
	}
	return fmt.Sprintf("expected %s, got %s", want, showValue(e.Got))
}

// showValue renders a value of the object in a message: scalars as written, collections by
// their kind.
func showValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}

// decodeMessage says what is wrong with a pod template field that does not decode.
func decodeMessage(value any, cause error) string {
	if cause == nil {
		return "cannot be decoded"
	}
	if strings.Contains(cause.Error(), "quantities must match") {
		return fmt.Sprintf("expected a Kubernetes quantity (such as 8Gi, 500m or 4), got %s", showValue(value))
	}
	return fmt.Sprintf("%s (got %s)", cause.Error(), showValue(value))
}
