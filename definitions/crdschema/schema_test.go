package crdschema_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions/crdschema"
	"github.com/workmap/workmap/definitions/expr"
	"github.com/workmap/workmap/definitions/paths"

	"github.com/workmap/workmap/internal/needs"
)

// widgetCRD is a small CRD with the shapes definitions meet in real CRDs: a scalar, a list of
// objects holding a pod-template-like object, a string map, a preserve-unknown-fields object
// and embedded resources, one with its own fields and one that preserves unknown fields.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion:
            type: string
          kind:
            type: string
          metadata:
            type: object
          spec:
            type: object
            properties:
              replicas:
                type: integer
              workers:
                type: array
                items:
                  type: object
                  properties:
                    name:
                      type: string
                    template:
                      type: object
                      properties:
                        metadata:
                          type: object
                          properties:
                            labels:
                              type: object
                              additionalProperties:
                                type: string
                        spec:
                          type: object
                          properties:
                            containers:
                              type: array
                              items:
                                type: object
                                properties:
                                  name:
                                    type: string
                                  image:
                                    type: string
              labels:
                type: object
                additionalProperties:
                  type: string
              blob:
                type: object
                x-kubernetes-preserve-unknown-fields: true
              raw:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
              resource:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  spec:
                    type: object
                    properties:
                      size:
                        type: integer
          status:
            type: object
            properties:
              ready:
                type: integer
  - name: v1beta1
    served: false
    storage: false
`

const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-crd
data:
  key: value
`

// gadgetCRD is a second, minimal CRD.
const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names:
    kind: Gadget
    plural: gadgets
  scope: Namespaced
  versions:
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func docs(ds ...string) []byte { return []byte(strings.Join(ds, "---\n")) }

type crdSummary struct {
	Group, Kind, Plural string
	Versions            []string
}

func summarize(crds []*crdschema.CRD) []crdSummary {
	var out []crdSummary
	for _, c := range crds {
		s := crdSummary{Group: c.Group, Kind: c.Kind, Plural: c.Plural}
		for v := range c.Versions {
			s.Versions = append(s.Versions, v)
		}
		sort.Strings(s.Versions)
		out = append(out, s)
	}
	return out
}

func widget(t *testing.T) *crdschema.CRD {
	t.Helper()
	crds, err := crdschema.Parse([]byte(widgetCRD))
	require.NoError(t, err)
	require.Len(t, crds, 1)
	return crds[0]
}

func widgetRoot(t *testing.T) *structuralschema.Structural {
	t.Helper()
	root, ok := widget(t).Root("v1")
	require.True(t, ok)
	return root
}

func lookup(t *testing.T, s *structuralschema.Structural, path string) *structuralschema.Structural {
	t.Helper()
	got, err := crdschema.Lookup(s, paths.MustParse(path))
	require.NoError(t, err, path)
	require.NotNil(t, got, path)
	return got
}

