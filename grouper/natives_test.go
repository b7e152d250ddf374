package grouper_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/grouper"
)

// nativeGang is what the scheduler makes of a gang: its PodGroup, minMember, scope, roles and
// topology.
type nativeGang struct {
	PodGroup  string
	MinMember int32
	Scope     string
	Members   []string
	Timeout   *int32
	Topology  *definitions.GroupTopology
}

func gangsAsMade(name string, groups []definitions.Group) []nativeGang {
	out := []nativeGang{}
	for _, g := range groups {
		out = append(out, nativeGang{PodGroup: g.PodGroupName(name), MinMember: g.MinMember, Scope: string(g.Scope), Members: g.Members, Timeout: g.TimeoutSeconds, Topology: g.Topology})
	}
	return out
}

// TestNativesAgreeWithTheirDefinitions: every kind the scheduler gangs with a built-in grouper
// has a definition among Kubernetes' own kinds (through which tree, get, groups and serve show
// it), and the definition describes the very gangs the grouper forms, for Jobs and pods of
// every shape.
func TestNativesAgreeWithTheirDefinitions(t *testing.T) {
	raw, err := catalog.KubernetesKinds()
	require.NoError(t, err)
	defs, err := definitions.CompileAll(raw, nil)
	require.NoError(t, err)
	reg := definitions.NewRegistry()
	reg.Add(defs...)
	natives := grouper.DefaultNatives()
	var described []schema.GroupKind
	for _, d := range defs {
		described = append(described, d.GroupKind)
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(natives)), described, "the kinds of the built-in groupers and of the definitions of Kubernetes' own kinds")

	const template = `
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]`
	job := func(meta, spec string) string {
		return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train, namespace: ml" + meta + "}\nspec:\n" + spec + template
	}
	pod := func(meta string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: solo, namespace: ml" + meta + "}\nspec:\n  containers: [{name: c, image: busybox}]\n"
	}
	tests := map[string]struct {
		object string
		// suspended: the definition shows no pods, so no gang, while the grouper keeps the gang
		// the Job's pods will form once it is resumed (it has none to group until then): that
		// gang is the definition's of the same Job resumed.
		suspended bool
		wantMin   int32 // the gang's minMember (0: no gang)
	}{
		"Job: parallelism = completions":            {object: job("", "  parallelism: 4\n  completions: 4"), wantMin: 4},
		"Job: parallelism alone (a work queue)":     {object: job("", "  parallelism: 4"), wantMin: 4},
		"Job: parallelism below completions":        {object: job("", "  parallelism: 2\n  completions: 8"), wantMin: 2},
		"Job: completions below parallelism":        {object: job("", "  parallelism: 4\n  completions: 3"), wantMin: 3},
		"Job: completions alone (one at a time)":    {object: job("", "  completions: 5")},
		"Job: neither (one pod)":                    {object: job("", "  backoffLimit: 2")},
		"Job: parallelism 0 (paused)":               {object: job("", "  parallelism: 0\n  completions: 4")},
		"Job: indexed":                              {object: job("", "  parallelism: 3\n  completions: 6\n  completionMode: Indexed"), wantMin: 3},
		"Job: indexed, one pod per index":           {object: job("", "  parallelism: 8\n  completions: 8\n  completionMode: Indexed\n  backoffLimitPerIndex: 1"), wantMin: 8},
		"Job: min-member annotation":                {object: job(", annotations: {workmap.dev/min-member: '2'}", "  parallelism: 8"), wantMin: 2},
		"Job: min-member annotation above its pods": {object: job(", annotations: {workmap.dev/min-member: '6'}", "  parallelism: 4"), wantMin: 6},
		"Job: min-member annotation of 1":           {object: job(", annotations: {workmap.dev/min-member: '1'}", "  parallelism: 8")},
		"Job: topology annotations": {object: job(", annotations: {workmap.dev/topology-required: rack, workmap.dev/topology-preferred: hostname}", "  parallelism: 4"),
			wantMin: 4},
		"Job: a topology annotation that is no level": {object: job(", annotations: {workmap.dev/topology-required: 'not a level!'}", "  parallelism: 4"), wantMin: 4},
		"Job: suspended": {object: job("", "  suspend: true\n  parallelism: 4\n  completions: 4"), suspended: true, wantMin: 4},
		"Job: suspended, with a min-member annotation":  {object: job(", annotations: {workmap.dev/min-member: '3'}", "  suspend: true\n  parallelism: 4"), wantMin: 3},
		"Job: generateName":                             {object: "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: train-, namespace: ml}\nspec:\n  parallelism: 2" + template, wantMin: 2},
		"bare pod":                                      {object: pod("")},
		"bare pod asking for a gang":                    {object: pod(", annotations: {workmap.dev/min-member: '3'}"), wantMin: 3},
		"bare pod asking for a gang, with its topology": {object: pod(", annotations: {workmap.dev/min-member: '2', workmap.dev/topology-required: rack}"), wantMin: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			docs, err := manifest.Read([]byte(tc.object), name)
			require.NoError(t, err)
			require.Len(t, docs, 1)
			obj := docs[0].Object
			gk := obj.GroupVersionKind().GroupKind()
			def, ok := reg.Lookup(gk)
			require.True(t, ok, "a definition for %s", gk)
			w, err := def.Expand(obj)
			require.NoError(t, err)

			// What the scheduler forms (the hub, for the pods of the created object)...
			owner := grouper.Owner{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Annotations: obj.GetAnnotations()}
			native, err := natives[gk].Gangs(owner, obj)
			require.NoError(t, err)
			made := gangsAsMade(obj.GetName(), native.Groups())
			// ...and what `workmap groups -f` shows of the manifest.
			offline, source, err := grouper.GangsOfManifest(natives, w)
			require.NoError(t, err)
			require.Equal(t, grouper.SourceNative, source)
			require.Equal(t, gangsAsMade(obj.GetName(), native.Groups()), gangsAsMade(obj.GetName(), offline.Groups()))

			described := w
			if tc.suspended {
				require.Empty(t, w.Groups, "a suspended Job has no pods to gang")
				require.NoError(t, unstructured.SetNestedField(obj.Object, false, "spec", "suspend"))
				described, err = def.Expand(obj)
				require.NoError(t, err)
			}
			require.Equal(t, made, gangsAsMade(obj.GetName(), described.Groups), "the definition's gangs are the grouper's")
			if tc.wantMin == 0 {
				require.Empty(t, made)
				return
			}
			require.Len(t, made, 1)
			require.Equal(t, tc.wantMin, made[0].MinMember)
		})
	}
}
