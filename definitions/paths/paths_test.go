package paths

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
)

// jobSet returns a fresh JobSet-like unstructured object.
func jobSet() map[string]any {
	podTemplate := func(image string) map[string]any {
		return map[string]any{
			"spec": map[string]any{
				"containers": []any{
					map[string]any{"name": "main", "image": image},
				},
			},
		}
	}
	return map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2",
		"kind":       "JobSet",
		"metadata": map[string]any{
			"name": "trainer",
			"labels": map[string]any{
				"app.kubernetes.io/name": "trainer",
			},
		},
		"spec": map[string]any{
			"replicatedJobs": []any{
				map[string]any{
					"name":     "driver",
					"replicas": int64(1),
					"template": map[string]any{
						"spec": map[string]any{"template": podTemplate("driver:v1")},
					},
				},
				map[string]any{
					"name":     "workers",
					"replicas": int64(4),
					"template": map[string]any{
						"spec": map[string]any{"template": podTemplate("worker:v1")},
					},
				},
			},
			"suspend": nil,
		},
	}
}

// pyTorchJob returns a fresh PyTorchJob-like unstructured object whose replica specs are a map.
func pyTorchJob() map[string]any {
	return map[string]any{
		"kind": "PyTorchJob",
		"spec": map[string]any{
			"pytorchReplicaSpecs": map[string]any{
				// Worker first in the literal: the result must still be sorted.
				"Worker": map[string]any{
					"replicas": int64(3),
					"template": map[string]any{"spec": map[string]any{}},
				},
				"Master": map[string]any{
					"replicas": int64(1),
					"template": map[string]any{"spec": map[string]any{}},
				},
			},
		},
	}
}

// atMap returns the object at keys below m.
func atMap(m map[string]any, keys ...string) map[string]any {
	return at(m, keys...).(map[string]any)
}

// at returns the value at keys below m.
func at(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		v = v.(map[string]any)[k]
	}
	return v
}

