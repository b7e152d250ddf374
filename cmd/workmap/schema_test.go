package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/manifest"
)

const schemaFile = "../../docs/workloadtree.schema.json"

// workloadTreeSchema compiles docs/workloadtree.schema.json.
func workloadTreeSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("workloadtree.schema.json", doc))
	s, err := c.Compile("workloadtree.schema.json")
	require.NoError(t, err)
	return s
}

// validateTrees checks a document printed by tree/get -o json: one WorkloadTree, or a List
// of them; it returns how many trees it checked.
func validateTrees(t *testing.T, s *jsonschema.Schema, out []byte, where string) int {
	t.Helper()
	var head struct {
		APIVersion, Kind string
		Items            []json.RawMessage
	}
	require.NoError(t, json.Unmarshal(out, &head), where)
	trees := [][]byte{out}
	if head.Kind == "List" {
		require.Equal(t, "v1", head.APIVersion, where)
		trees = nil
		for _, item := range head.Items {
			trees = append(trees, item)
		}
	}
	for _, tree := range trees {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(tree))
		require.NoError(t, err, where)
		require.NoError(t, s.Validate(inst), "%s: %s", where, tree)
	}
	return len(trees)
}

// TestWorkloadTreeSchemaValidatesOutputs validates real `tree -o json` documents against the
// schema: the examples and the upstream samples offline, and every catalog fixture expanded
// with its child objects and pods, as a live tree is.
func TestWorkloadTreeSchemaValidatesOutputs(t *testing.T) {
	s := workloadTreeSchema(t)

	t.Run("examples, offline", func(t *testing.T) {
		files, err := filepath.Glob("../../examples/*.yaml")
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			out, err := run(t, "tree", "-f", f, "-o", "json")
			require.NoError(t, err, f)
			require.Positive(t, validateTrees(t, s, []byte(out), f))
		}
	})

	t.Run("catalog fixtures, live", func(t *testing.T) {
		reg, err := catalog.Registry()
		require.NoError(t, err)
		files, err := filepath.Glob("../../definitions/catalog/testdata/*/*.yaml")
		require.NoError(t, err)
		require.NotEmpty(t, files)
		checked, live := 0, 0
		for _, f := range files {
			w, ok := expandFixture(t, reg, f)
			if !ok {
				continue
			}
			out, err := json.Marshal(definitions.NewWorkloadTree(w))
			require.NoError(t, err)
			checked += validateTrees(t, s, out, f)
			if w.Live != nil {
				live++
			}
		}
		require.Greater(t, checked, 50, "most fixtures expand")
		require.Greater(t, live, 30, "most fixtures are live")
	})

	t.Run("upstream samples, offline", func(t *testing.T) {
		files, _ := filepath.Glob("../../../shared/upstream/samples/*/*.yaml")
		if len(files) == 0 {
			requireOrSkip(t, "the upstream samples (../shared/upstream/samples) are not here")
		}
		reg, err := catalog.Registry()
		require.NoError(t, err)
		checked := 0
		for _, f := range files {
			docs, err := manifest.ReadFile(f)
			require.NoError(t, err, f)
			for _, d := range docs {
				def, ok := reg.Lookup(d.Object.GroupVersionKind().GroupKind())
				if !ok {
					continue // a kind no definition knows (a sample's Service, ConfigMap, ...)
				}
				w, err := def.Expand(d.Object)
				if err != nil {
					t.Logf("%s: %v", d.Where(), err)
					continue
				}
				out, err := json.Marshal(definitions.NewWorkloadTree(w))
				require.NoError(t, err)
				checked += validateTrees(t, s, out, d.Where())
			}
		}
		require.Greater(t, checked, 30)
	})
}

