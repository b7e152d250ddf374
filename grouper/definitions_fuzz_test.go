package grouper

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// trainerDefinitionObject is a WorkloadDefinition of the Trainer kind as the API server
// holds it, at a generation, with the given replicas and minMember expressions.
func trainerDefinitionObject(generation int64, replicas, minMember string) *unstructured.Unstructured {
	group := map[string]any{"name": "all", "members": []any{"worker"}}
	if minMember != "" {
		group["minMember"] = minMember
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workmap.dev/v1alpha1", "kind": "WorkloadDefinition",
		"metadata": map[string]any{"name": "trainers.example.com", "generation": generation, "uid": "def-uid"},
		"spec": map[string]any{
			"workload": map[string]any{"group": "example.com", "kind": "Trainer", "versions": []any{"v1"}},
			"roles":    []any{map[string]any{"name": "worker", "podTemplate": "spec.template", "replicas": replicas}},
			"gang":     map[string]any{"groups": []any{group}},
		},
	}}
}

// FuzzDefinitionGenerations replaces a WorkloadDefinition, generation after generation, with
// valid and broken ones (bad CEL, expressions of the wrong type): the source never panics, a
// valid generation takes effect, and while the latest is invalid the last valid one stays in
// effect, its status says Invalid and names it, and the kind's pods are told why.
func FuzzDefinitionGenerations(f *testing.F) {
	for _, seed := range []string{
		"self.spec.workers",
		"self.spec.workers\nself.spec.(\nself.spec.workers",
		"self.spec.(\nself.spec.workers",
		"1\n'x'\n2\nself.spec.workers +\n3",
		"size(self.spec.x) * 1000000000000\n[1,2].map(x, x)\n",
		"self.spec.workers|minMember=replica + 1\nself.spec.workers|minMember=)(\nself.spec.workers|minMember=2",
		"\n\n",
	} {
		f.Add(seed)
	}
	gk := schema.GroupKind{Group: "example.com", Kind: "Trainer"}
	f.Fuzz(func(t *testing.T, generations string) {
		s := NewDefinitionSource(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), nil)
		lines := strings.Split(generations, "\n")
		if len(lines) > 8 {
			lines = lines[:8]
		}
		var lastGood int64
		for i, line := range lines {
			generation := int64(i + 1)
			replicas, minMember, _ := strings.Cut(line, "|minMember=")
			obj := trainerDefinitionObject(generation, replicas, minMember)
			if i == 0 {
				_ = s.informer.GetStore().Add(obj)
			} else {
				_ = s.informer.GetStore().Update(obj)
			}
			s.rebuild(context.Background())

			var wd v1alpha1.WorkloadDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &wd); err != nil {
				t.Fatal(err)
			}
			_, compileErr := definitions.Compile(&wd, definitions.CompileOptions{})
			result := (*s.results.Load())["trainers.example.com"]
			inEffect, found := s.Registry().Lookup(gk)
			why, stale := s.Stale(gk)
			switch {
			case compileErr == nil:
				lastGood = generation
				if !found || inEffect.Source.Generation != generation || result.status != metav1.ConditionTrue || stale {
					t.Fatalf("generation %d (%q) compiles but is not in effect (status %s, stale %q)", generation, line, result.status, why)
				}
			case lastGood > 0:
				if !found || inEffect.Source.Generation != lastGood {
					t.Fatalf("generation %d (%q) is invalid: generation %d must stay in effect", generation, line, lastGood)
				}
				if result.status != metav1.ConditionFalse || result.reason != v1alpha1.ReasonInvalid || result.lastValid == nil || result.lastValid.Generation != lastGood {
					t.Fatalf("generation %d (%q): status %s %s, last valid %v", generation, line, result.status, result.reason, result.lastValid)
				}
				if !stale || !strings.Contains(why, "trainers.example.com") {
					t.Fatalf("generation %d (%q): the pods are not told the definition is invalid (%q)", generation, line, why)
				}
			default:
				if found || result.status != metav1.ConditionFalse || result.reason != v1alpha1.ReasonInvalid {
					t.Fatalf("generation %d (%q) is invalid and none was valid before: nothing is in effect (status %s)", generation, line, result.status)
				}
			}
		}
	})
}
