package expr_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/workmap/workmap/definitions/expr"
)

// rolePath is the field every test expression claims to come from.
var rolePath = field.NewPath("spec", "roles").Index(1).Child("replicas")

func dynEnv(t *testing.T) *expr.Env {
	t.Helper()
	env, err := expr.NewEnv(expr.Types{})
	require.NoError(t, err)
	return env
}

func compile(t *testing.T, env *expr.Env, src string, want expr.Result) *expr.Program {
	t.Helper()
	p, ferr := env.Compile(rolePath, src, want)
	require.Nil(t, ferr, "compiling %q", src)
	require.NotNil(t, p)
	return p
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		src     string
		want    expr.Result
		wantErr []string
	}{
		"undeclared reference": {
			src: "itme.name == 'a'", want: expr.Bool,
			wantErr: []string{"undeclared reference to 'itme'", "(at column 1)"},
		},
		"undeclared function": {
			src: "self.x.frobnicate()", want: expr.Bool,
			wantErr: []string{"undeclared reference to 'frobnicate'"},
		},
		"syntax error": {
			src: "self.spec.replicas +", want: expr.Int,
			wantErr: []string{"Syntax error", "(at column 21)"},
		},
		"unbalanced parenthesis": {
			src: "(1 + 2", want: expr.Int,
			wantErr: []string{"Syntax error"},
		},
		"bool wanted, int given": {
			src: "1 + 2", want: expr.Bool,
			wantErr: []string{"must evaluate to bool, has type int"},
		},
		"bool wanted, string given": {
			src: "'true'", want: expr.Bool,
			wantErr: []string{"must evaluate to bool, has type string"},
		},
		"int wanted, string given": {
			src: "'3'", want: expr.Int,
			wantErr: []string{"must evaluate to int, has type string"},
		},
		"int wanted, double given": {
			src: "1.5", want: expr.Int,
			wantErr: []string{"must evaluate to int, has type double"},
		},
		"int or string wanted, bool given": {
			src: "true", want: expr.IntOrString,
			wantErr: []string{"must evaluate to int or numeric string, has type bool"},
		},
		"int or string wanted, list given": {
			src: "[1]", want: expr.IntOrString,
			wantErr: []string{"must evaluate to int or numeric string, has type list(int)"},
		},
		"string wanted, int given": {
			src: "size(self.name)", want: expr.String,
			wantErr: []string{"must evaluate to string, has type int"},
		},
		"string wanted, bool given": {
			src: "self.name == 'a'", want: expr.String,
			wantErr: []string{"must evaluate to string, has type bool"},
		},
		"string map wanted, map of ints given": {
			src: "{'a': 1}", want: expr.StringMap,
			wantErr: []string{"must evaluate to map(string, string), has type map(string, int)"},
		},
		"string map wanted, int keys given": {
			src: "{1: 'a'}", want: expr.StringMap,
			wantErr: []string{"must evaluate to map(string, string), has type map(int, string)"},
		},
		"string map wanted, list given": {
			src: "['a']", want: expr.StringMap,
			wantErr: []string{"must evaluate to map(string, string), has type list(string)"},
		},
		"string map wanted, string given": {
			src: "'a=b'", want: expr.StringMap,
			wantErr: []string{"must evaluate to map(string, string), has type string"},
		},
		"type error inside the expression": {
			src: "1 + 'a'", want: expr.Int,
			wantErr: []string{"no matching overload for '_+_'"},
		},
		"several errors are all reported": {
			src: "itme + keyy", want: expr.Int,
			wantErr: []string{"undeclared reference to 'itme' (at column 1)", "; ", "undeclared reference to 'keyy' (at column 8)"},
		},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, ferr := env.Compile(rolePath, tc.src, tc.want)
			require.Nil(t, p)
			require.NotNil(t, ferr)
			require.Equal(t, field.ErrorTypeInvalid, ferr.Type)
			require.Equal(t, "spec.roles[1].replicas", ferr.Field)
			require.Equal(t, tc.src, ferr.BadValue)
			for _, w := range tc.wantErr {
				require.Contains(t, ferr.Detail, w)
			}
			require.NotContains(t, ferr.Detail, "in container", "the empty container is noise")
			// The whole error reads as one line naming the field.
			require.True(t, strings.HasPrefix(ferr.Error(), "spec.roles[1].replicas: Invalid value: "), ferr.Error())
		})
	}
}

