package karta

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions/expr"
	"github.com/workmap/workmap/definitions/paths"
)

func TestParsePath(t *testing.T) {
	tests := map[string]struct {
		jq      string
		workmap string // "" when not a simple path
		wantErr string
	}{
		"fields":                 {jq: ".spec.template", workmap: "spec.template"},
		"iteration":              {jq: ".spec.replicatedJobs[].template.spec.template", workmap: "spec.replicatedJobs[*].template.spec.template"},
		"quoted key":             {jq: `.metadata.labels["app.kubernetes.io/name"]`, workmap: `metadata.labels["app.kubernetes.io/name"]`},
		"dot-quoted key":         {jq: `.metadata."a.b"`, workmap: `metadata["a.b"]`},
		"plain workmap names":    {jq: `.metadata["a-b"]`, workmap: `metadata.a-b`},
		"index":                  {jq: ".spec.containers[0].resources", workmap: "spec.containers[0].resources"},
		"root iteration":         {jq: ".[].template", workmap: "[*].template"},
		"dot before bracket":     {jq: `.spec.[0]`, workmap: "spec[0]"},
		"optional steps":         {jq: ".spec.workers[]?.template?", workmap: "spec.workers[*].template"},
		"identity":               {jq: " . ", workmap: "."},
		"escaped quote":          {jq: `.a["x\"y"]`, workmap: `a["x\"y"]`},
		"pipe":                   {jq: ".spec.workers[] | .template", wantErr: "it uses a pipe"},
		"default":                {jq: ".spec.replicas // 1", wantErr: "it uses a `//` default"},
		"function":               {jq: ".spec.services | to_entries[] | .key", wantErr: "it uses a pipe, a function (`to_entries`)"},
		"filter":                 {jq: `.spec.containers[] | select(.name == "main")`, wantErr: "a filter (`select`), a comparison"},
		"arithmetic":             {jq: ".spec.replicas * .spec.size", wantErr: "it uses arithmetic"},
		"dash is subtraction":    {jq: ".metadata.labels.app-name", wantErr: "it uses arithmetic"},
		"negative index":         {jq: ".spec.items[-1]", wantErr: "a computed index or slice"},
		"slice":                  {jq: ".spec.items[1:2]", wantErr: "a computed index or slice"},
		"recursive descent":      {jq: "..|.image?", wantErr: "recursive descent"},
		"variable":               {jq: ". as $o | $o.spec", wantErr: "a variable binding, a variable, a pipe"},
		"interpolation":          {jq: `.a["\(.b)"]`, wantErr: "not a simple jq path"},
		"no leading dot":         {jq: "spec.replicas", wantErr: "not a simple jq path"},
		"alternatives":           {jq: ".a, .b", wantErr: "several outputs"},
		"conditional":            {jq: "if .a then .b else .c end", wantErr: "a conditional"},
		"boolean":                {jq: ".a and .b", wantErr: "a boolean operator (`and`)"},
		"empty":                  {jq: "", wantErr: "empty jq path"},
		"trailing dot":           {jq: ".spec.", wantErr: "not a simple jq path"},
		"pipe inside string key": {jq: `.metadata.labels["a|b.c"]`, workmap: `metadata.labels["a|b.c"]`},
		"optional identity":      {jq: ".?", workmap: "."},
		"keyword as a field":     {jq: ".spec.if", workmap: "spec.if"},
		"JSON escapes in a key":  {jq: `.a["\u00e9\t"]`, workmap: "a[\"\u00e9\t\"]"},
		"unterminated key":       {jq: `.a["b`, wantErr: "`.a[\"b` is not a simple jq path: at position 3: unterminated quoted key"},
		"unterminated index":     {jq: ".a[0", wantErr: "at position 4: expected ']' after list index"},
		"index out of range":     {jq: ".a[99999999999999999999]", wantErr: "at position 3: list index \"99999999999999999999\" out of range"},
		"junk after a key":       {jq: `.a["b" ]`, wantErr: "at position 6: expected ']' after quoted key"},
		"space inside the path":  {jq: ".a [0]", wantErr: "at position 3: unexpected '[' after the path"},
		"a second ?":             {jq: ".a??", wantErr: "at position 3: unexpected '?' after the path"},
		"a leading bracket":      {jq: ` ["a"]`, wantErr: "at position 1: a jq path starts with '.'"},
		"a workmap wildcard":     {jq: ".a[*]", wantErr: "it uses arithmetic"},
		"only spaces":            {jq: " \t", wantErr: "empty jq path"},
		"a default":              {jq: ".a // 1", wantErr: "it uses a `//` default"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := parsePath(tc.jq)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			got := workmapPath(p)
			assert.Equal(t, tc.workmap, got)
			_, err = paths.Parse(got)
			assert.NoError(t, err, "the workmap path parses")
		})
	}
}