func TestParse(t *testing.T) {
	widgetJSON, err := yaml.YAMLToJSON([]byte(widgetCRD))
	require.NoError(t, err)
	widgetSummary := crdSummary{Group: "example.com", Kind: "Widget", Plural: "widgets", Versions: []string{"v1"}}
	gadgetSummary := crdSummary{Group: "example.com", Kind: "Gadget", Plural: "gadgets", Versions: []string{"v2"}}

	tests := map[string]struct {
		data    []byte
		want    []crdSummary
		wantErr []string
	}{
		"single CRD; a version without a schema is left out": {
			data: []byte(widgetCRD),
			want: []crdSummary{widgetSummary},
		},
		"other documents and empty documents are ignored": {
			data: docs(configMap, "", widgetCRD, "# only a comment\n", configMap),
			want: []crdSummary{widgetSummary},
		},
		"several CRDs in stream order": {
			data: docs(gadgetCRD, configMap, widgetCRD),
			want: []crdSummary{gadgetSummary, widgetSummary},
		},
		"JSON document": {
			data: widgetJSON,
			want: []crdSummary{widgetSummary},
		},
		"no CRD at all": {
			data: docs(configMap, configMap),
		},
		"empty input": {},
		"unknown fields in a CRD are tolerated": {
			data: []byte(strings.Replace(gadgetCRD, "  scope: Namespaced\n", "  scope: Namespaced\n  futureField: 1\n", 1)),
			want: []crdSummary{gadgetSummary},
		},
		"malformed YAML names its document": {
			data:    docs(configMap, "kind: [unterminated\n", widgetCRD),
			wantErr: []string{"document 2"},
		},
		"CRD whose fields have the wrong types names its document": {
			data:    docs(configMap, widgetCRD, strings.Replace(gadgetCRD, "  - name: v2\n", "  - name: [v2]\n", 1)),
			wantErr: []string{"document 3"},
		},
		"non-structural schema names the CRD and version": {
			data: []byte(strings.Replace(gadgetCRD, "        x-kubernetes-preserve-unknown-fields: true\n",
				"        properties:\n          list:\n            type: array\n            items:\n            - type: string\n", 1)),
			wantErr: []string{"gadgets.example.com", "v2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crds, err := crdschema.Parse(tc.data)
			if len(tc.wantErr) > 0 {
				require.Error(t, err)
				for _, w := range tc.wantErr {
					require.ErrorContains(t, err, w)
				}
				return
			}
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, summarize(crds)); diff != "" {
				t.Errorf("CRDs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	root := widgetRoot(t)
	raw := widget(t).Versions["v1"]

	tests := map[string]struct {
		schema *structuralschema.Structural // root when nil
		path   string
		// wantType is the schema type at the path; "" with wantErr empty means (nil, nil).
		wantType string
		wantErr  string
	}{
		"the empty path is the root":          {path: ".", wantType: "object"},
		"scalar field":                        {path: "spec.replicas", wantType: "integer"},
		"list":                                {path: "spec.workers", wantType: "array"},
		"[*] over a list":                     {path: "spec.workers[*]", wantType: "object"},
		"field of list items":                 {path: "spec.workers[*].name", wantType: "string"},
		"index into a list":                   {path: "spec.workers[3].name", wantType: "string"},
		"pod template under list items":       {path: "spec.workers[*].template", wantType: "object"},
		"deep into the pod template":          {path: "spec.workers[*].template.spec.containers[*].image", wantType: "string"},
		"template labels":                     {path: "spec.workers[0].template.metadata.labels[*]", wantType: "string"},
		"[*] over a map":                      {path: "spec.labels[*]", wantType: "string"},
		"map key as a field":                  {path: "spec.labels.team", wantType: "string"},
		"map key in brackets":                 {path: `spec.labels["app.kubernetes.io/name"]`, wantType: "string"},
		"status":                              {path: "status.ready", wantType: "integer"},
		"preserve-unknown-fields object":      {path: "spec.blob", wantType: "object"},
		"under preserve-unknown-fields":       {path: "spec.blob.anything"},
		"deep under preserve-unknown-fields":  {path: "spec.blob.a[3].b[*].c"},
		"[*] under preserve-unknown-fields":   {path: "spec.blob[*]"},
		"metadata added by Root":              {path: "metadata.labels[*]", wantType: "string"},
		"metadata name added by Root":         {path: "metadata.name", wantType: "string"},
		"embedded resource metadata":          {path: "spec.resource.metadata.annotations.note", wantType: "string"},
		"embedded resource kind":              {path: "spec.resource.kind", wantType: "string"},
		"embedded resource own fields":        {path: "spec.resource.spec.size", wantType: "integer"},
		"open embedded resource metadata":     {path: "spec.raw.metadata.labels[*]", wantType: "string"},
		"open embedded resource other fields": {path: "spec.raw.spec.template"},
		"raw schema has no metadata fields": {
			schema: raw, path: "metadata.labels",
			wantErr: `metadata.labels: field "labels" is not in the schema`,
		},
		"misspelt field names the step": {
			path:    "spec.replicsa",
			wantErr: `spec.replicsa: field "replicsa" is not in the schema`,
		},
		"misspelt field after [*] names the step": {
			path:    "spec.workers[*].nmae.first",
			wantErr: `spec.workers[*].nmae: field "nmae" is not in the schema`,
		},
		"misspelt top-level field": {
			path:    "sepc.replicas",
			wantErr: `sepc: field "sepc" is not in the schema`,
		},
		"field step into an integer": {
			path:    "spec.replicas.value",
			wantErr: `spec.replicas.value: schema has type "integer" here, not object`,
		},
		"field step into a list": {
			path:    "spec.workers.name",
			wantErr: `spec.workers.name: schema has type "array" here, not object`,
		},
		"index into an object": {
			path:    "spec[0]",
			wantErr: `spec[0]: schema has type "object" here, not array`,
		},
		"index into a map": {
			path:    "spec.labels[0]",
			wantErr: `spec.labels[0]: schema has type "object" here, not array`,
		},
		"[*] over a scalar": {
			path:    "spec.replicas[*]",
			wantErr: `spec.replicas[*]: [*] needs an array or a map, schema has type "integer"`,
		},
		"[*] over an object with fixed fields": {
			path:    "spec[*]",
			wantErr: `spec[*]: [*] needs an array or a map, schema has type "object"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := tc.schema
			if s == nil {
				s = root
			}
			got, err := crdschema.Lookup(s, paths.MustParse(tc.path))
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			if tc.wantType == "" {
				require.Nil(t, got, "a path under preserve-unknown-fields has no schema")
				return
			}
			require.NotNil(t, got)
			require.Equal(t, tc.wantType, got.Type)
		})
	}
}

func TestRoot(t *testing.T) {
	crd := widget(t)
	_, ok := crd.Root("v1beta1")
	require.False(t, ok, "a version without a schema has no root")
	_, ok = crd.Root("v2")
	require.False(t, ok, "an unknown version has no root")

	root, ok := crd.Root("v1")
	require.True(t, ok)
	meta := lookup(t, root, "metadata")
	for _, f := range []string{"name", "generateName", "namespace", "uid", "labels", "annotations", "generation"} {
		require.Contains(t, meta.Properties, f)
	}
	require.Equal(t, "string", lookup(t, root, "apiVersion").Type)
	require.Equal(t, "string", lookup(t, root, "metadata.annotations.note").Type)

	// Root leaves the parsed schema alone.
	_, err := crdschema.Lookup(crd.Versions["v1"], paths.MustParse("metadata.labels"))
	require.Error(t, err)
	_, err = crdschema.Lookup(crd.Versions["v1"], paths.MustParse("spec.resource.metadata.labels"))
	require.Error(t, err)
	// The plain pod-template metadata is not an embedded resource: it keeps its own fields.
	_, err = crdschema.Lookup(root, paths.MustParse("spec.workers[*].template.metadata.name"))
	require.Error(t, err)
}

func TestDeclTypeSelf(t *testing.T) {
	env, err := expr.NewEnv(expr.Types{Self: crdschema.DeclType(widgetRoot(t))})
	require.NoError(t, err)

	tests := map[string]struct {
		src     string
		want    expr.Result
		wantErr []string
	}{
		"integer field":                       {src: "self.spec.replicas", want: expr.Int},
		"integer field as int or string":      {src: "self.spec.replicas", want: expr.IntOrString},
		"metadata label added by Root":        {src: "self.metadata.labels['x']", want: expr.String},
		"metadata name added by Root":         {src: "self.metadata.name", want: expr.String},
		"metadata labels as a string map":     {src: "self.metadata.labels", want: expr.StringMap},
		"string map field":                    {src: "self.spec.labels", want: expr.StringMap},
		"list of objects":                     {src: "self.spec.workers.all(w, w.name != '')", want: expr.Bool},
		"deep into the pod template":          {src: "self.spec.workers[0].template.spec.containers[0].image", want: expr.String},
		"embedded resource metadata":          {src: "self.spec.resource.metadata.name", want: expr.String},
		"embedded resource fields":            {src: "self.spec.resource.spec.size", want: expr.Int},
		"preserve-unknown-fields is dynamic":  {src: "self.spec.blob.anything.goes", want: expr.String},
		"preserve-unknown-fields as a map":    {src: "self.spec.blob", want: expr.StringMap},
		"has() under preserve-unknown-fields": {src: "has(self.spec.blob.anything)", want: expr.Bool},
		"open embedded resource is dynamic":   {src: "self.spec.raw.spec.replicas", want: expr.Int},
		"optional field selection":            {src: "self.?status.?ready.orValue(0)", want: expr.Int},
		"has() on a declared field":           {src: "has(self.spec.replicas)", want: expr.Bool},
		"misspelt field":                      {src: "self.spec.replicsa", want: expr.Int, wantErr: []string{"undefined field 'replicsa'"}},
		"misspelt field in a loop":            {src: "self.spec.workers.all(w, w.nmae != '')", want: expr.Bool, wantErr: []string{"undefined field 'nmae'"}},
		"type mismatch in a comparison":       {src: "self.spec.replicas == 'x'", want: expr.Bool, wantErr: []string{"no matching overload", "_==_"}},
		"integer field where a string is due": {src: "self.spec.replicas", want: expr.String, wantErr: []string{"must evaluate to string, has type int"}},
		"list where a string map is due":      {src: "self.spec.workers", want: expr.StringMap, wantErr: []string{"must evaluate to map(string, string)"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fld := field.NewPath("spec", "roles").Index(0).Child("replicas")
			prog, ferr := env.Compile(fld, tc.src, tc.want)
			if len(tc.wantErr) > 0 {
				require.NotNil(t, ferr, "compiled %q", tc.src)
				require.Equal(t, "spec.roles[0].replicas", ferr.Field)
				for _, w := range tc.wantErr {
					require.Contains(t, ferr.Detail, w)
				}
				return
			}
			require.Nil(t, ferr)
			require.NotNil(t, prog)
		})
	}
}

// TestDeclTypeEval checks that typed programs read unstructured objects as decoded from JSON.
func TestDeclTypeEval(t *testing.T) {
	root := widgetRoot(t)
	env, err := expr.NewEnv(expr.Types{Self: crdschema.DeclType(root)})
	require.NoError(t, err)
	// Decode as unstructured objects are decoded (integers as int64); sigs.k8s.io/yaml alone
	// would give float64, which CEL sees as double, not as the schema's int.
	data, err := yaml.YAMLToJSON([]byte(`
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  labels: {team: ml}
spec:
  replicas: 3
  labels: {a: b}
  workers:
  - name: w0
    template:
      spec:
        containers: [{name: main, image: img:1}]
  blob: {anything: {goes: here}}
`))
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, utiljson.Unmarshal(data, &obj))
	a := &expr.Activation{Self: obj}
	compile := func(src string, want expr.Result) *expr.Program {
		t.Helper()
		p, ferr := env.Compile(field.NewPath("test"), src, want)
		require.Nil(t, ferr)
		return p
	}

	n, err := compile("self.spec.replicas * 2", expr.Int).EvalInt(a)
	require.NoError(t, err)
	require.EqualValues(t, 6, n)
	s, err := compile("self.metadata.labels['team'] + '/' + self.spec.workers[0].template.spec.containers[0].image", expr.String).EvalString(a)
	require.NoError(t, err)
	require.Equal(t, "ml/img:1", s)
	s, err = compile("self.spec.blob.anything.goes", expr.String).EvalString(a)
	require.NoError(t, err)
	require.Equal(t, "here", s)
	m, err := compile("self.spec.labels", expr.StringMap).EvalStringMap(a)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "b"}, m)
	n, err = compile("self.?status.?ready.orValue(0)", expr.Int).EvalInt(a)
	require.NoError(t, err)
	require.EqualValues(t, 0, n)
}

func TestDeclTypeItem(t *testing.T) {
	root := widgetRoot(t)
	rootType := crdschema.DeclType(root)

	tests := map[string]struct {
		itemPath string
		src      string
		want     expr.Result
		wantErr  []string
	}{
		"item field":                       {itemPath: "spec.workers[*]", src: "item.name", want: expr.String},
		"item deep field":                  {itemPath: "spec.workers[*]", src: "item.template.spec.containers[0].image", want: expr.String},
		"item labels":                      {itemPath: "spec.workers[*]", src: "item.template.metadata.labels", want: expr.StringMap},
		"item with self and key":           {itemPath: "spec.workers[*]", src: "self.metadata.name + '-' + key + '-' + item.name", want: expr.String},
		"item count":                       {itemPath: "spec.workers[*]", src: "item.template.spec.containers.size()", want: expr.Int},
		"misspelt item field":              {itemPath: "spec.workers[*]", src: "item.nmae", want: expr.String, wantErr: []string{"undefined field 'nmae'"}},
		"misspelt self field with an item": {itemPath: "spec.workers[*]", src: "self.spec.replicsa", want: expr.Int, wantErr: []string{"undefined field 'replicsa'"}},
		"item of the wrong type":           {itemPath: "spec.workers[*]", src: "item.name", want: expr.Int, wantErr: []string{"must evaluate to int, has type string"}},
		"string map value":                 {itemPath: "spec.labels[*]", src: "item.lowerAscii()", want: expr.String},
		"string map value has no fields":   {itemPath: "spec.labels[*]", src: "item.name", want: expr.String, wantErr: []string{"does not support field selection"}},
		"list item is a list of objects":   {itemPath: "spec.workers", src: "item[0].template.spec.containers[0].image", want: expr.String},
		"list of objects, misspelt field":  {itemPath: "spec.workers", src: "item[0].template.spec.containres", want: expr.String, wantErr: []string{"undefined field 'containres'"}},
		"container item":                   {itemPath: "spec.workers[*].template.spec.containers[*]", src: "item.image", want: expr.String},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			itemType := crdschema.DeclType(lookup(t, root, tc.itemPath))
			require.NotNil(t, itemType)
			env, err := expr.NewEnv(expr.Types{Self: rootType, Item: itemType})
			require.NoError(t, err)
			_, ferr := env.Compile(field.NewPath("spec", "roles").Index(1).Child("instanceName"), tc.src, tc.want)
			if len(tc.wantErr) > 0 {
				require.NotNil(t, ferr, "compiled %q", tc.src)
				require.Equal(t, "spec.roles[1].instanceName", ferr.Field)
				for _, w := range tc.wantErr {
					require.Contains(t, ferr.Detail, w)
				}
				return
			}
			require.Nil(t, ferr)
		})
	}
}

// TestUpstreamJobSet reads the real JobSet CRD when the shared upstream data is beside the
// checkout; users of the repository do not have it.
func TestUpstreamJobSet(t *testing.T) {
	file := filepath.Join("..", "..", "..", "shared", "upstream", "crds", "jobset", "jobset.x-k8s.io_jobsets.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		needs.Skip(t, "upstream JobSet CRD not available at %s (%v): skipping", file, err)
	}
	crds, err := crdschema.Parse(data)
	require.NoError(t, err)
	require.Len(t, crds, 1)
	crd := crds[0]
	require.Equal(t, "jobset.x-k8s.io", crd.Group)
	require.Equal(t, "JobSet", crd.Kind)
	root, ok := crd.Root("v1alpha2")
	require.True(t, ok)

	tests := map[string]struct {
		path     string
		wantType string
		wantErr  string
	}{
		"pod template":     {path: "spec.replicatedJobs[*].template.spec.template", wantType: "object"},
		"parallelism":      {path: "spec.replicatedJobs[*].template.spec.parallelism", wantType: "integer"},
		"replicas":         {path: "spec.replicatedJobs[*].replicas", wantType: "integer"},
		"pod labels":       {path: "spec.replicatedJobs[*].template.spec.template.metadata.labels[*]", wantType: "string"},
		"container limits": {path: "spec.replicatedJobs[*].template.spec.template.spec.containers[*].resources.limits[*]"},
		"misspelt":         {path: "spec.replicatedJobs[*].template.spec.paralelism", wantErr: `field "paralelism" is not in the schema`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := crdschema.Lookup(root, paths.MustParse(tc.path))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, got)
			require.Equal(t, tc.wantType, got.Type)
		})
	}

	item := crdschema.DeclType(lookup(t, root, "spec.replicatedJobs[*]"))
	env, err := expr.NewEnv(expr.Types{Self: crdschema.DeclType(root), Item: item})
	require.NoError(t, err)
	_, ferr := env.Compile(field.NewPath("replicas"), "item.replicas * item.template.spec.parallelism", expr.Int)
	require.Nil(t, ferr)
	_, ferr = env.Compile(field.NewPath("replicas"), "item.template.spec.paralelism", expr.Int)
	require.NotNil(t, ferr)
	require.Contains(t, ferr.Detail, "paralelism")
}

func TestDeclTypeOpenRoot(t *testing.T) {
	crds, err := crdschema.Parse([]byte(gadgetCRD))
	require.NoError(t, err)
	root, ok := crds[0].Root("v2")
	require.True(t, ok)
	require.Nil(t, crdschema.DeclType(nil))
	env, err := expr.NewEnv(expr.Types{Self: crdschema.DeclType(root)})
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		src  string
		want expr.Result
	}{
		"metadata":       {src: "self.metadata.labels['x']", want: expr.String},
		"anything else":  {src: "self.spec.anything.size()", want: expr.Int},
		"optional reads": {src: "self.?status.?phase.orValue('')", want: expr.String},
	} {
		t.Run(name, func(t *testing.T) {
			_, ferr := env.Compile(field.NewPath("x"), tc.src, tc.want)
			require.Nil(t, ferr)
		})
	}
}