func TestCompileAcceptsResultTypes(t *testing.T) {
	tests := map[string]struct {
		src  string
		want expr.Result
	}{
		"bool":                         {src: "1 < 2", want: expr.Bool},
		"dynamic value as bool":        {src: "self.suspend", want: expr.Bool},
		"int":                          {src: "1 + 2", want: expr.Int},
		"uint as int":                  {src: "3u", want: expr.Int},
		"dynamic value as int":         {src: "self.spec.replicas", want: expr.Int},
		"int as int or string":         {src: "4", want: expr.IntOrString},
		"uint as int or string":        {src: "4u", want: expr.IntOrString},
		"string as int or string":      {src: "'4'", want: expr.IntOrString},
		"dynamic value as int or str":  {src: "self.metadata.labels['index']", want: expr.IntOrString},
		"string":                       {src: "'a' + 'b'", want: expr.String},
		"null as string":               {src: "null", want: expr.String},
		"dynamic value as string":      {src: "self.metadata.name", want: expr.String},
		"string map":                   {src: "{'a': 'b'}", want: expr.StringMap},
		"empty map as string map":      {src: "{}", want: expr.StringMap},
		"dynamic map as string map":    {src: "self.metadata.labels", want: expr.StringMap},
		"dynamic value as string map":  {src: "self.spec.selector.matchLabels", want: expr.StringMap},
		"map with dynamic values":      {src: "{'a': self.x}", want: expr.StringMap},
		"conditional with int results": {src: "self.suspend ? 0 : 3", want: expr.Int},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := compile(t, env, tc.src, tc.want)
			require.Equal(t, tc.src, p.Source)
			require.Equal(t, "spec.roles[1].replicas", p.Field)
		})
	}
}

func TestResultString(t *testing.T) {
	got := []string{expr.Bool.String(), expr.Int.String(), expr.IntOrString.String(), expr.String.String(), expr.StringMap.String()}
	want := []string{"bool", "int", "int or numeric string", "string", "map(string, string)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result names (-want +got):\n%s", diff)
	}
}

func TestCostEstimate(t *testing.T) {
	tests := map[string]struct {
		src         string
		want        expr.Result
		wantErr     bool
		wantTracked bool
	}{
		"nested loop over pods": {
			src: "pods.all(p, pods.all(q, p == q))", want: expr.Bool, wantErr: true,
		},
		"nested loop over children": {
			src: "children.jobs.all(j, children.jobs.exists(k, j == k))", want: expr.Bool, wantErr: true,
		},
		"pods against children": {
			src: "pods.all(p, children.jobs.exists(j, j.metadata.name == p.metadata.name))", want: expr.Bool, wantErr: true,
		},
		"triple loop over spec lists": {
			src: "self.a.all(x, self.a.all(y, self.a.all(z, x == z)))", want: expr.Bool, wantErr: true,
		},
		"single loop over pods": {
			src: "pods.exists(p, p.status.phase == 'Running')", want: expr.Bool, wantTracked: true,
		},
		"single loop over children": {
			src: "children.jobs.filter(j, j.?status.?active.orValue(0) > 0).size()", want: expr.Int, wantTracked: true,
		},
		"sum over spec lists": {
			src: "self.spec.replicatedJobs.map(r, r.?replicas.orValue(1)).sum()", want: expr.Int, wantTracked: true,
		},
		// Spec lists are assumed to hold at most MaxCollection items: a nested loop over them
		// fits, the run-time limit stops it on larger data.
		"nested loop over a spec list": {
			src: "self.a.all(x, self.a.all(y, x >= 0))", want: expr.Bool, wantTracked: true,
		},
		"string search": {
			src: "self.metadata.name.contains('x')", want: expr.Bool, wantTracked: true,
		},
		"constant": {
			src: "1 + 2", want: expr.Int,
		},
		"field reads": {
			src: "self.spec.?suspend.orValue(false) ? 0 : self.spec.replicas", want: expr.Int,
		},
		"size of a live list": {
			src: "size(pods)", want: expr.Int,
		},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, ferr := env.Compile(rolePath, tc.src, tc.want)
			if tc.wantErr {
				require.Nil(t, p)
				require.NotNil(t, ferr)
				require.Equal(t, "spec.roles[1].replicas", ferr.Field)
				require.Contains(t, ferr.Detail, "estimated cost")
				require.Contains(t, ferr.Detail, "exceeds the limit of 10000000")
				return
			}
			require.Nil(t, ferr)
			require.LessOrEqual(t, p.EstimatedCost, expr.CostLimit)
			require.Equal(t, tc.wantTracked, p.CostTracked, "estimated cost %d", p.EstimatedCost)
			if tc.wantTracked {
				require.Positive(t, p.EstimatedCost)
			}
		})
	}
}

