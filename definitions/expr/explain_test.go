package expr_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions/expr"
)

// TestEvalErrorNamesTheCulprit: CEL's own errors ("no such overload: _<_") do not say which
// value of the object was wrong; the error adds the operands of the call that failed, or the
// field being read, with their types.
func TestEvalErrorNamesTheCulprit(t *testing.T) {
	tests := map[string]struct {
		src     string
		want    expr.Result
		v       any // self.v
		wantErr string
	}{
		"comparison with a string": {
			src: "self.v.replicas < 3 ? 1 : 2", want: expr.Int, v: map[string]any{"replicas": "two"},
			wantErr: "(self.v.replicas is string, 3 is int)",
		},
		"arithmetic with null": {
			src: "self.v.size - 1", want: expr.Int, v: map[string]any{"size": nil},
			wantErr: "(self.v.size is null, 1 is int)",
		},
		"a macro over a string": {
			src: "self.v.exists(c, c == 'a')", want: expr.Bool, v: "abc",
			wantErr: "(self.v is string)",
		},
		"a missing field": {
			src: "self.v.spec.replicas", want: expr.Int, v: map[string]any{"status": int64(1)},
			wantErr: "no such key: spec (reading self.v.spec)",
		},
		"a list read as an object": {
			src: "self.v.template.metadata", want: expr.StringMap, v: map[string]any{"template": []any{}},
			wantErr: "(reading self.v.template.metadata)",
		},
		"the failure that made the result, not one that was absorbed": {
			src: "(self.v.a > 1 || true) && self.v.b > 1", want: expr.Bool, v: map[string]any{"a": "x", "b": "y"},
			wantErr: "(self.v.b is string, 1 is int)",
		},
		"long operands are shortened": {
			src:  "self.v.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.ccc + 1",
			want: expr.Int, v: map[string]any{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": map[string]any{"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb": map[string]any{"ccc": "x"}}},
			wantErr: "(self.v.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbb… is string, 1 is int)",
		},
	}
	env := dynEnv(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := compile(t, env, tc.src, tc.want)
			act := &expr.Activation{Self: map[string]any{"v": tc.v}}
			var err error
			switch tc.want {
			case expr.Int:
				_, err = p.EvalInt(act)
			case expr.Bool:
				_, err = p.EvalBool(act)
			case expr.StringMap:
				_, err = p.EvalStringMap(act)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// TestEvalErrorExplainsCostTrackedPrograms: the explanation also works for programs whose cost
// is tracked at run time (a loop over a list), which use a differently built program.
func TestEvalErrorExplainsCostTrackedPrograms(t *testing.T) {
	p := compile(t, dynEnv(t), "self.v.map(x, x * 2).sum()", expr.Int)
	require.True(t, p.CostTracked)
	_, err := p.EvalInt(&expr.Activation{Self: map[string]any{"v": []any{int64(1), "2"}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(x is string, 2 is int)")
}