// TestWorkloadTreeSchemaRejects: the schema is strict where a consumer relies on it.
func TestWorkloadTreeSchemaRejects(t *testing.T) {
	s := workloadTreeSchema(t)
	out, err := run(t, "tree", "-f", example, "-f", example, "-o", "json")
	require.NoError(t, err)
	var list struct{ Items []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list.Items, 2)
	tests := map[string]struct {
		edit func(doc map[string]any)
		want string
	}{
		"another version":  {edit: func(d map[string]any) { d["apiVersion"] = "workmap.dev/v1" }, want: "apiVersion"},
		"no status":        {edit: func(d map[string]any) { delete(d, "status") }, want: "status"},
		"a field unknown":  {edit: func(d map[string]any) { d["extra"] = 1 }, want: "extra"},
		"a state unknown":  {edit: func(d map[string]any) { d["status"].(map[string]any)["state"] = "Sleeping" }, want: "state"},
		"a bad quantity":   {edit: func(d map[string]any) { d["totals"].(map[string]any)["resources"].(map[string]any)["memory"] = "8GB" }, want: "memory"},
		"pods as a string": {edit: func(d map[string]any) { d["roles"].([]any)[0].(map[string]any)["pods"] = "1" }, want: "pods"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var doc map[string]any
			b, err := json.Marshal(list.Items[0])
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &doc))
			tc.edit(doc)
			b, err = json.Marshal(doc)
			require.NoError(t, err)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			require.NoError(t, err)
			err = s.Validate(inst)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// requireOrSkip skips, or fails when WORKMAP_REQUIRE_ALL is set (as CI sets it).
func requireOrSkip(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("WORKMAP_REQUIRE_ALL") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// expandFixture expands a catalog fixture (root, children, pods) as live mode does; false
// for a fixture that does not expand (malformed on purpose).
func expandFixture(t *testing.T, reg *definitions.Registry, file string) (*definitions.Workload, bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var f struct {
		Offline  bool             `json:"offline"`
		Root     map[string]any   `json:"root"`
		Children []map[string]any `json:"children"`
		Pods     []map[string]any `json:"pods"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil || f.Root == nil {
		return nil, false
	}
	root := &unstructured.Unstructured{Object: f.Root}
	def, ok := reg.Lookup(root.GroupVersionKind().GroupKind())
	if !ok {
		return nil, false
	}
	if f.Offline {
		w, err := def.Expand(root)
		return w, err == nil
	}
	live := &definitions.LiveData{Children: map[string][]map[string]any{}, Pods: f.Pods}
	byKind := map[schema.GroupKind]string{}
	for _, c := range def.Children() {
		byKind[c.GroupVersionKind.GroupKind()] = c.Name
	}
	for _, c := range f.Children {
		name := byKind[(&unstructured.Unstructured{Object: c}).GroupVersionKind().GroupKind()]
		live.Children[name] = append(live.Children[name], c)
	}
	if live.Pods == nil {
		live.Pods = []map[string]any{}
	}
	w, err := def.ExpandLive(root, live)
	return w, err == nil
}

// TestWorkloadTreeSchemaCoversType checks the schema against the Go type, field by field:
// every JSON field of WorkloadTree (and of the types it holds) is a property of the schema's
// object at the same place, required exactly when the field is not omitted when empty, and
// the schema has no property the type lacks. A field added to the Go type fails here until
// docs/workloadtree.schema.json describes it.
func TestWorkloadTreeSchemaCoversType(t *testing.T) {
	b, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	var root map[string]any
	require.NoError(t, json.Unmarshal(b, &root))
	defs, _ := root["$defs"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		for {
			ref, ok := s["$ref"].(string)
			if !ok {
				return s
			}
			name, ok := strings.CutPrefix(ref, "#/$defs/")
			require.True(t, ok, "only local $refs: %s", ref)
			s, ok = defs[name].(map[string]any)
			require.True(t, ok, "no $defs/%s", name)
		}
	}
	var check func(path string, typ reflect.Type, s map[string]any)
	// A type against one schema is checked once: a recursive type (nested topology) ends.
	type pair struct {
		typ    reflect.Type
		schema uintptr
	}
	checked := map[pair]bool{}
	check = func(path string, typ reflect.Type, s map[string]any) {
		s = resolve(s)
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if key := (pair{typ, reflect.ValueOf(s).Pointer()}); typ.Kind() == reflect.Struct {
			if checked[key] {
				return
			}
			checked[key] = true
		}
		switch typ.Kind() {
		case reflect.Slice:
			if typ.Elem().Kind() == reflect.Uint8 {
				return
			}
			items, ok := s["items"].(map[string]any)
			require.True(t, ok, "%s: the schema gives no items", path)
			check(path+"[]", typ.Elem(), items)
			return
		case reflect.Struct:
		default:
			return // scalars and maps: their types are checked by the outputs validated
		}
		fields, required := jsonFields(typ)
		props, _ := s["properties"].(map[string]any)
		var names []string
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
		var want []string
		for name := range fields {
			want = append(want, name)
		}
		sort.Strings(want)
		require.Equal(t, want, names, "%s (%s): the schema's properties and the Go type's JSON fields differ", path, typ)
		var req []string
		for _, r := range s["required"].([]any) {
			req = append(req, r.(string))
		}
		sort.Strings(req)
		sort.Strings(required)
		require.Equal(t, required, req, "%s (%s): required in the schema, and not omitempty in Go", path, typ)
		require.Equal(t, false, s["additionalProperties"], "%s: the schema allows no other property", path)
		for _, name := range want {
			check(path+"."+name, fields[name], props[name].(map[string]any))
		}
	}
	check("WorkloadTree", reflect.TypeFor[definitions.WorkloadTree](), root)
}

// jsonFields are a struct's JSON fields (embedded structs inlined) with their types, and the
// names of those not omitted when empty.
func jsonFields(typ reflect.Type) (map[string]reflect.Type, []string) {
	fields := map[string]reflect.Type{}
	var required []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			inner := f.Type
			for inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			more, req := jsonFields(inner)
			for k, v := range more {
				fields[k] = v
			}
			required = append(required, req...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
		if !slices.Contains(strings.Split(opts, ","), "omitempty") && !slices.Contains(strings.Split(opts, ","), "omitzero") {
			required = append(required, name)
		}
	}
	return fields, required
}