// TestRuntimeCostLimit evaluates a program whose estimate passes on data far larger than the
// estimate assumes. A nested loop over a large list would show the limit too, but cel-go's
// cost tracker needs about ten seconds to count to CostLimit through a comprehension, so the
// test uses a regular expression, whose cost is charged in one step: string length times
// pattern length.
func TestRuntimeCostLimit(t *testing.T) {
	pattern := "^(" + strings.Repeat("z", 400) + "|a)"
	p := compile(t, dynEnv(t), "self.s.matches('"+pattern+"')", expr.Bool)
	require.True(t, p.CostTracked)
	require.LessOrEqual(t, p.EstimatedCost, expr.CostLimit)

	ok, err := p.EvalBool(&expr.Activation{Self: map[string]any{"s": "abc"}})
	require.NoError(t, err)
	require.True(t, ok)

	// 1 MiB × 400 pattern characters ≈ 100k × 100 cost units, just over the limit.
	_, err = p.EvalBool(&expr.Activation{Self: map[string]any{"s": strings.Repeat("a", 1<<20)}})
	require.Error(t, err)
	require.ErrorContains(t, err, "cost")
	require.ErrorContains(t, err, "spec.roles[1].replicas")
}

func TestLive(t *testing.T) {
	tests := map[string]struct {
		src  string
		want expr.Result
		live bool
	}{
		"self only":                          {src: "self.spec.replicas", want: expr.Int},
		"pods":                               {src: "size(pods)", want: expr.Int, live: true},
		"pods in a loop":                     {src: "pods.exists(p, p.status.phase == 'Running')", want: expr.Bool, live: true},
		"children":                           {src: "children.jobs.size()", want: expr.Int, live: true},
		"children in has()":                  {src: "has(children.jobs)", want: expr.Bool, live: true},
		"children through optional":          {src: "children.?jobs.orValue([]).size()", want: expr.Int, live: true},
		"children by key":                    {src: "children['jobs'].size()", want: expr.Int, live: true},
		"pods inside a loop over the spec":   {src: "self.spec.workers.exists(w, pods.size() > 0)", want: expr.Bool, live: true},
		"pod is not live":                    {src: "pod.metadata.name", want: expr.String},
		"item, key and replica are not live": {src: "item.name + key + string(replica)", want: expr.String},
		"a field named pods":                 {src: "self.status.pods", want: expr.Int},
		"a field named children":             {src: "self.children.size()", want: expr.Int},
		"a key named pods":                   {src: "self['pods']", want: expr.Int},
		"a string mentioning pods":           {src: "'pods and children'", want: expr.String},
		"loop variable named pods":           {src: "self.spec.workers.exists(pods, pods.name == 'x')", want: expr.Bool},
		"loop variable named children":       {src: "self.spec.workers.all(children, children.size() > 0)", want: expr.Bool},
		"nested loop variable named pods":    {src: "self.a.exists(pods, self.b.exists(q, q > 1 && pods > 0))", want: expr.Bool},
		"two-variable loop named pods":       {src: "self.spec.labels.all(k, pods, pods != '')", want: expr.Bool},
		"loop over pods named pods":          {src: "pods.exists(pods, pods.status.phase == 'Failed')", want: expr.Bool, live: true},
		"pods beside a shadowing loop":       {src: "self.spec.workers.exists(pods, pods.name == 'x') || size(pods) > 0", want: expr.Bool, live: true},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.live, compile(t, env, tc.src, tc.want).Live)
		})
	}
}

