package catalog

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/manifest"
)

// groveShape is what a test needs of a PodCliqueSet to count the claims Grove's operator
// creates: PCS replicas, each clique's pods per PodClique, and each scaling group's copies
// and members.
type groveShape struct {
	replicas  int64
	cliques   []string
	pods      map[string]int64  // clique → replicas
	groupOf   map[string]string // clique → its scaling group
	groups    []string
	copies    map[string]int64 // scaling group → replicas
	members   map[string][]string
	podsTotal int64
}

func readGroveShape(t *testing.T, obj *unstructured.Unstructured) groveShape {
	t.Helper()
	s := groveShape{pods: map[string]int64{}, groupOf: map[string]string{}, copies: map[string]int64{}, members: map[string][]string{}}
	s.replicas, _, _ = unstructured.NestedInt64(obj.Object, "spec", "replicas")
	cliques, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "cliques")
	for _, c := range cliques {
		name, _, _ := unstructured.NestedString(c.(map[string]any), "name")
		n, found, _ := unstructured.NestedInt64(c.(map[string]any), "spec", "replicas")
		if !found {
			n = 1
		}
		s.cliques = append(s.cliques, name)
		s.pods[name] = n
	}
	groups, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "podCliqueScalingGroups")
	for _, g := range groups {
		name, _, _ := unstructured.NestedString(g.(map[string]any), "name")
		n, found, _ := unstructured.NestedInt64(g.(map[string]any), "replicas")
		if !found {
			n = 1
		}
		members, _, _ := unstructured.NestedStringSlice(g.(map[string]any), "cliqueNames")
		s.groups = append(s.groups, name)
		s.copies[name] = n
		s.members[name] = members
		for _, m := range members {
			s.groupOf[m] = name
		}
	}
	for _, c := range s.cliques {
		s.podsTotal += s.replicas * s.pods[c] * s.cliqueCopies(c)
	}
	return s
}

// cliqueCopies is how many PodCliques of a clique one PCS replica has.
func (s groveShape) cliqueCopies(clique string) int64 {
	if g, ok := s.groupOf[clique]; ok {
		return s.copies[g]
	}
	return 1
}

// TestUpstreamPodCliqueSetSharedClaims: every real Grove sample, given a resourceClaimTemplates
// entry of 2 GPUs shared at each level and scope, counts 2 GPUs per ResourceClaim Grove's
// operator creates (not per pod), from the manifest alone, with no warning.
func TestUpstreamPodCliqueSetSharedClaims(t *testing.T) {
	const perClaim = 2
	gpus := map[string]any{"name": "gpus", "templateSpec": map[string]any{"spec": map[string]any{"devices": map[string]any{
		"requests": []any{map[string]any{"name": "gpu", "exactly": map[string]any{"deviceClassName": "gpu.nvidia.com", "count": int64(perClaim)}}},
	}}}}
	type level struct {
		// share adds the entry to obj and returns how many claims the operator creates of it,
		// or -1 when the sample has nothing at this level.
		share func(t *testing.T, obj *unstructured.Unstructured, s groveShape, entry map[string]any) int64
	}
	appendTo := func(t *testing.T, item map[string]any, entry map[string]any) {
		list, _, _ := unstructured.NestedSlice(item, "resourceSharing")
		require.NoError(t, unstructured.SetNestedSlice(item, append(list, entry), "resourceSharing"))
	}
	perReplica := func(entry map[string]any) bool { return entry["scope"] == "PerReplica" }
	atPodCliqueSet := func(t *testing.T, obj *unstructured.Unstructured, s groveShape, e map[string]any) int64 {
		tmpl, _, _ := unstructured.NestedMap(obj.Object, "spec", "template")
		appendTo(t, tmpl, e)
		require.NoError(t, unstructured.SetNestedMap(obj.Object, tmpl, "spec", "template"))
		if perReplica(e) {
			return s.replicas
		}
		return 1
	}
	levels := map[string]level{
		"the PodCliqueSet, to every clique": {share: atPodCliqueSet},
		"the PodCliqueSet, filtered to its first clique": {share: func(t *testing.T, obj *unstructured.Unstructured, s groveShape, e map[string]any) int64 {
			e["filter"] = map[string]any{"childCliqueNames": []any{s.cliques[0]}}
			return atPodCliqueSet(t, obj, s, e)
		}},
		"its first scaling group": {share: func(t *testing.T, obj *unstructured.Unstructured, s groveShape, e map[string]any) int64 {
			if len(s.groups) == 0 {
				return -1
			}
			groups, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "podCliqueScalingGroups")
			appendTo(t, groups[0].(map[string]any), e)
			require.NoError(t, unstructured.SetNestedSlice(obj.Object, groups, "spec", "template", "podCliqueScalingGroups"))
			if perReplica(e) {
				return s.replicas * s.copies[s.groups[0]]
			}
			return s.replicas
		}},
		"its last clique": {share: func(t *testing.T, obj *unstructured.Unstructured, s groveShape, e map[string]any) int64 {
			cliques, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "cliques")
			appendTo(t, cliques[len(cliques)-1].(map[string]any), e)
			require.NoError(t, unstructured.SetNestedSlice(obj.Object, cliques, "spec", "template", "cliques"))
			c := s.cliques[len(s.cliques)-1]
			if perReplica(e) {
				return s.replicas * s.cliqueCopies(c) * s.pods[c]
			}
			return s.replicas * s.cliqueCopies(c)
		}},
	}
	up := upstreamDir(t)
	files, err := filepath.Glob(filepath.Join(up, "samples", "grove", "*.yaml"))
	require.NoError(t, err)
	reg := catalogRegistry(t)
	shared := 0
	for name, lv := range levels {
		for _, scope := range []string{"AllReplicas", "PerReplica"} {
			t.Run(name+", "+scope, func(t *testing.T) {
				for _, f := range files {
					docs, err := manifest.ReadFile(f)
					require.NoError(t, err)
					for _, d := range docs {
						if d.Object.GetKind() != "PodCliqueSet" {
							continue
						}
						where := fmt.Sprintf("%s: %s", d.Where(), d.Object.GetName())
						def, ok := reg.Lookup(d.Object.GroupVersionKind().GroupKind())
						require.True(t, ok)
						before, err := def.Expand(d.Object)
						require.NoError(t, err)
						obj := d.Object.DeepCopy()
						s := readGroveShape(t, obj)
						require.Equal(t, s.podsTotal, before.Totals.Pods, where)
						claims := lv.share(t, obj, s, map[string]any{"name": "gpus", "scope": scope})
						if claims < 0 {
							continue
						}
						require.NoError(t, unstructured.SetNestedSlice(obj.Object, []any{gpus}, "spec", "template", "resourceClaimTemplates"))
						after, err := def.ExpandWith(obj, nil, definitions.ExpandOptions{Claims: definitions.ClaimsIn(nil, obj.GetNamespace())})
						require.NoError(t, err)
						require.Equal(t, before.Warnings, after.Warnings, where)
						require.Equal(t, before.Totals.Pods, after.Totals.Pods, where)
						require.Equal(t, before.Totals.GPUs+float64(claims*perClaim), after.Totals.GPUs, where)
						require.Equal(t, before.Totals.GPUSources["dra:gpu.nvidia.com"]+float64(claims*perClaim), after.Totals.GPUSources["dra:gpu.nvidia.com"], where)
						shared++
					}
				}
			})
		}
	}
	require.Equal(t, 6*3*2+4*2, shared, "samples given shared claims: 6 PodCliqueSets at 3 levels, 4 of them with a scaling group, each in 2 scopes")
}
