package expr

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
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
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	dataDependent := larger.Max != est.Max
	if dataDependent {
		opts = append(opts,
			cel.CostTracking(&library.CostEstimator{}),
			cel.CostLimit(CostLimit),
			cel.InterruptCheckFrequency(100),
		)
	}
	prog, err := e.env.Program(ast, opts...)
	if err != nil {
		return nil, field.Invalid(fld, src, err.Error())
	}
	return &Program{Source: src, Field: fld.String(), Live: usesLive(ast.NativeRep()), EstimatedCost: est.Max, CostTracked: dataDependent, prog: prog}, nil
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

// Eval runs the program.
func (p *Program) Eval(a *Activation) (ref.Val, error) {
	v, _, err := p.prog.Eval(a)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Field, err)
	}
	return v, nil
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
		ks, ok1 := k.Value().(string)
		vs, ok2 := val.Value().(string)
		if !ok1 || !ok2 {
			return nil, p.typeError("map(string, string)", v)
		}
		out[ks] = vs
	}
	return out, nil
}

func (p *Program) typeError(want string, got ref.Val) error {
	return fmt.Errorf("%s: expected %s, got %s", p.Field, want, got.Type().TypeName())
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