func TestEvalInt(t *testing.T) {
	tests := map[string]struct {
		src     string
		want    expr.Result // Int when zero
		v       any         // self.v
		wantInt int64
		wantErr string
	}{
		"int literal":             {src: "2 + 3", wantInt: 5},
		"uint literal":            {src: "3u", wantInt: 3},
		"int from data":           {src: "self.v", v: int64(7), wantInt: 7},
		"whole float":             {src: "self.v", v: 3.0, wantInt: 3},
		"negative whole float":    {src: "self.v", v: -2.0, wantInt: -2},
		"numeric string":          {src: "self.v", v: "42", wantInt: 42},
		"negative numeric string": {src: "self.v", v: "-7", wantInt: -7},
		"numeric string literal":  {src: "'12'", want: expr.IntOrString, wantInt: 12},
		"label value":             {src: "self.v['index']", want: expr.IntOrString, v: map[string]any{"index": "3"}, wantInt: 3},
		"fraction":                {src: "self.v", v: 2.5, wantErr: "spec.roles[1].replicas: expected int, got double"},
		"decimal string":          {src: "self.v", v: "1.5", wantErr: "spec.roles[1].replicas: expected int, got string"},
		"word":                    {src: "self.v", v: "three", wantErr: "spec.roles[1].replicas: expected int, got string"},
		"number with spaces":      {src: "self.v", v: " 4", wantErr: "expected int, got string"},
		"empty string":            {src: "''", want: expr.IntOrString, wantErr: "expected int, got string"},
		"bool":                    {src: "self.v", v: true, wantErr: "expected int, got bool"},
		"null":                    {src: "self.v", v: nil, wantErr: "expected int, got null"},
		"list":                    {src: "self.v", v: []any{int64(1)}, wantErr: "expected int, got list"},
		"missing field":           {src: "self.w", wantErr: "spec.roles[1].replicas: no such key: w"},
		"division by zero":        {src: "1 / (self.v - 1)", v: int64(1), wantErr: "division by zero"},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			want := tc.want
			if want == expr.Bool {
				want = expr.Int
			}
			got, err := compile(t, env, tc.src, want).EvalInt(&expr.Activation{Self: map[string]any{"v": tc.v}})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantInt, got)
		})
	}
}

