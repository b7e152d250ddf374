package paths

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseJQ(t *testing.T) {
	f := func(name string) Step { return Step{Kind: Field, Name: name} }
	all := Step{Kind: Wildcard}
	cases := map[string]struct {
		in   string
		want []Step
		end  int    // where the path stops; len(in) when 0
		jq   string // the path rendered back as jq
	}{
		"identity":                         {in: ".", jq: "."},
		"identity with spaces":             {in: "  . ", end: 3, jq: "."},
		"identity then an operator":        {in: ". as $o | $o", end: 1, jq: "."},
		"optional identity":                {in: ".?", jq: "."},
		"fields":                           {in: ".spec.template", want: []Step{f("spec"), f("template")}, jq: ".spec.template"},
		"identifier characters":            {in: ".a_b.C9", want: []Step{f("a_b"), f("C9")}, jq: ".a_b.C9"},
		"iteration":                        {in: ".spec.jobs[].template", want: []Step{f("spec"), f("jobs"), all, f("template")}, jq: ".spec.jobs[].template"},
		"root iteration":                   {in: ".[].name", want: []Step{all, f("name")}, jq: ".[].name"},
		"index":                            {in: ".a[0][12]", want: []Step{f("a"), {Kind: Index, Index: 0}, {Kind: Index, Index: 12}}, jq: ".a[0][12]"},
		"bracketed key":                    {in: `.labels["app.kubernetes.io/name"]`, want: []Step{f("labels"), f("app.kubernetes.io/name")}, jq: `.labels["app.kubernetes.io/name"]`},
		"bracketed plain key":              {in: `.["a"]`, want: []Step{f("a")}, jq: ".a"},
		"dot-quoted key":                   {in: `.metadata."a.b".c`, want: []Step{f("metadata"), f("a.b"), f("c")}, jq: `.metadata["a.b"].c`},
		"dot before a bracket":             {in: ".a.[0].[]", want: []Step{f("a"), {Kind: Index, Index: 0}, all}, jq: ".a[0][]"},
		"optional steps":                   {in: ".a[]?.b?", want: []Step{f("a"), all, f("b")}, jq: ".a[].b"},
		"JSON escapes":                     {in: `.a["x\"y\u0041\n"]`, want: []Step{f("a"), f("x\"yA\n")}, jq: `.a["x\"yA\n"]`},
		"no HTML escaping":                 {in: `.a["<&>"]`, want: []Step{f("a"), f("<&>")}, jq: `.a["<&>"]`},
		"an operator inside a key":         {in: `.a["x|y // z"]`, want: []Step{f("a"), f("x|y // z")}, jq: `.a["x|y // z"]`},
		"stops at whitespace":              {in: ".spec.replicas // 1", want: []Step{f("spec"), f("replicas")}, end: 14, jq: ".spec.replicas"},
		"stops at an operator":             {in: ".spec.replicas//1", want: []Step{f("spec"), f("replicas")}, end: 14, jq: ".spec.replicas"},
		"stops at a pipe":                  {in: ".a[]|.b", want: []Step{f("a"), all}, end: 4, jq: ".a[]"},
		"stops at a dash":                  {in: ".a.app-name", want: []Step{f("a"), f("app")}, end: 6, jq: ".a.app"},
		"stops at a second ?":              {in: ".a??", want: []Step{f("a")}, end: 3, jq: ".a"},
		"stops at a bracket after a space": {in: ".a [0]", want: []Step{f("a")}, end: 2, jq: ".a"},
		"a keyword is a field name":        {in: ".if.end", want: []Step{f("if"), f("end")}, jq: ".if.end"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, end, err := ParseJQ(tc.in)
			if err != nil {
				t.Fatalf("ParseJQ(%q) failed: %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, p.Steps(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseJQ(%q) steps mismatch (-want +got):\n%s", tc.in, diff)
			}
			wantEnd := tc.end
			if wantEnd == 0 {
				wantEnd = len(tc.in)
			}
			if end != wantEnd {
				t.Errorf("ParseJQ(%q) stopped at %d, want %d", tc.in, end, wantEnd)
			}
			if got := p.JQ(); got != tc.jq {
				t.Errorf("JQ() = %q, want %q", got, tc.jq)
			}
			q, qEnd, err := ParseJQ(p.JQ())
			if err != nil || qEnd != len(p.JQ()) {
				t.Fatalf("ParseJQ(JQ() %q) = end %d, %v; want the whole of it", p.JQ(), qEnd, err)
			}
			if !q.Equal(p) {
				t.Errorf("round trip through %q changed the steps: %v, want %v", p.JQ(), q.Steps(), p.Steps())
			}
			if r, err := Parse(p.String()); err != nil || !r.Equal(p) {
				t.Errorf("the workmap rendering %q does not parse back to the same steps: %v", p.String(), err)
			}
		})
	}
}

