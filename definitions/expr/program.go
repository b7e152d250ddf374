package expr

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/parser"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/library"
)

// Program is one compiled expression.
type Program struct {
	// Source is the expression text.
	Source string
	// Field is the definition field the expression came from, e.g. spec.roles[0].replicas.
	Field string
	// Live is true when the expression uses `children` or `pods`, which exist only in live mode.
	Live bool
	// EstimatedCost is the compile-time worst-case cost.
	EstimatedCost uint64
	// CostTracked is true when the cost depends on the data, so evaluation tracks it and
	// stops at CostLimit.
	CostTracked bool

	prog cel.Program
	// ast and explainer serve explain: a second program over the same AST that records the
	// value of every subexpression, built on first use (only evaluations that fail need it).
	ast       *cel.Ast
	explainer func() (cel.Program, error)
}

// Compile parses, type-checks and plans an expression whose result must have type want.
// Errors are field errors naming fld.
func (e *Env) Compile(fld *field.Path, src string, want Result) (*Program, *field.Error) {
	ast, iss := e.env.Compile(src)
	if iss.Err() != nil {
		return nil, field.Invalid(fld, src, issuesMessage(iss))
	}
	if !want.accepts(ast.OutputType()) {
		return nil, field.Invalid(fld, src, fmt.Sprintf("must evaluate to %s, has type %s", want, ast.OutputType()))
	}
	est, err := e.env.EstimateCost(ast, newEstimator(1))
	if err != nil {
		return nil, field.Invalid(fld, src, "estimating cost: "+err.Error())
	}
	if est.Max > CostLimit {
		return nil, field.Invalid(fld, src, fmt.Sprintf("estimated cost %d exceeds the limit of %d: avoid nested loops over large lists", est.Max, CostLimit))
	}
	// When the estimate does not grow with the data, the static bound already holds at run
	// time; otherwise the program tracks its actual cost and stops at the limit.
	larger, err := e.env.EstimateCost(ast, newEstimator(2))
	if err != nil {
		return nil, field.Invalid(fld, src, "estimating cost: "+err.Error())
	}
	var limits []cel.ProgramOption
	dataDependent := larger.Max != est.Max
	if dataDependent {
		limits = append(limits,
			cel.CostTracking(&library.CostEstimator{}),
			cel.CostLimit(CostLimit),
			cel.InterruptCheckFrequency(100),
		)
	}
	prog, err := e.env.Program(ast, append([]cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}, limits...)...)
	if err != nil {
		return nil, field.Invalid(fld, src, err.Error())
	}
	explainer := sync.OnceValues(func() (cel.Program, error) {
		return e.env.Program(ast, append([]cel.ProgramOption{cel.EvalOptions(cel.OptTrackState)}, limits...)...)
	})
	return &Program{Source: src, Field: fld.String(), Live: usesLive(ast.NativeRep()), EstimatedCost: est.Max, CostTracked: dataDependent,
		prog: prog, ast: ast, explainer: explainer}, nil
}

// usesLive reports whether a checked expression reads the variable `children` or `pods`. A
// comprehension variable of the same name (`x.exists(pods, ...)`) shadows them: it is not a use.
func usesLive(a *celast.AST) bool {
	for _, id := range celast.MatchDescendants(celast.NavigateAST(a), celast.KindMatcher(celast.IdentKind)) {
		if name := id.AsIdent(); (name == VarChildren || name == VarPods) && !isLocal(id, name) {
			return true
		}
	}
	return false
}

// isLocal reports whether the identifier e names a comprehension variable: iteration variables
// are in scope in the loop condition and step, the accumulator also in the result.
func isLocal(e celast.NavigableExpr, name string) bool {
	child := e
	for parent, ok := e.Parent(); ok; parent, ok = parent.Parent() {
		if parent.Kind() == celast.ComprehensionKind {
			c := parent.AsComprehension()
			inLoop := child.ID() == c.LoopCondition().ID() || child.ID() == c.LoopStep().ID()
			if inLoop && (c.IterVar() == name || c.IterVar2() == name) {
				return true
			}
			if (inLoop || child.ID() == c.Result().ID()) && c.AccuVar() == name {
				return true
			}
		}
		child = parent
	}
	return false
}