func TestEvalString(t *testing.T) {
	tests := map[string]struct {
		src     string
		v       any
		want    string
		wantErr string
	}{
		"concatenation":    {src: "'a' + 'b'", want: "ab"},
		"string from data": {src: "self.v", v: "w-0", want: "w-0"},
		"null literal":     {src: "null", want: ""},
		"null from data":   {src: "self.v", v: nil, want: ""},
		"empty string":     {src: "self.v", v: "", want: ""},
		"int from data":    {src: "self.v", v: int64(7), want: "7"},
		"double":           {src: "self.v", v: 1.5, wantErr: "spec.roles[1].replicas: expected string, got double"},
		"bool":             {src: "self.v", v: true, wantErr: "expected string, got bool"},
		"map":              {src: "self.v", v: map[string]any{}, wantErr: "expected string, got map"},
		"missing field":    {src: "self.w", wantErr: "no such key: w"},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := compile(t, env, tc.src, expr.String).EvalString(&expr.Activation{Self: map[string]any{"v": tc.v}})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEvalStringMap(t *testing.T) {
	tests := map[string]struct {
		src     string
		v       any
		want    map[string]string
		wantErr string
	}{
		"literal":          {src: "{'a': 'b', 'c': 'd'}", want: map[string]string{"a": "b", "c": "d"}},
		"empty literal":    {src: "{}", want: map[string]string{}},
		"map from data":    {src: "self.v", v: map[string]any{"app": "x", "role": "leader"}, want: map[string]string{"app": "x", "role": "leader"}},
		"empty from data":  {src: "self.v", v: map[string]any{}, want: map[string]string{}},
		"built from data":  {src: "{'app': self.v.name}", v: map[string]any{"name": "n"}, want: map[string]string{"app": "n"}},
		"transformed":      {src: "self.v.transformMap(k, v, v + '!')", v: map[string]any{"a": "b"}, want: map[string]string{"a": "b!"}},
		"non-string value": {src: "self.v", v: map[string]any{"a": int64(1)}, wantErr: `spec.roles[1].replicas: expected map(string, string), but the value of "a" is int`},
		"non-string key":   {src: "self.v", v: map[int64]any{1: "a"}, wantErr: "expected map(string, string), but key 1 is int"},
		"string":           {src: "self.v", v: "a=b", wantErr: "expected map(string, string), got string"},
		"list":             {src: "self.v", v: []any{"a"}, wantErr: "expected map(string, string), got list"},
		"null":             {src: "self.v", v: nil, wantErr: "expected map(string, string), got null"},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := compile(t, env, tc.src, expr.StringMap).EvalStringMap(&expr.Activation{Self: map[string]any{"v": tc.v}})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("map (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvalBool(t *testing.T) {
	tests := map[string]struct {
		v       any
		want    bool
		wantErr string
	}{
		"true":   {v: true, want: true},
		"false":  {v: false},
		"string": {v: "true", wantErr: "spec.roles[1].replicas: expected bool, got string"},
		"null":   {v: nil, wantErr: "expected bool, got null"},
	}
	p := compile(t, dynEnv(t), "self.v", expr.Bool)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := p.EvalBool(&expr.Activation{Self: map[string]any{"v": tc.v}})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestActivation(t *testing.T) {
	tests := map[string]struct {
		src     string
		act     expr.Activation
		want    bool
		wantErr string
	}{
		"item unbound without HasItem":    {src: "item == null", wantErr: "no such attribute(s): item"},
		"item bound to null":              {src: "item == null", act: expr.Activation{HasItem: true}, want: true},
		"item and key bound":              {src: "item.name == 'a' && key == '3'", act: expr.Activation{HasItem: true, Item: map[string]any{"name": "a"}, Key: "3"}, want: true},
		"key unbound without HasItem":     {src: "key == ''", wantErr: "no such attribute(s): key"},
		"key bound to the empty string":   {src: "key == ''", act: expr.Activation{HasItem: true}, want: true},
		"replica unbound":                 {src: "replica == 0", act: expr.Activation{Replica: 0}, wantErr: "no such attribute(s): replica"},
		"replica bound at zero":           {src: "replica == 0", act: expr.Activation{HasReplica: true}, want: true},
		"replica bound":                   {src: "replica == 2", act: expr.Activation{Replica: 2, HasReplica: true}, want: true},
		"self unbound":                    {src: "self.size() == 0", wantErr: "no such attribute(s): self"},
		"self bound empty":                {src: "self.size() == 0", act: expr.Activation{Self: map[string]any{}}, want: true},
		"pods unbound":                    {src: "size(pods) == 0", wantErr: "no such attribute(s): pods"},
		"pods bound empty":                {src: "size(pods) == 0", act: expr.Activation{Pods: []any{}}, want: true},
		"children unbound":                {src: "size(children) == 0", wantErr: "no such attribute(s): children"},
		"children bound empty":            {src: "size(children) == 0", act: expr.Activation{Children: map[string][]any{}}, want: true},
		"children lists":                  {src: "children.jobs.size() == 2", act: expr.Activation{Children: map[string][]any{"jobs": {map[string]any{}, map[string]any{}}}}, want: true},
		"missing child kind":              {src: "children.jobs.size() == 0", act: expr.Activation{Children: map[string][]any{}}, wantErr: "no such key: jobs"},
		"pod unbound":                     {src: "pod.metadata.name == 'p'", wantErr: "no such attribute(s): pod"},
		"pod bound":                       {src: "pod.metadata.name == 'p'", act: expr.Activation{Pod: map[string]any{"metadata": map[string]any{"name": "p"}}}, want: true},
		"an unbound variable not reached": {src: "true || item == null", want: true},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := compile(t, env, tc.src, expr.Bool).EvalBool(&tc.act)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, "spec.roles[1].replicas: ")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestActivationResolveName(t *testing.T) {
	a := &expr.Activation{Self: map[string]any{}, HasItem: true, Item: "x", Key: "k", Replica: 4, HasReplica: true}
	tests := map[string]struct {
		want   any
		wantOK bool
	}{
		expr.VarSelf:     {want: map[string]any{}, wantOK: true},
		expr.VarItem:     {want: "x", wantOK: true},
		expr.VarKey:      {want: "k", wantOK: true},
		expr.VarReplica:  {want: int64(4), wantOK: true},
		expr.VarPods:     {want: []any(nil)},
		expr.VarChildren: {want: map[string][]any(nil)},
		expr.VarPod:      {want: map[string]any(nil)},
		"other":          {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := a.ResolveName(name)
			require.Equal(t, tc.wantOK, ok)
			require.Equal(t, tc.want, got)
		})
	}
	require.Nil(t, a.Parent())
}

func TestLibraries(t *testing.T) {
	tests := map[string]struct {
		src  string
		self map[string]any
	}{
		"optional field chain, absent":  {src: "self.?status.?conditions.orValue([]).size() == 0", self: map[string]any{}},
		"optional field chain, present": {src: "self.?status.?conditions.orValue([]).size() == 2", self: map[string]any{"status": map[string]any{"conditions": []any{"a", "b"}}}},
		"optional index":                {src: "self.metadata.?labels[?'app'].orValue('none') == 'none'", self: map[string]any{"metadata": map[string]any{}}},
		"optional value":                {src: "optional.of(1).hasValue() && !optional.none().hasValue()", self: map[string]any{}},
		"quantity":                      {src: "quantity('4').isGreaterThan(quantity('2'))"},
		"quantity arithmetic":           {src: "quantity('1Gi').add(quantity('1Gi')).isGreaterThan(quantity('2G'))"},
		"quantity check":                {src: "isQuantity('500m') && !isQuantity('five')"},
		"lowerAscii":                    {src: "'ABC'.lowerAscii() == 'abc'"},
		"split and join":                {src: "'a,b'.split(',').join('-') == 'a-b'"},
		"format":                        {src: "'%s-%d'.format(['w', 3]) == 'w-3'"},
		"regex find":                    {src: "'pod-12'.find('[0-9]+') == '12'"},
		"list sum and sort":             {src: "[3, 1, 2].sum() == 6 && [3, 1].sort() == [1, 3]"},
		"list indexOf":                  {src: "['a', 'b'].indexOf('b') == 1"},
		"sets":                          {src: "sets.contains([1, 2, 3], [1, 2])"},
		"two-variable comprehension":    {src: "{'a': 1, 'b': 2}.all(k, v, v > 0)"},
		"URL":                           {src: "url('https://example.com/x').getHost() == 'example.com'"},
		"IP and CIDR":                   {src: "cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))"},
		"semver":                        {src: "isSemver('1.2.3') && semver('1.10.0').isGreaterThan(semver('1.9.0'))"},
		"cross-type numeric comparison": {src: "1 < 1.5 && 2u > 1"},
		"duration":                      {src: "duration('1h') > duration('59m')"},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			self := tc.self
			if self == nil {
				self = map[string]any{}
			}
			got, err := compile(t, env, tc.src, expr.Bool).EvalBool(&expr.Activation{Self: self})
			require.NoError(t, err)
			require.True(t, got)
		})
	}
}

// TestTypedVariables builds types by hand (the crdschema tests build them from a CRD).
func TestTypedVariables(t *testing.T) {
	str := apiservercel.StringType
	obj := func(fields map[string]*apiservercel.DeclType) *apiservercel.DeclType {
		f := map[string]*apiservercel.DeclField{}
		for n, typ := range fields {
			f[n] = apiservercel.NewDeclField(n, typ, false, nil, nil)
		}
		return apiservercel.NewObjectType("object", f)
	}
	container := obj(map[string]*apiservercel.DeclType{"image": str})
	worker := obj(map[string]*apiservercel.DeclType{"name": str, "containers": apiservercel.NewListType(container, 10)})
	self := obj(map[string]*apiservercel.DeclType{
		"spec": obj(map[string]*apiservercel.DeclType{"replicas": apiservercel.IntType, "workers": apiservercel.NewListType(worker, 10)}),
	})

	tests := map[string]struct {
		types   expr.Types
		src     string
		want    expr.Result
		wantErr string
	}{
		"typed self":                 {types: expr.Types{Self: self}, src: "self.spec.replicas", want: expr.Int},
		"typed self, misspelt":       {types: expr.Types{Self: self}, src: "self.spec.replicsa", want: expr.Int, wantErr: "undefined field 'replicsa'"},
		"typed self, wrong type":     {types: expr.Types{Self: self}, src: "self.spec.replicas", want: expr.String, wantErr: "must evaluate to string, has type int"},
		"typed self, untyped item":   {types: expr.Types{Self: self}, src: "item.anything", want: expr.String},
		"object item":                {types: expr.Types{Self: self, Item: worker}, src: "item.containers[0].image", want: expr.String},
		"object item, misspelt":      {types: expr.Types{Self: self, Item: worker}, src: "item.nmae", want: expr.String, wantErr: "undefined field 'nmae'"},
		"object item, untyped self":  {types: expr.Types{Item: worker}, src: "self.anything + item.name", want: expr.String},
		"string item":                {types: expr.Types{Item: str}, src: "item.lowerAscii()", want: expr.String},
		"list of objects as item":    {types: expr.Types{Self: self, Item: apiservercel.NewListType(worker, 10)}, src: "item[0].containers[0].image", want: expr.String},
		"list item, misspelt":        {types: expr.Types{Self: self, Item: apiservercel.NewListType(worker, 10)}, src: "item[0].containres", want: expr.String, wantErr: "undefined field 'containres'"},
		"map of objects as item":     {types: expr.Types{Item: apiservercel.NewMapType(str, worker, 10)}, src: "item['a'].containers.size()", want: expr.Int},
		"self still typed with item": {types: expr.Types{Self: self, Item: worker}, src: "self.spec.workers[0].containers[0].image + item.name", want: expr.String},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env, err := expr.NewEnv(tc.types)
			require.NoError(t, err)
			_, ferr := env.Compile(rolePath, tc.src, tc.want)
			if tc.wantErr != "" {
				require.NotNil(t, ferr)
				require.Contains(t, ferr.Detail, tc.wantErr)
				return
			}
			require.Nil(t, ferr)
		})
	}
}

// TestMixedMapLiteral: a selector mixing constant strings and untyped fields compiles.
func TestMixedMapLiteral(t *testing.T) {
	env, err := expr.NewEnv(expr.Types{})
	require.NoError(t, err)
	p, ferr := env.Compile(field.NewPath("spec", "pods", "selector"), "{'app.kubernetes.io/managed-by': 'op', 'app.kubernetes.io/part-of': self.metadata.name}", expr.StringMap)
	require.Nil(t, ferr)
	m, err := p.EvalStringMap(&expr.Activation{Self: map[string]any{"metadata": map[string]any{"name": "x"}}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"app.kubernetes.io/managed-by": "op", "app.kubernetes.io/part-of": "x"}, m)
}

func TestReadsOnlyMetadataMaps(t *testing.T) {
	tests := map[string]struct {
		src  string
		want bool
	}{
		"a label":                      {src: "pod.metadata.labels['a']", want: true},
		"an optional label":            {src: "pod.metadata.?labels[?'a'].orValue('')", want: true},
		"an annotation":                {src: "pod.metadata.annotations['b'] + pod.metadata.labels['a']", want: true},
		"no pod at all":                {src: "self.metadata.name", want: true},
		"the pod's name":               {src: "pod.metadata.name", want: false},
		"the pod's spec":               {src: "pod.spec.nodeName", want: false},
		"the whole metadata":           {src: "string(size(pod.metadata))", want: false},
		"the pod itself":               {src: "string(size(pod))", want: false},
		"a label, and the pod's name":  {src: "pod.metadata.labels['a'] + pod.metadata.name", want: false},
		"the uid through an optional":  {src: "pod.metadata.?uid.orValue('')", want: false},
		"a presence test on the label": {src: "has(pod.metadata.labels) ? 'a' : 'b'", want: false},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, compile(t, env, tc.src, expr.String).ReadsOnlyMetadataMaps("pod"))
		})
	}
}