func TestParseJQErrors(t *testing.T) {
	cases := map[string]struct {
		in      string
		wantPos int
		wantMsg string // substring of the message
	}{
		"empty":                         {in: "", wantPos: 0, wantMsg: "starts with '.'"},
		"only whitespace":               {in: "  ", wantPos: 2, wantMsg: "starts with '.'"},
		"no leading dot":                {in: "spec.replicas", wantPos: 0, wantMsg: "starts with '.'"},
		"a leading bracket":             {in: ` ["a"]`, wantPos: 1, wantMsg: "starts with '.'"},
		"trailing dot":                  {in: ".spec.", wantPos: 5, wantMsg: "ends with '.'"},
		"recursive descent":             {in: "..|.a", wantPos: 2, wantMsg: "expected a field name"},
		"double dot inside":             {in: ".a..b", wantPos: 3, wantMsg: "expected a field name"},
		"dot then a digit":              {in: ".a.0", wantPos: 3, wantMsg: "expected a field name"},
		"unterminated bracket":          {in: ".a[", wantPos: 2, wantMsg: "unterminated '['"},
		"workmap wildcard":              {in: ".a[*]", wantPos: 3, wantMsg: "expected ']', a list index or a quoted key"},
		"single-quoted key":             {in: ".a['b']", wantPos: 3, wantMsg: "expected ']', a list index or a quoted key"},
		"negative index":                {in: ".a[-1]", wantPos: 3, wantMsg: "expected ']', a list index or a quoted key"},
		"computed index":                {in: ".a[.i]", wantPos: 3, wantMsg: "expected ']', a list index or a quoted key"},
		"slice":                         {in: ".a[1:2]", wantPos: 4, wantMsg: "expected ']' after list index"},
		"unterminated index":            {in: ".a[12", wantPos: 5, wantMsg: "expected ']' after list index"},
		"index overflows int":           {in: ".a[99999999999999999999999]", wantPos: 3, wantMsg: "out of range"},
		"unterminated key":              {in: `.a["b`, wantPos: 3, wantMsg: "unterminated quoted key"},
		"unterminated dot-quoted key":   {in: `.a."b\"`, wantPos: 3, wantMsg: "unterminated quoted key"},
		"junk after key":                {in: `.a["b"x]`, wantPos: 6, wantMsg: "expected ']' after quoted key"},
		"interpolation":                 {in: `.a["x\(.b)"]`, wantPos: 5, wantMsg: "string interpolation"},
		"interpolation in a dotted key": {in: `."\(.b)"`, wantPos: 2, wantMsg: "string interpolation"},
		"invalid escape":                {in: `.a["\q"]`, wantPos: 3, wantMsg: "invalid string"},
		"raw control character":         {in: ".a[\"x\ty\"]", wantPos: 3, wantMsg: "invalid string"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, end, err := ParseJQ(tc.in)
			if err == nil {
				t.Fatalf("ParseJQ(%q) = %v (end %d), want an error", tc.in, p.Steps(), end)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("ParseJQ(%q) error %v (%T) is not a *SyntaxError", tc.in, err, err)
			}
			if se.Path != tc.in || se.Position != tc.wantPos || !strings.Contains(se.Msg, tc.wantMsg) {
				t.Errorf("ParseJQ(%q) error = %q at %d in %q, want %q at %d", tc.in, se.Msg, se.Position, se.Path, tc.wantMsg, tc.wantPos)
			}
			if !p.IsEmpty() || end != 0 {
				t.Errorf("ParseJQ(%q) returned steps %v and end %d together with an error", tc.in, p.Steps(), end)
			}
		})
	}
}

func TestEqualAndCutPrefix(t *testing.T) {
	p := MustParse(`spec.jobs[*].template["a.b"]`)
	jq, _, err := ParseJQ(`.spec.jobs[].template."a.b"`)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Equal(jq) || !jq.Equal(p) {
		t.Errorf("%q and %q have the same steps but are not Equal", p, jq.JQ())
	}
	if p.Equal(MustParse("spec.jobs[*]")) {
		t.Errorf("%q is Equal to its prefix", p)
	}
	cases := map[string]struct {
		prefix, rest string
		ok           bool
	}{
		"a proper prefix":  {prefix: "spec.jobs[*]", rest: `template["a.b"]`, ok: true},
		"the whole path":   {prefix: `spec.jobs[*].template["a.b"]`, rest: "", ok: true},
		"the empty path":   {prefix: ".", rest: `spec.jobs[*].template["a.b"]`, ok: true},
		"another step":     {prefix: "spec.jobs[0]", ok: false},
		"longer than p":    {prefix: `spec.jobs[*].template["a.b"].c[*]`, ok: false},
		"not at the start": {prefix: "jobs[*]", ok: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rest, ok := p.CutPrefix(MustParse(tc.prefix))
			if ok != tc.ok || rest.String() != tc.rest {
				t.Errorf("CutPrefix(%q) = %q, %v; want %q, %v", tc.prefix, rest.String(), ok, tc.rest, tc.ok)
			}
		})
	}
}
