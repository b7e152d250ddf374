package paths

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %v (%T) is not a *SyntaxError", s, err, err)
			}
			if se.Position < 0 || se.Position > len(s) {
				t.Fatalf("Parse(%q) error position %d outside [0, %d]", s, se.Position, len(s))
			}
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