func TestParse(t *testing.T) {
	cases := map[string]struct {
		in        string
		want      []Step
		canonical string // render of the parsed steps
	}{
		"empty string is the root": {
			in:        "",
			canonical: "",
		},
		"single dot is the root": {
			in:        ".",
			canonical: "",
		},
		"single field": {
			in:        "spec",
			want:      []Step{{Kind: Field, Name: "spec"}},
			canonical: "spec",
		},
		"dotted fields": {
			in:        "spec.template.spec",
			want:      []Step{{Kind: Field, Name: "spec"}, {Kind: Field, Name: "template"}, {Kind: Field, Name: "spec"}},
			canonical: "spec.template.spec",
		},
		"leading dot is optional": {
			in:        ".spec.template",
			want:      []Step{{Kind: Field, Name: "spec"}, {Kind: Field, Name: "template"}},
			canonical: "spec.template",
		},
		"wildcard": {
			in:        "spec.replicatedJobs[*].template.spec.template",
			want:      []Step{{Kind: Field, Name: "spec"}, {Kind: Field, Name: "replicatedJobs"}, {Kind: Wildcard}, {Kind: Field, Name: "template"}, {Kind: Field, Name: "spec"}, {Kind: Field, Name: "template"}},
			canonical: "spec.replicatedJobs[*].template.spec.template",
		},
		"leading wildcard": {
			in:        "[*].name",
			want:      []Step{{Kind: Wildcard}, {Kind: Field, Name: "name"}},
			canonical: "[*].name",
		},
		"nested wildcards": {
			in:        "a[*][*].b",
			want:      []Step{{Kind: Field, Name: "a"}, {Kind: Wildcard}, {Kind: Wildcard}, {Kind: Field, Name: "b"}},
			canonical: "a[*][*].b",
		},
		"list index": {
			in:        "spec.containers[3].image",
			want:      []Step{{Kind: Field, Name: "spec"}, {Kind: Field, Name: "containers"}, {Kind: Index, Index: 3}, {Kind: Field, Name: "image"}},
			canonical: "spec.containers[3].image",
		},
		"list index with leading zeros is canonicalised": {
			in:        "a[007]",
			want:      []Step{{Kind: Field, Name: "a"}, {Kind: Index, Index: 7}},
			canonical: "a[7]",
		},
		"double-quoted key with dots": {
			in:        `metadata.labels["app.kubernetes.io/name"]`,
			want:      []Step{{Kind: Field, Name: "metadata"}, {Kind: Field, Name: "labels"}, {Kind: Field, Name: "app.kubernetes.io/name"}},
			canonical: `metadata.labels["app.kubernetes.io/name"]`,
		},
		"single-quoted key": {
			in:        `metadata.labels['single']`,
			want:      []Step{{Kind: Field, Name: "metadata"}, {Kind: Field, Name: "labels"}, {Kind: Field, Name: "single"}},
			canonical: "metadata.labels.single",
		},
		"single-quoted key containing a double quote": {
			in:        `a['say "hi"']`,
			want:      []Step{{Kind: Field, Name: "a"}, {Kind: Field, Name: `say "hi"`}},
			canonical: `a["say \"hi\""]`,
		},
		"escaped double quote inside double-quoted key": {
			in:        `a["x\"y"]`,
			want:      []Step{{Kind: Field, Name: "a"}, {Kind: Field, Name: `x"y`}},
			canonical: `a["x\"y"]`,
		},
		"escaped single quote inside single-quoted key": {
			in:        `a['it\'s']`,
			want:      []Step{{Kind: Field, Name: "a"}, {Kind: Field, Name: "it's"}},
			canonical: `a["it's"]`,
		},
		"escaped backslash inside quoted key": {
			in:        `a["back\\slash"]`,
			want:      []Step{{Kind: Field, Name: "a"}, {Kind: Field, Name: `back\slash`}},
			canonical: `a.back\slash`, // a backslash needs no quoting outside quotes
		},
		"quoted key containing brackets": {
			in:        `a["x[0]"]`,
			want:      []Step{{Kind: Field, Name: "a"}, {Kind: Field, Name: "x[0]"}},
			canonical: `a["x[0]"]`,
		},
		"empty quoted key": {
			in:        `a[""]`,
			want:      []Step{{Kind: Field, Name: "a"}, {Kind: Field, Name: ""}},
			canonical: `a[""]`,
		},
		"leading quoted key": {
			in:        `["a.b"].c`,
			want:      []Step{{Kind: Field, Name: "a.b"}, {Kind: Field, Name: "c"}},
			canonical: `["a.b"].c`,
		},
		"plain name in quotes is rendered bare": {
			in:        `["spec"]["template"]`,
			want:      []Step{{Kind: Field, Name: "spec"}, {Kind: Field, Name: "template"}},
			canonical: "spec.template",
		},
		"numeric field name": {
			in:        "a.0",
			want:      []Step{{Kind: Field, Name: "a"}, {Kind: Field, Name: "0"}},
			canonical: "a.0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q) failed: %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, p.Steps(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse(%q) steps mismatch (-want +got):\n%s", tc.in, diff)
			}
			if got := p.String(); got != tc.in {
				t.Errorf("String() of a parsed path = %q, want its source %q", got, tc.in)
			}
			if got := (Path{steps: p.Steps()}).String(); got != tc.canonical {
				t.Errorf("canonical rendering = %q, want %q", got, tc.canonical)
			}
			// The canonical rendering parses back to the same steps.
			q, err := Parse(tc.canonical)
			if err != nil {
				t.Fatalf("Parse(canonical %q) failed: %v", tc.canonical, err)
			}
			if diff := cmp.Diff(p.Steps(), q.Steps(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip through %q changed the steps (-want +got):\n%s", tc.canonical, diff)
			}
			if p.IsEmpty() != (len(tc.want) == 0) {
				t.Errorf("IsEmpty() = %v, want %v", p.IsEmpty(), len(tc.want) == 0)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]struct {
		in      string
		wantPos int
		wantMsg string // substring of the message
	}{
		"trailing dot": {
			in: "spec.", wantPos: 4, wantMsg: "ends with '.'",
		},
		"double dot": {
			in: "spec..x", wantPos: 5, wantMsg: "expected a field name",
		},
		"lone dot before bracket": {
			in: "spec.[0]", wantPos: 5, wantMsg: "expected a field name",
		},
		"unterminated bracket": {
			in: "spec[", wantPos: 4, wantMsg: "unterminated '['",
		},
		"unterminated wildcard": {
			in: "spec[*", wantPos: 6, wantMsg: "expected ']' after '[*'",
		},
		"wildcard followed by junk": {
			in: "spec[*x]", wantPos: 6, wantMsg: "expected ']' after '[*'",
		},
		"bare word in brackets": {
			in: "spec[abc]", wantPos: 5, wantMsg: "expected '*', a list index or a quoted key",
		},
		"negative index": {
			in: "spec[-1]", wantPos: 5, wantMsg: "expected '*', a list index or a quoted key",
		},
		"unterminated quoted key": {
			in: `spec["unterminated`, wantPos: 5, wantMsg: "unterminated quoted key",
		},
		"unterminated quoted key ending in backslash": {
			in: `spec["abc\`, wantPos: 5, wantMsg: "unterminated quoted key",
		},
		"junk after quoted key": {
			in: `spec["a"x`, wantPos: 8, wantMsg: "expected ']' after quoted key",
		},
		"quoted key at end without bracket": {
			in: `spec["a"`, wantPos: 8, wantMsg: "expected ']' after quoted key",
		},
		"unterminated index": {
			in: "spec[12", wantPos: 7, wantMsg: "expected ']' after list index",
		},
		"index overflows int": {
			in: "spec[99999999999999999999999]", wantPos: 5, wantMsg: "out of range",
		},
		"space between steps": {
			in: "spec x", wantPos: 4, wantMsg: "expected '.' or '['",
		},
		"bare name after bracket": {
			in: "spec[0]x", wantPos: 7, wantMsg: "expected '.' or '['",
		},
		"leading space": {
			in: " spec", wantPos: 0, wantMsg: "unexpected",
		},
		"leading closing bracket": {
			in: "]", wantPos: 0, wantMsg: "unexpected",
		},
		"double dot root": {
			in: "..", wantPos: 1, wantMsg: "expected a field name",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tc.in, p.Steps())
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %v (%T) is not a *SyntaxError", tc.in, err, err)
			}
			if se.Path != tc.in {
				t.Errorf("SyntaxError.Path = %q, want %q", se.Path, tc.in)
			}
			if se.Position != tc.wantPos {
				t.Errorf("Parse(%q): Position = %d, want %d (error: %v)", tc.in, se.Position, tc.wantPos, err)
			}
			if !strings.Contains(se.Msg, tc.wantMsg) {
				t.Errorf("Parse(%q): Msg = %q, want it to contain %q", tc.in, se.Msg, tc.wantMsg)
			}
			if !p.IsEmpty() {
				t.Errorf("Parse(%q) returned steps %v together with an error", tc.in, p.Steps())
			}
		})
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse of an invalid path did not panic")
		}
	}()
	MustParse("spec.")
}

func TestPathHelpers(t *testing.T) {
	p := MustParse("spec.replicatedJobs[*].template.spec.template.spec.containers[*].image")
	if got := p.Wildcards(); got != 2 {
		t.Errorf("Wildcards() = %d, want 2", got)
	}
	prefix, rest := p.SplitAtLastWildcard()
	if got, want := prefix.String(), "spec.replicatedJobs[*].template.spec.template.spec.containers[*]"; got != want {
		t.Errorf("SplitAtLastWildcard prefix = %q, want %q", got, want)
	}
	if got, want := rest.String(), "image"; got != want {
		t.Errorf("SplitAtLastWildcard rest = %q, want %q", got, want)
	}
	if got := prefix.Join(rest).String(); got != "spec.replicatedJobs[*].template.spec.template.spec.containers[*].image" {
		t.Errorf("Join of the split = %q", got)
	}
	// Appending to the prefix must not clobber the original path's steps.
	_ = prefix.Join(MustParse("name"))
	if got := (Path{steps: p.Steps()}).String(); got != "spec.replicatedJobs[*].template.spec.template.spec.containers[*].image" {
		t.Errorf("original path changed to %q after Join on its prefix", got)
	}

	noWild := MustParse("metadata.name")
	prefix, rest = noWild.SplitAtLastWildcard()
	if !prefix.IsEmpty() || rest.String() != "metadata.name" {
		t.Errorf("SplitAtLastWildcard without wildcard = (%q, %q), want (\"\", \"metadata.name\")", prefix, rest)
	}
}

func TestGet(t *testing.T) {
	js := jobSet()
	jobs := at(js, "spec")
	items := jobs.(map[string]any)["replicatedJobs"].([]any)
	driver, workers := items[0].(map[string]any), items[1].(map[string]any)
	driverPod := at(driver, "template", "spec", "template")
	workersPod := at(workers, "template", "spec", "template")

	pt := pyTorchJob()
	specs := at(pt, "spec", "pytorchReplicaSpecs").(map[string]any)

	cases := map[string]struct {
		obj      any
		path     string
		want     []Match
		wantType *TypeError // nil: no error
	}{
		"root with empty path": {
			obj:  map[string]any{"a": int64(1)},
			path: "",
			want: []Match{{Value: map[string]any{"a": int64(1)}, Location: ""}},
		},
		"root with dot": {
			obj:  map[string]any{"a": int64(1)},
			path: ".",
			want: []Match{{Value: map[string]any{"a": int64(1)}, Location: ""}},
		},
		"plain field": {
			obj:  js,
			path: "metadata.name",
			want: []Match{{Value: "trainer", Location: "metadata.name"}},
		},
		"quoted key with dots": {
			obj:  js,
			path: `metadata.labels["app.kubernetes.io/name"]`,
			want: []Match{{Value: "trainer", Location: `metadata.labels["app.kubernetes.io/name"]`}},
		},
		"wildcard over list gives one match per item": {
			obj:  js,
			path: "spec.replicatedJobs[*].template.spec.template",
			want: []Match{
				{Value: driverPod, Location: "spec.replicatedJobs[0].template.spec.template", Bindings: []Binding{{Key: "0", Value: driver}}},
				{Value: workersPod, Location: "spec.replicatedJobs[1].template.spec.template", Bindings: []Binding{{Key: "1", Value: workers}}},
			},
		},
		"nested wildcards bind outermost first": {
			obj:  js,
			path: "spec.replicatedJobs[*].template.spec.template.spec.containers[*].image",
			want: []Match{
				{Value: "driver:v1", Location: "spec.replicatedJobs[0].template.spec.template.spec.containers[0].image", Bindings: []Binding{
					{Key: "0", Value: driver},
					{Key: "0", Value: atMap(driverPod.(map[string]any), "spec")["containers"].([]any)[0]},
				}},
				{Value: "worker:v1", Location: "spec.replicatedJobs[1].template.spec.template.spec.containers[0].image", Bindings: []Binding{
					{Key: "1", Value: workers},
					{Key: "0", Value: atMap(workersPod.(map[string]any), "spec")["containers"].([]any)[0]},
				}},
			},
		},
		"wildcard over map yields sorted keys": {
			obj:  pt,
			path: "spec.pytorchReplicaSpecs[*].replicas",
			want: []Match{
				{Value: int64(1), Location: "spec.pytorchReplicaSpecs.Master.replicas", Bindings: []Binding{{Key: "Master", Value: specs["Master"]}}},
				{Value: int64(3), Location: "spec.pytorchReplicaSpecs.Worker.replicas", Bindings: []Binding{{Key: "Worker", Value: specs["Worker"]}}},
			},
		},
		"wildcard over map with keys needing quotes": {
			obj:  map[string]any{"labels": map[string]any{"b.c": "2", "a": "1"}},
			path: "labels[*]",
			want: []Match{
				{Value: "1", Location: "labels.a", Bindings: []Binding{{Key: "a", Value: "1"}}},
				{Value: "2", Location: `labels["b.c"]`, Bindings: []Binding{{Key: "b.c", Value: "2"}}},
			},
		},
		"list index": {
			obj:  js,
			path: "spec.replicatedJobs[1].name",
			want: []Match{{Value: "workers", Location: "spec.replicatedJobs[1].name"}},
		},
		"index out of range gives no match": {
			obj:  js,
			path: "spec.replicatedJobs[2].name",
		},
		"missing field gives no match": {
			obj:  js,
			path: "metadata.annotations",
		},
		"missing intermediate field gives no match": {
			obj:  js,
			path: "status.conditions[*].type",
		},
		"missing field under wildcard gives no match": {
			obj:  js,
			path: "spec.replicatedJobs[*].template.metadata.labels",
		},
		"explicit null leaf gives no match": {
			obj:  js,
			path: "spec.suspend",
		},
		"explicit null on the way gives no match": {
			obj:  js,
			path: "spec.suspend.x",
		},
		"wildcard over explicit null gives no match": {
			obj:  js,
			path: "spec.suspend[*]",
		},
		"null list items are not matches": {
			obj:  map[string]any{"l": []any{nil, "x"}},
			path: "l[*]",
			want: []Match{{Value: "x", Location: "l[1]", Bindings: []Binding{{Key: "1", Value: "x"}}}},
		},
		"empty list gives no match": {
			obj:  map[string]any{"l": []any{}},
			path: "l[*].x",
		},
		"field into string is a type error": {
			obj:      js,
			path:     "metadata.name.first",
			wantType: &TypeError{Location: "metadata.name", Want: "object", Got: "trainer"},
		},
		"index into string is a type error": {
			obj:      js,
			path:     "metadata.name[0]",
			wantType: &TypeError{Location: "metadata.name", Want: "list", Got: "trainer"},
		},
		"wildcard into string is a type error": {
			obj:      js,
			path:     "metadata.name[*]",
			wantType: &TypeError{Location: "metadata.name", Want: "list or object", Got: "trainer"},
		},
		"index into map is a type error": {
			obj:      js,
			path:     "metadata[0]",
			wantType: &TypeError{Location: "metadata", Want: "list", Got: at(js, "metadata")},
		},
		"field into list is a type error with concrete location": {
			obj:      js,
			path:     "spec.replicatedJobs[*].template.spec.template.spec.containers.name",
			wantType: &TypeError{Location: "spec.replicatedJobs[0].template.spec.template.spec.containers", Want: "object", Got: atMap(driverPod.(map[string]any), "spec")["containers"]},
		},
		"field into number at root": {
			obj:      int64(3),
			path:     "a",
			wantType: &TypeError{Location: "", Want: "object", Got: int64(3)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := runtime.DeepCopyJSONValue(tc.obj)
			got, err := MustParse(tc.path).Get(tc.obj)
			if tc.wantType != nil {
				var te *TypeError
				if !errors.As(err, &te) {
					t.Fatalf("Get(%q) error = %v, want a *TypeError", tc.path, err)
				}
				if diff := cmp.Diff(tc.wantType, te); diff != "" {
					t.Errorf("Get(%q) TypeError mismatch (-want +got):\n%s", tc.path, diff)
				}
				if !strings.Contains(err.Error(), tc.wantType.Want) {
					t.Errorf("error %q does not name %q", err, tc.wantType.Want)
				}
				if tc.wantType.Location != "" && !strings.Contains(err.Error(), tc.wantType.Location) {
					t.Errorf("error %q does not name the location %q", err, tc.wantType.Location)
				}
				return
			}
			if err != nil {
				t.Fatalf("Get(%q) failed: %v", tc.path, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Get(%q) mismatch (-want +got):\n%s", tc.path, diff)
			}
			// Every Location must be a wildcard-free path that leads back to the same value.
			for _, m := range got {
				p, err := Parse(m.Location)
				if err != nil {
					t.Fatalf("Location %q does not parse: %v", m.Location, err)
				}
				v, ok, err := p.GetOne(tc.obj)
				if err != nil || !ok {
					t.Fatalf("GetOne(%q) = (_, %v, %v), want the match", m.Location, ok, err)
				}
				if diff := cmp.Diff(m.Value, v); diff != "" {
					t.Errorf("GetOne(%q) differs from the match (-match +got):\n%s", m.Location, diff)
				}
			}
			if diff := cmp.Diff(before, tc.obj); diff != "" {
				t.Errorf("Get modified the object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestGetOne(t *testing.T) {
	cases := map[string]struct {
		path       string
		want       any
		wantExists bool
		wantErr    string
	}{
		"existing value": {
			path: "spec.replicatedJobs[1].replicas", want: int64(4), wantExists: true,
		},
		"missing value": {
			path: "spec.replicatedJobs[1].parallelism",
		},
		"index out of range": {
			path: "spec.replicatedJobs[5]",
		},
		"explicit null does not exist": {
			path: "spec.suspend",
		},
		"wildcard is refused": {
			path: "spec.replicatedJobs[*].name", wantErr: "has [*]",
		},
		"type error": {
			path: "kind.x", wantErr: "kind: expected object, found string",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, exists, err := MustParse(tc.path).GetOne(jobSet())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("GetOne(%q) error = %v, want one containing %q", tc.path, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("GetOne(%q) failed: %v", tc.path, err)
			}
			if exists != tc.wantExists {
				t.Errorf("GetOne(%q) exists = %v, want %v", tc.path, exists, tc.wantExists)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GetOne(%q) value mismatch (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

type resources struct {
	CPU    string `json:"cpu"`
	Memory string `json:"memory,omitempty"`
	GPUs   int    `json:"gpus"`
}

func TestSet(t *testing.T) {
	cases := map[string]struct {
		obj       func() map[string]any
		path      string
		value     any
		wantCount int
		wantErr   string // substring; empty for success
		// edit applies the expected change to a fresh copy of obj(); nil: unchanged.
		edit func(map[string]any)
	}{
		"plain field replaces the value": {
			obj: jobSet, path: "metadata.name", value: "other", wantCount: 1,
			edit: func(m map[string]any) { at(m, "metadata").(map[string]any)["name"] = "other" },
		},
		"through wildcard on every instance": {
			obj: jobSet, path: "spec.replicatedJobs[*].replicas", value: 2, wantCount: 2,
			edit: func(m map[string]any) {
				for _, j := range atMap(m, "spec")["replicatedJobs"].([]any) {
					j.(map[string]any)["replicas"] = int64(2)
				}
			},
		},
		"through nested wildcards on every instance": {
			obj: jobSet, path: "spec.replicatedJobs[*].template.spec.template.spec.containers[*].image", value: "img:v2", wantCount: 2,
			edit: func(m map[string]any) {
				for _, j := range atMap(m, "spec")["replicatedJobs"].([]any) {
					c := at(j.(map[string]any), "template", "spec", "template", "spec").(map[string]any)["containers"].([]any)
					c[0].(map[string]any)["image"] = "img:v2"
				}
			},
		},
		"wildcard over map values": {
			obj: pyTorchJob, path: "spec.pytorchReplicaSpecs[*].restartPolicy", value: "OnFailure", wantCount: 2,
			edit: func(m map[string]any) {
				for _, s := range at(m, "spec", "pytorchReplicaSpecs").(map[string]any) {
					s.(map[string]any)["restartPolicy"] = "OnFailure"
				}
			},
		},
		"creates missing intermediate objects": {
			obj: jobSet, path: `spec.replicatedJobs[*].template.spec.template.metadata.labels["team"]`, value: "ml", wantCount: 2,
			edit: func(m map[string]any) {
				for _, j := range atMap(m, "spec")["replicatedJobs"].([]any) {
					pod := at(j.(map[string]any), "template", "spec", "template").(map[string]any)
					pod["metadata"] = map[string]any{"labels": map[string]any{"team": "ml"}}
				}
			},
		},
		"creates missing intermediate objects at the root": {
			obj: func() map[string]any { return map[string]any{} }, path: `metadata.annotations["a.b/c"]`, value: "x", wantCount: 1,
			edit: func(m map[string]any) {
				m["metadata"] = map[string]any{"annotations": map[string]any{"a.b/c": "x"}}
			},
		},
		"replaces an explicit null on the way with an object": {
			obj: jobSet, path: "spec.suspend.x", value: true, wantCount: 1,
			edit: func(m map[string]any) { at(m, "spec").(map[string]any)["suspend"] = map[string]any{"x": true} },
		},
		"wildcard over a missing field creates nothing": {
			obj: jobSet, path: "spec.replicatedJobs[*].template.spec.template.spec.initContainers[*].image", value: "x",
		},
		"wildcard over a missing top-level field creates nothing": {
			obj: jobSet, path: "status.conditions[*].status", value: "True",
		},
		"wildcard deeper below a missing field creates nothing": {
			obj: jobSet, path: "status.a.b[*]", value: "x",
		},
		"wildcard over an explicit null creates nothing": {
			obj: jobSet, path: "spec.suspend[*].x", value: "x",
		},
		"wildcard over an empty list writes nothing": {
			obj: func() map[string]any { return map[string]any{"l": []any{}} }, path: "l[*].x", value: "x",
		},
		"list index sets in place": {
			obj: jobSet, path: "spec.replicatedJobs[1].replicas", value: int64(8), wantCount: 1,
			edit: func(m map[string]any) {
				atMap(m, "spec")["replicatedJobs"].([]any)[1].(map[string]any)["replicas"] = int64(8)
			},
		},
		"go int becomes int64": {
			obj: jobSet, path: "spec.replicatedJobs[0].replicas", value: int(5), wantCount: 1,
			edit: func(m map[string]any) {
				atMap(m, "spec")["replicatedJobs"].([]any)[0].(map[string]any)["replicas"] = int64(5)
			},
		},
		"go float stays float64": {
			obj: func() map[string]any { return map[string]any{} }, path: "ratio", value: float32(0.5), wantCount: 1,
			edit: func(m map[string]any) { m["ratio"] = float64(0.5) },
		},
		"struct becomes a map with json names": {
			obj: func() map[string]any { return map[string]any{} }, path: "spec.resources", value: resources{CPU: "2", GPUs: 1}, wantCount: 1,
			edit: func(m map[string]any) {
				m["spec"] = map[string]any{"resources": map[string]any{"cpu": "2", "gpus": int64(1)}}
			},
		},
		"map[string]string becomes map[string]any": {
			obj: jobSet, path: "metadata.labels", value: map[string]string{"a": "b"}, wantCount: 1,
			edit: func(m map[string]any) { at(m, "metadata").(map[string]any)["labels"] = map[string]any{"a": "b"} },
		},
		"slice of ints becomes []any of int64": {
			obj: func() map[string]any { return map[string]any{} }, path: "ports", value: []int{80, 443}, wantCount: 1,
			edit: func(m map[string]any) { m["ports"] = []any{int64(80), int64(443)} },
		},
		"nil value writes an explicit null": {
			obj: jobSet, path: "metadata.labels", value: nil, wantCount: 1,
			edit: func(m map[string]any) { at(m, "metadata").(map[string]any)["labels"] = nil },
		},
		"index beyond end is an error": {
			obj: jobSet, path: "spec.replicatedJobs[2].replicas", value: 1,
			wantErr: "spec.replicatedJobs[2]: index 2 out of range (list has 2 items)",
		},
		"index into a missing list is an error": {
			obj: jobSet, path: "spec.other[0]", value: 1,
			wantErr: "expected list, found null",
		},
		"field into a string is a type error": {
			obj: jobSet, path: "metadata.name.first", value: "x",
			wantErr: "metadata.name: expected object, found string",
		},
		"wildcard into a string is a type error": {
			obj: jobSet, path: "kind[*]", value: "x",
			wantErr: "kind: expected list or object, found string",
		},
		"value that cannot be marshalled": {
			obj: jobSet, path: "metadata.name", value: make(chan int),
			wantErr: "path metadata.name",
		},
		"empty path is refused": {
			obj: jobSet, path: "", value: map[string]any{},
			wantErr: "cannot replace the whole object",
		},
		"dot path is refused": {
			obj: jobSet, path: ".", value: map[string]any{},
			wantErr: "cannot replace the whole object",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := tc.obj()
			want := tc.obj()
			if tc.edit != nil {
				tc.edit(want)
			}
			n, err := MustParse(tc.path).Set(obj, tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Set(%q) error = %v, want one containing %q", tc.path, err, tc.wantErr)
				}
				if diff := cmp.Diff(tc.obj(), obj); diff != "" {
					t.Errorf("failed Set(%q) modified the object (-before +after):\n%s", tc.path, diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Set(%q) failed: %v", tc.path, err)
			}
			if n != tc.wantCount {
				t.Errorf("Set(%q) = %d, want %d locations", tc.path, n, tc.wantCount)
			}
			if diff := cmp.Diff(want, obj); diff != "" {
				t.Errorf("Set(%q) result mismatch (-want +got):\n%s", tc.path, diff)
			}
			// The result must still be a valid unstructured value.
			_ = runtime.DeepCopyJSONValue(obj)
		})
	}
}

func TestSetTypeError(t *testing.T) {
	_, err := MustParse("spec.replicatedJobs[*].name.x").Set(jobSet(), "v")
	var te *TypeError
	if !errors.As(err, &te) {
		t.Fatalf("error = %v, want a *TypeError", err)
	}
	if diff := cmp.Diff(&TypeError{Location: "spec.replicatedJobs[0].name", Want: "object", Got: "driver"}, te); diff != "" {
		t.Errorf("TypeError mismatch (-want +got):\n%s", diff)
	}
}

func TestSetWildcardOverMissingLeavesObjectUntouched(t *testing.T) {
	obj := jobSet()
	delete(at(obj, "spec").(map[string]any), "suspend")
	before := runtime.DeepCopyJSON(obj)
	for _, path := range []string{
		"status.conditions[*].status",
		"spec.replicatedJobs[*].template.spec.template.spec.volumes[*].name",
		"spec.replicatedJobs[*].template.metadata.labels[*]",
		"spec.missing.deeper[*].x.y",
		"metadata.labels.missing[*]",
	} {
		n, err := MustParse(path).Set(obj, "x")
		if err != nil {
			t.Fatalf("Set(%q) failed: %v", path, err)
		}
		if n != 0 {
			t.Errorf("Set(%q) wrote %d locations, want 0", path, n)
		}
		if diff := cmp.Diff(before, obj); diff != "" {
			t.Fatalf("Set(%q) changed the object (-before +after):\n%s", path, diff)
		}
	}
}

func TestSetWritesIndependentCopies(t *testing.T) {
	obj := jobSet()
	value := map[string]any{"limits": map[string]any{"cpu": "1"}, "list": []any{"a"}}
	n, err := MustParse("spec.replicatedJobs[*].template.spec.template.spec.containers[*].resources").Set(obj, value)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("Set wrote %d locations, want 2", n)
	}
	matches, err := MustParse("spec.replicatedJobs[*].template.spec.template.spec.containers[*].resources").Get(obj)
	if err != nil || len(matches) != 2 {
		t.Fatalf("Get = %d matches, %v", len(matches), err)
	}
	first := matches[0].Value.(map[string]any)
	first["limits"].(map[string]any)["cpu"] = "changed"
	first["list"].([]any)[0] = "changed"
	first["added"] = true

	want := map[string]any{"limits": map[string]any{"cpu": "1"}, "list": []any{"a"}}
	if diff := cmp.Diff(want, matches[1].Value); diff != "" {
		t.Errorf("mutating one written value changed another (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, value); diff != "" {
		t.Errorf("mutating a written value changed the caller's value (-want +got):\n%s", diff)
	}
	// And mutating the caller's value afterwards does not reach the object.
	value["limits"].(map[string]any)["cpu"] = "caller"
	if diff := cmp.Diff(want, matches[1].Value); diff != "" {
		t.Errorf("mutating the caller's value changed the object (-want +got):\n%s", diff)
	}
}

func TestUpdate(t *testing.T) {
	type call struct {
		Old    any
		Exists bool
	}
	cases := map[string]struct {
		obj       func() map[string]any
		path      string
		wantCalls []call
	}{
		"existing values through wildcard": {
			obj: jobSet, path: "spec.replicatedJobs[*].replicas",
			wantCalls: []call{{Old: int64(1), Exists: true}, {Old: int64(4), Exists: true}},
		},
		"missing leaf": {
			obj: jobSet, path: "spec.replicatedJobs[*].parallelism",
			wantCalls: []call{{Old: nil, Exists: false}, {Old: nil, Exists: false}},
		},
		"missing intermediate": {
			obj: jobSet, path: "status.phase",
			wantCalls: []call{{Old: nil, Exists: false}},
		},
		"explicit null leaf exists": {
			obj: jobSet, path: "spec.suspend",
			wantCalls: []call{{Old: nil, Exists: true}},
		},
		"list index": {
			obj: jobSet, path: "spec.replicatedJobs[1].name",
			wantCalls: []call{{Old: "workers", Exists: true}},
		},
		"map wildcard in key order": {
			obj: pyTorchJob, path: "spec.pytorchReplicaSpecs[*].replicas",
			wantCalls: []call{{Old: int64(1), Exists: true}, {Old: int64(3), Exists: true}},
		},
		"wildcard over missing field is never called": {
			obj: jobSet, path: "status.conditions[*].status",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var calls []call
			obj := tc.obj()
			n, err := MustParse(tc.path).Update(obj, func(old any, exists bool) (any, error) {
				calls = append(calls, call{Old: old, Exists: exists})
				return "new", nil
			})
			if err != nil {
				t.Fatalf("Update(%q) failed: %v", tc.path, err)
			}
			if n != len(tc.wantCalls) {
				t.Errorf("Update(%q) = %d, want %d", tc.path, n, len(tc.wantCalls))
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("Update(%q) calls mismatch (-want +got):\n%s", tc.path, diff)
			}
			// Every location now reads back as the new value.
			got, err := MustParse(tc.path).Get(obj)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.wantCalls) {
				t.Errorf("Get after Update found %d matches, want %d", len(got), len(tc.wantCalls))
			}
			for _, m := range got {
				if m.Value != "new" {
					t.Errorf("%s = %v after Update, want \"new\"", m.Location, m.Value)
				}
			}
		})
	}
}

func TestUpdateError(t *testing.T) {
	boom := errors.New("boom")
	obj := map[string]any{"a": map[string]any{"b": int64(1)}}
	_, err := MustParse("a.b").Update(obj, func(any, bool) (any, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want the callback's error", err)
	}
	if diff := cmp.Diff(map[string]any{"a": map[string]any{"b": int64(1)}}, obj); diff != "" {
		t.Errorf("failed Update changed the object (-want +got):\n%s", diff)
	}

	_, err = MustParse("").Update(obj, func(any, bool) (any, error) {
		t.Error("callback called for the empty path")
		return nil, nil
	})
	if err == nil {
		t.Error("Update of the empty path succeeded, want an error")
	}
}