func TestObjectValue(t *testing.T) {
	prefix, err := parsePath(".spec.replicatedJobs[]")
	require.NoError(t, err)
	inJobs := valueScope{prefix: prefix}
	deepPrefix, err := parsePath(".spec.replicatedJobs[].groups[]")
	require.NoError(t, err)
	deep := valueScope{prefix: deepPrefix}
	tests := map[string]struct {
		jq       string
		scope    valueScope
		want     string
		wantNote string
		wantErr  string
	}{
		"through the template's []: relative to item": {jq: ".spec.replicatedJobs[].replicas", scope: inJobs, want: "item.?replicas.orValue(1)"},
		"deeper under item":                           {jq: ".spec.replicatedJobs[].template.spec.parallelism", scope: inJobs, want: "item.?template.?spec.?parallelism.orValue(1)"},
		"outside: relative to self":                   {jq: ".spec.replicas", scope: inJobs, want: "self.?spec.?replicas.orValue(1)"},
		"metadata is always there":                    {jq: ".metadata.name", want: "self.metadata.?name.orValue(1)"},
		"keys that are not identifiers":               {jq: `.spec.sizes["a-b"][0].in`, want: "self.?spec.?sizes[?'a-b'][?0][?'in'].orValue(1)"},
		"a literal default":                           {jq: ".spec.replicas // 2", want: "self.?spec.?replicas.orValue(2)", wantNote: "jq default `// 2` became `.orValue(2)`"},
		"a string default":                            {jq: `.spec.mode // "it's"`, want: `self.?spec.?mode.orValue('it\'s')`, wantNote: "became"},
		"a float default that is whole":               {jq: ".spec.replicas // 1.0", want: "self.?spec.?replicas.orValue(1)", wantNote: "became"},
		"another []":                                  {jq: ".spec.other[].replicas", scope: inJobs, wantErr: "does not go through the pod template's `.spec.replicatedJobs[]` only"},
		"[] without one in the template":              {jq: ".spec.other[].replicas", wantErr: "iterates (`[]`) but the pod template does not"},
		"a path default":                              {jq: ".spec.replicas // .spec.size", wantErr: "(it uses a `//` default)"},
		"two defaults":                                {jq: ".spec.replicas // 1 // 2", wantErr: "(it uses a `//` default)"},
		"a template prefix longer than the path":      {jq: ".spec.x[]", scope: deep, wantErr: "does not go through the pod template's `.spec.replicatedJobs[].groups[]` only"},
		"a malformed path before a default":           {jq: `.spec["x // 1`, wantErr: "at position 6: unterminated quoted key"},
		"pipe":                                        {jq: ".spec.replicatedJobs[] | .replicas", scope: inJobs, wantErr: "it uses a pipe"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, note, err := objectValue(tc.jq, tc.scope, "1", "1")
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			if tc.wantNote == "" {
				assert.Empty(t, note)
			} else {
				assert.Contains(t, note, tc.wantNote)
			}
		})
	}
}

func TestPodValue(t *testing.T) {
	tests := map[string]struct {
		jq, want, wantErr string
	}{
		"a label":          {jq: `.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]`, want: "pod.metadata.?labels[?'jobset.sigs.k8s.io/replicatedjob-name'].orValue('')"},
		"spec is there":    {jq: ".spec.schedulerName", want: "pod.spec.?schedulerName.orValue('')"},
		"with a default":   {jq: `.metadata.labels["x"] // "0"`, want: "pod.metadata.?labels.?x.orValue('0')"},
		"iteration":        {jq: ".spec.containers[].name", wantErr: "a pod-side path must give one value"},
		"not a simple one": {jq: ".metadata.labels | keys[0]", wantErr: "it uses a pipe, a function (`keys`)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, _, err := podValue(tc.jq, "''")
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTypeCondition(t *testing.T) {
	worker := "worker"
	tests := map[string]struct {
		sel  ComponentTypeSelector
		want string
	}{
		"equals":  {ComponentTypeSelector{KeyPath: `.metadata.labels["role"]`, Value: &worker}, "pod.metadata.?labels.?role.orValue('') == 'worker'"},
		"exists":  {ComponentTypeSelector{KeyPath: `.metadata.annotations["leader-name"]`}, "pod.metadata.?annotations[?'leader-name'].hasValue()"},
		"present": {ComponentTypeSelector{KeyPath: `.metadata`}, "true"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := typeCondition(&tc.sel)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestExpectedLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"true": "true", "null": "null", "3": "3", "1.5": "1.5", "Running": "'Running'", `"Running"`: "'Running'", "it's": `'it\'s'`,
	} {
		assert.Equal(t, want, expectedLiteral(in), in)
	}
}

func TestRoleNames(t *testing.T) {
	cv := &converter{roleNames: map[string]bool{}}
	var got []string
	for _, n := range []string{"Master", "replicatedjob", "WorkerGroup", "worker_group", "my.role", "--", "Master"} {
		got = append(got, cv.roleName(n))
	}
	assert.Equal(t, []string{"master", "replicatedjob", "workerGroup", "worker-group", "my-role", "role", "master-2"}, got)
}

// TestConvertedCELEvaluates: the CEL the converter writes compiles in workmap's environment and
// reads absent and present values as intended.
func TestConvertedCELEvaluates(t *testing.T) {
	env, err := expr.NewEnv(expr.Types{})
	require.NoError(t, err)
	self := map[string]any{"spec": map[string]any{
		"sizes":          map[string]any{"a-b": []any{map[string]any{"in": int64(5)}}},
		"replicatedJobs": []any{map[string]any{"name": "w", "replicas": int64(3)}},
	}}
	item := self["spec"].(map[string]any)["replicatedJobs"].([]any)[0]
	prefix, err := parsePath(".spec.replicatedJobs[]")
	require.NoError(t, err)
	tests := map[string]struct {
		jq   string
		want int64
	}{
		"present through keys and indexes": {jq: `.spec.sizes["a-b"][0].in`, want: 5},
		"absent index":                     {jq: `.spec.sizes["a-b"][3].in`, want: 1},
		"absent object":                    {jq: `.status.replicas`, want: 1},
		"item":                             {jq: `.spec.replicatedJobs[].replicas`, want: 3},
		"absent under item":                {jq: `.spec.replicatedJobs[].template.spec.parallelism // 7`, want: 7},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src, _, err := objectValue(tc.jq, valueScope{prefix: prefix}, "1", "1")
			require.NoError(t, err)
			prog, ferr := env.Compile(field.NewPath("x"), src, expr.Int)
			require.Nil(t, ferr)
			got, err := prog.EvalInt(&expr.Activation{Self: self, Item: item, HasItem: true, Key: "0"})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