func issuesMessage(iss *cel.Issues) string {
	var msgs []string
	for _, e := range iss.Errors() {
		msgs = append(msgs, fmt.Sprintf("%s (at column %d)", strings.ReplaceAll(e.Message, " (in container '')", ""), e.Location.Column()+1))
	}
	return strings.Join(msgs, "; ")
}

// Eval runs the program. An error names the field and, where it can, the part of the
// expression that failed and the types it met: "no such overload: _<_" alone does not tell
// which value of a malformed object was wrong.
func (p *Program) Eval(a *Activation) (ref.Val, error) {
	v, _, err := p.prog.Eval(a)
	if err != nil {
		return nil, fmt.Errorf("%s: %w%s", p.Field, err, p.explain(a))
	}
	return v, nil
}

// maxExplainedExpr bounds each piece of expression text quoted in an error.
const maxExplainedExpr = 80

// explain evaluates the program again, recording every subexpression's value, and describes
// the innermost subexpression that failed: the operands of a call with their types, or the
// field read that failed. It returns "" when it finds nothing to add.
func (p *Program) explain(a *Activation) string {
	if p.explainer == nil {
		return ""
	}
	prog, err := p.explainer()
	if err != nil {
		return ""
	}
	_, details, err := prog.Eval(a)
	if err == nil || details == nil || details.State() == nil {
		return ""
	}
	state := details.State()
	failed := func(e celast.NavigableExpr) bool {
		v, ok := state.Value(e.ID())
		return ok && types.IsError(v)
	}
	// Follow failed subexpressions down from the root: a failure that another one absorbed
	// (`x.a || true`) is not on that path.
	e := celast.NavigateAST(p.ast.NativeRep())
	if !failed(e) {
		return ""
	}
	for next := true; next; {
		next = false
		for _, c := range e.Children() {
			if failed(c) {
				e, next = c, true
				break
			}
		}
	}
	// Some nodes record no value (the branches of a conditional planned as one attribute):
	// below the last failed node on the path, the innermost failed one (the first in
	// post-order) is the culprit.
	e = celast.MatchDescendants(e, failed)[0]
	info := p.ast.NativeRep().SourceInfo()
	var operands []celast.Expr
	switch e.Kind() {
	case celast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			operands = append(operands, call.Target())
		}
		operands = append(operands, call.Args()...)
	case celast.ComprehensionKind:
		// A macro (exists, map, ...) over something that is not a list or map; when it is
		// one, an item failed in an earlier iteration, whose values are gone.
		r := e.AsComprehension().IterRange()
		if v, ok := state.Value(r.ID()); ok && v != nil && (v.Type() == types.ListType || v.Type() == types.MapType) {
			return ""
		}
		operands = append(operands, r)
	default: // a field or index that could not be read
		if s, ok := unparse(e, info); ok {
			return " (reading " + s + ")"
		}
		return ""
	}
	var parts []string
	for _, o := range operands {
		v, ok := state.Value(o.ID())
		s, parsed := unparse(o, info)
		if ok && v != nil && parsed {
			parts = append(parts, s+" is "+typeName(v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// unparse renders a subexpression as CEL text, shortened to maxExplainedExpr.
func unparse(e celast.Expr, info *celast.SourceInfo) (string, bool) {
	s, err := parser.Unparse(e, info)
	if err != nil {
		return "", false
	}
	if len(s) > maxExplainedExpr {
		cut := maxExplainedExpr
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s, true
}

// typeName is a value's CEL type name, as in "expected int, got string", with null spelled as
// in JSON.
func typeName(v ref.Val) string {
	if n := v.Type().TypeName(); n != "null_type" {
		return n
	}
	return "null"
}

// EvalBool runs a program that must produce a bool.
func (p *Program) EvalBool(a *Activation) (bool, error) {
	v, err := p.Eval(a)
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, p.typeError("bool", v)
	}
	return b, nil
}

// EvalInt runs a program that must produce an integer (a numeric string is accepted too, as
// Kubernetes labels often carry numbers).
func (p *Program) EvalInt(a *Activation) (int64, error) {
	v, err := p.Eval(a)
	if err != nil {
		return 0, err
	}
	switch x := v.Value().(type) {
	case int64:
		return x, nil
	case uint64:
		return int64(x), nil
	case float64:
		if x == float64(int64(x)) {
			return int64(x), nil
		}
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, p.typeError("int", v)
}

// EvalString runs a program that must produce a string; null yields "".
func (p *Program) EvalString(a *Activation) (string, error) {
	v, err := p.Eval(a)
	if err != nil {
		return "", err
	}
	switch x := v.Value().(type) {
	case string:
		return x, nil
	case structpb.NullValue:
		return "", nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	}
	return "", p.typeError("string", v)
}

// EvalStringMap runs a program that must produce a map of strings.
func (p *Program) EvalStringMap(a *Activation) (map[string]string, error) {
	v, err := p.Eval(a)
	if err != nil {
		return nil, err
	}
	m, ok := v.(traits.Mapper)
	if !ok {
		return nil, p.typeError("map(string, string)", v)
	}
	out := map[string]string{}
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		val := m.Get(k)
		ks, ok := k.Value().(string)
		if !ok {
			return nil, fmt.Errorf("%s: expected map(string, string), but key %v is %s", p.Field, k.Value(), typeName(k))
		}
		vs, ok := val.Value().(string)
		if !ok {
			return nil, fmt.Errorf("%s: expected map(string, string), but the value of %q is %s", p.Field, ks, typeName(val))
		}
		out[ks] = vs
	}
	return out, nil
}

func (p *Program) typeError(want string, got ref.Val) error {
	return &ResultError{Field: p.Field, Want: want, Got: got.Value()}
}

// ResultError is an expression that ran but produced a value of the wrong type: most often a
// field of the object holding a value of the wrong type (`replicas: two`), which Got is.
type ResultError struct {
	// Field is the definition field of the expression, Want the type it must produce.
	Field, Want string
	// Got is the value produced, in Go form (string, int64, float64, bool, nil, ...).
	Got any
}

func (e *ResultError) Error() string {
	return fmt.Sprintf("%s: expected %s, got %s", e.Field, e.Want, goTypeName(e.Got))
}

// goTypeName is typeName for a value in Go form.
func goTypeName(v any) string {
	return typeName(types.DefaultTypeAdapter.NativeToValue(v))
}

// EvalList runs a program that must produce a list, returned in JSON form (maps, lists,
// strings, float64 numbers, bools, nil).
func (p *Program) EvalList(a *Activation) ([]any, error) {
	v, err := p.Eval(a)
	if err != nil {
		return nil, err
	}
	native, err := v.ConvertToNative(reflect.TypeFor[*structpb.ListValue]())
	if err != nil {
		return nil, fmt.Errorf("%s: expected a list of plain values: %w", p.Field, err)
	}
	return native.(*structpb.ListValue).AsSlice(), nil
}

// ReadsOnlyMetadataMaps reports whether the expression reads variable only through
// <variable>.metadata.labels and <variable>.metadata.annotations (plain or optional selects):
// then objects with the same labels and annotations give the same result, and callers may
// reuse it.
func (p *Program) ReadsOnlyMetadataMaps(variable string) bool {
	nav := celast.NavigateAST(p.ast.NativeRep())
	only := true
	celast.MatchDescendants(nav, func(e celast.NavigableExpr) bool {
		if e.Kind() != celast.IdentKind || e.AsIdent() != variable {
			return false
		}
		metadata, field, ok := selectedField(e)
		if !ok || field != "metadata" {
			only = false
			return false
		}
		if _, field, ok := selectedField(metadata); !ok || (field != "labels" && field != "annotations") {
			only = false
		}
		return false
	})
	return only
}

// selectedField returns the select (plain or optional) that reads a field of e, and the field.
func selectedField(e celast.NavigableExpr) (celast.NavigableExpr, string, bool) {
	parent, ok := e.Parent()
	if !ok {
		return nil, "", false
	}
	switch parent.Kind() {
	case celast.SelectKind:
		if sel := parent.AsSelect(); !sel.IsTestOnly() {
			return parent, sel.FieldName(), true
		}
	case celast.CallKind:
		call := parent.AsCall()
		if args := call.Args(); call.FunctionName() == operators.OptSelect && len(args) == 2 && args[0].ID() == e.ID() && args[1].Kind() == celast.LiteralKind {
			if s, ok := args[1].AsLiteral().Value().(string); ok {
				return parent, s, true
			}
		}
	}
	return nil, "", false
}
