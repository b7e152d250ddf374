package paths

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		".",
		"spec",
		".spec.template",
		"spec.replicatedJobs[*].template.spec.template",
		"spec.pytorchReplicaSpecs[*].template.spec.containers[0].image",
		`metadata.labels["app.kubernetes.io/name"]`,
		`metadata.annotations['a.b/c']`,
		`a["x\"y"]['it\'s']["back\\slash"]`,
		`[*][*][0][""]`,
		"a[007]",
		"spec[99999999999999999999999]",
		"spec..x",
		`spec["a"x`,
		"spec[*",
		`["a.b"].c`,
		"spec x",
	} {
		f.Add(seed)
	}
	obj := map[string]any{
		"a": map[string]any{
			"b":   []any{map[string]any{"c": "x"}, "str", nil, int64(1)},
			"a.b": true,
			"":    float64(1.5),
		},
		"spec": map[string]any{"x": nil, "0": []any{[]any{"deep"}}},
		"s":    "string",
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			checkSyntaxError(t, "Parse", s, err)
			return
		}
		canonical := Path{steps: p.Steps()}.String()
		q, err := Parse(canonical)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its canonical form %q does not parse: %v", s, canonical, err)
		}
		if diff := cmp.Diff(p.Steps(), q.Steps(), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("Parse(%q) and Parse(canonical %q) differ (-orig +canonical):\n%s", s, canonical, diff)
		}
		if again := (Path{steps: q.Steps()}).String(); again != canonical {
			t.Fatalf("canonical form is not stable: %q -> %q", canonical, again)
		}
		matches, err := p.Get(obj)
		if err == nil {
			for _, m := range matches {
				if _, err := Parse(m.Location); err != nil {
					t.Fatalf("Get(%q) gave location %q that does not parse: %v", s, m.Location, err)
				}
				if len(m.Bindings) != p.Wildcards() {
					t.Fatalf("Get(%q) match at %q has %d bindings, want %d", s, m.Location, len(m.Bindings), p.Wildcards())
				}
			}
		}
	})
}

// FuzzSet writes through arbitrary paths into a fixed object: Set must not panic, and when it
// succeeds every location it reports writing must read back the value written — the write-back
// of pod-template fields (labels, scheduler name) into every instance relies on both.
func FuzzSet(f *testing.F) {
	for _, seed := range []string{
		"a.b[0].c", "a.b[*].c", "a.b[*]", "spec.x.y", "spec[\"0\"][0][0]", "[*].new", "[*][*]", "a.b[9]",
		"s.x", "a[\"a.b\"]", "spec.0[*]", "new.deep.path", "a.b[1][*]", "a.b[2].x",
	} {
		for v := range uint8(4) {
			f.Add(seed, v)
		}
	}
	obj := map[string]any{
		"a": map[string]any{
			"b":   []any{map[string]any{"c": "x"}, "str", nil, int64(1)},
			"a.b": true,
			"":    float64(1.5),
		},
		"spec": map[string]any{"x": nil, "0": []any{[]any{"deep"}}},
		"s":    "string",
	}
	values := []any{"v", map[string]any{"k": int64(1)}, []any{}, nil}
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		p, err := Parse(s)
		if err != nil || p.IsEmpty() {
			return
		}
		value := values[int(which)%len(values)]
		work := runtime.DeepCopyJSON(obj)
		n, err := p.Set(work, value)
		if err != nil {
			return
		}
		matches, err := p.Get(work)
		if err != nil {
			t.Fatalf("Set(%q) wrote %d locations, then Get failed: %v", s, n, err)
		}
		if value == nil {
			return // Get skips nulls
		}
		if len(matches) != n {
			t.Fatalf("Set(%q) reported %d locations, Get finds %d", s, n, len(matches))
		}
		for _, m := range matches {
			if diff := cmp.Diff(value, m.Value); diff != "" {
				t.Fatalf("Set(%q): %s reads back differently (-written +read):\n%s", s, m.Location, diff)
			}
		}
	})
}

// FuzzParseJQ checks that ParseJQ never panics, reports errors inside its input, and that what
// it accepts reads back the same: the part of the input it consumed, its jq rendering and its
// workmap rendering all give the same steps.
func FuzzParseJQ(f *testing.F) {
	for _, seed := range []string{
		".", " . ", ".a.b", `.a."b.c"`, ".a[]?.b?", `.a["k"][0]`, ".a.[0]", ".[]", ".a // 1",
		".a | .b", "..", ".a..b", `.a["\(x)"]`, `.a["\u00e9\n"]`, ".a[-1]", ".a[1:2]", ".a??", "a.b", "",
		".a[99999999999999999999999]", `.a["b"x]`, `."`, ".a[*]",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, end, err := ParseJQ(s)
		if err != nil {
			checkSyntaxError(t, "ParseJQ", s, err)
			return
		}
		if end <= 0 || end > len(s) {
			t.Fatalf("ParseJQ(%q) stopped at %d, outside (0, %d]", s, end, len(s))
		}
		for _, again := range []string{s[:end], p.JQ()} {
			q, qEnd, err := ParseJQ(again)
			if err != nil || qEnd != len(again) || !q.Equal(p) {
				t.Fatalf("ParseJQ(%q) = %v; ParseJQ(%q) = %v, end %d, %v", s, p.Steps(), again, q.Steps(), qEnd, err)
			}
		}
		if q, err := Parse(p.String()); err != nil || !q.Equal(p) {
			t.Fatalf("ParseJQ(%q) = %v; its workmap form %q parses to %v, %v", s, p.Steps(), p.String(), q.Steps(), err)
		}
	})
}

// checkSyntaxError fails unless err, from parsing s with fn, is a *SyntaxError positioned in s.
func checkSyntaxError(t *testing.T, fn, s string, err error) {
	t.Helper()
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("%s(%q) error %v (%T) is not a *SyntaxError", fn, s, err, err)
	}
	if se.Position < 0 || se.Position > len(s) {
		t.Fatalf("%s(%q) error position %d outside [0, %d]", fn, s, se.Position, len(s))
	}
}
