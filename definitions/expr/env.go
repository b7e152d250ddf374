// Package expr compiles and evaluates the CEL expressions of workload definitions: one
// environment with the variables self, item, key, children, pods and pod, Kubernetes' CEL
// libraries, optional types, and a cost limit that is estimated at compile time and enforced
// at run time.
package expr

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Names of the variables an expression can use.
const (
	VarSelf     = "self"     // the root object
	VarItem     = "item"     // the list item or map value a role's [*] stands on
	VarKey      = "key"      // its map key or list index (string)
	VarChildren = "children" // live mode: map of lower-camel plural kind → child objects
	VarPods     = "pods"     // live mode: the workload's pods
	VarPod      = "pod"      // one pod, in pod-side expressions
	VarReplica  = "replica"  // the replica index, in per-replica gang expressions
)

// CostLimit bounds every expression: a program whose estimated worst-case cost exceeds it is
// rejected when compiled, and evaluation stops with an error when its actual cost exceeds it.
// One unit is roughly one cheap operation; 10M matches Kubernetes' per-expression estimate limit.
const CostLimit uint64 = 10_000_000

// Size assumptions for the compile-time cost estimate when a schema gives no bound.
const (
	// MaxLiveObjects bounds `pods` and each list in `children`.
	MaxLiveObjects = 10_000
	// MaxCollection bounds any other list or map: the lists of a workload's spec (roles,
	// groups, containers) hold a few dozen items, and a whole object is at most 1.5 MB.
	MaxCollection = 256
	// MaxString bounds any string.
	MaxString = 64 * 1024
)

// Types are the declared types of the object variables. A nil DeclType means dynamic (used
// when the target CRD's schema is unknown).
type Types struct {
	Self *apiservercel.DeclType
	Item *apiservercel.DeclType
	// NoItem leaves `item` and `key` undeclared: for expressions that have no [*] element
	// (status rules, selectors, roles without [*]), so a stray `item` is a compile error.
	NoItem bool
}

// Env is a CEL environment for one combination of variable types.
type Env struct {
	env *cel.Env
}

// baseEnv has the CEL language options and libraries Kubernetes offers to CRD validation rules
// (the same libraries as k8s.io/apiserver's base environment), built once. It leaves run-time
// cost tracking to each program: tracking costs a few microseconds per evaluation, which only
// expressions whose cost depends on the data need (see Compile).
var baseEnv = sync.OnceValue(func() *cel.Env {
	// Unlike the API server, aggregate literals may mix types: with an untyped `self`,
	// {'app': 'x', 'name': self.metadata.name} mixes string and dyn, and is fine at run time.
	env, err := cel.NewEnv(
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
		),
		library.URLs(), library.Regex(), library.Lists(), library.Quantity(),
		library.IP(), library.CIDR(), library.Format(), library.SemverLib(library.SemverVersion(1)),
		ext.Strings(ext.StringsVersion(2)), ext.Sets(), ext.TwoVarComprehensions(), ext.Lists(ext.ListsVersion(3)),
		ext.Bindings(), // cel.bind(name, value, expr): name a value once instead of repeating it
	)
	if err != nil {
		panic(fmt.Sprintf("workmap: building the base CEL environment: %v", err)) // programming error, covered by tests
	}
	return env
})

// NewEnv returns an environment whose `self` and `item` have the given types.
func NewEnv(t Types) (*Env, error) {
	opts := []cel.EnvOption{
		cel.Variable(VarChildren, cel.MapType(cel.StringType, cel.ListType(cel.DynType))),
		cel.Variable(VarPods, cel.ListType(cel.DynType)),
		cel.Variable(VarPod, cel.DynType),
		cel.Variable(VarReplica, cel.IntType),
	}
	var roots []*apiservercel.DeclType
	self, item := cel.DynType, cel.DynType
	if t.Self != nil {
		t.Self = t.Self.MaybeAssignTypeName("__self__")
		self = t.Self.CelType()
		roots = append(roots, t.Self)
	}
	if t.Item != nil {
		// Name every object type in it, also when item is a list or map of objects: unnamed
		// object types share the name "object" and would clash in the type provider.
		t.Item = t.Item.MaybeAssignTypeName("__item__")
		item = t.Item.CelType()
		roots = append(roots, t.Item)
	}
	opts = append(opts, cel.Variable(VarSelf, self))
	if !t.NoItem {
		opts = append(opts, cel.Variable(VarItem, item), cel.Variable(VarKey, cel.StringType))
	}
	if len(roots) > 0 {
		provider := apiservercel.NewDeclTypeProvider(roots...)
		provider.SetRecognizeKeywordAsFieldName(true)
		typeOpts, err := provider.EnvOptions(baseEnv().CELTypeProvider())
		if err != nil {
			return nil, fmt.Errorf("building CEL types from schema: %w", err)
		}
		opts = append(typeOpts, opts...)
	}
	env, err := baseEnv().Extend(opts...)
	if err != nil {
		return nil, fmt.Errorf("building CEL environment: %w", err)
	}
	return &Env{env: env}, nil
}

// Result is the type an expression must produce.
type Result int

// The result types of definition expressions.
const (
	Bool Result = iota
	Int
	// IntOrString accepts a number or a numeric string (label values carry numbers as strings).
	IntOrString
	String
	StringMap
	// List is any list (its items are checked where they are used).
	List
)

func (r Result) String() string {
	return [...]string{"bool", "int", "int or numeric string", "string", "map(string, string)", "list"}[r]
}

// accepts reports whether a checked output type can produce the result at run time.
func (r Result) accepts(got *cel.Type) bool {
	k := got.Kind()
	if k == types.DynKind {
		return true
	}
	switch r {
	case Bool:
		return k == types.BoolKind
	case Int:
		return k == types.IntKind || k == types.UintKind
	case IntOrString:
		return k == types.IntKind || k == types.UintKind || k == types.StringKind
	case String:
		return k == types.StringKind || k == types.NullTypeKind
	case List:
		return k == types.ListKind
	case StringMap:
		if k != types.MapKind {
			return false
		}
		params := got.Parameters()
		return len(params) == 2 && (params[0].Kind() == types.StringKind || params[0].Kind() == types.DynKind) &&
			(params[1].Kind() == types.StringKind || params[1].Kind() == types.DynKind)
	}
	return false
}

// sizeEstimator bounds collection and string sizes that the schema leaves open. scale
// multiplies every bound; Compile estimates twice with different scales to learn whether an
// expression's cost depends on the data at all.
type sizeEstimator struct{ scale uint64 }

func (e sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if p := n.Path(); len(p) > 0 && (p[0] == VarPods || p[0] == VarChildren) && len(p) <= 2 {
		return &checker.SizeEstimate{Min: 0, Max: MaxLiveObjects * e.scale}
	}
	switch n.Type().Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: MaxString * e.scale}
	default:
		return &checker.SizeEstimate{Min: 0, Max: MaxCollection * e.scale}
	}
}

func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// newEstimator is Kubernetes' cost estimator with workmap's size bounds, scaled.
func newEstimator(scale uint64) *library.CostEstimator {
	return &library.CostEstimator{SizeEstimator: sizeEstimator{scale: scale}}
}
