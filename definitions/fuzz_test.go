package definitions_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// FuzzDecodeDefinition feeds arbitrary manifests to Decode and Compile. Errors are fine;
// panics are not. Definitions that compile are also expanded against a few objects (offline
// and live), their pods placed and a field written, which must not panic either.
func FuzzDecodeDefinition(f *testing.F) {
	for _, seed := range []string{
		jobSetDef,
		rayDef,
		lwsDef,
		nimDef,
		componentsDef,
		mixedDef,
		statusDef,
		inOrderJobSetDef,
		inOrderJobSetDef + "      minMember: \"item.?replicas.orValue(1) * 2\"\n",
		lwsDef + "      minMember: \"replica == 0 ? 2 : 3\"\n",
		// broken ones
		"",
		"---\n---\n",
		"apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\n",
		"apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata: {name: x}\nspec: {roles: [{name: a}]}\n",
		"apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata: {name: x}\nspec: {roles: [{name: a, podTemplat: b}]}\n",
		"apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata: {name: x}\nspec:\n  workload: {kind: X, versions: [v1]}\n  roles: [{name: a, podFields: {base: 'spec[*]', resources: 'r[*]'}}]\n",
		"apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata: {name: x}\nspec:\n  workload: {kind: X, versions: [v1]}\n  roles: [{name: a, podFields: {}}]\n  gang: {groups: [{name: g, members: [a, a], scope: replica}]}\n",
		"apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata: {name: x}\nspec:\n  workload: {kind: X, versions: [v1]}\n  roles: [{name: a, podSpec: '.', replicas: 'self.spec.n', podsPerReplica: '-1'}]\n  status: [{state: Running, when: 'self.status.x.exists(c, c.y.all(z, z > 0))'}]\n",
		"apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata: {name: x}\nspec:\n  workload: {kind: X, versions: [v1]}\n  roles: [{name: a, podTemplate: 'spec[*][*]', instanceName: 'key + string(item)'}]\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: workmap.dev/v1alpha1\n  kind: WorkloadDefinition\n  metadata: {name: x}\n",
		"apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata:\n  name: x\n   bad: indent\n",
		"apiVersion: workmap.dev/v2\nkind: WorkloadDefinition\n",
		"[1, 2, 3]",
		"{apiVersion: workmap.dev/v1alpha1, kind: WorkloadDefinition, spec: null}",
	} {
		f.Add([]byte(seed))
	}
	// Objects of every kind the seeds describe, plus a malformed one; expansion picks the
	// ones of the definition's kind.
	objects := []string{jobSet, nimObject, componentsObject, mixedObject, lws("2", "4"), rayThing("", twoWorkerGroups),
		thingWithStatus("failed and complete"), thingWithStatus("oops"),
		"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t, annotations: {workmap.dev/min-member: x}}\nspec: [1, {a: b}, null]\nstatus: 3\n",
		"apiVersion: v1\nkind: X\nmetadata: {name: t}\nspec: {a: {b: 1}, c: [{}, []], n: 3}\n",
	}
	var objs []*unstructured.Unstructured
	for _, o := range objects {
		objs = append(objs, object(f, o))
	}
	pods := []map[string]any{
		jobSetPod("p", "Running", "workers", "1"),
		lwsPod("l", "", "0", "0"),
		{"metadata": "oops"},
		{},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defs, err := definitions.Decode(data, "fuzz.yaml")
		if err != nil {
			return
		}
		for _, def := range defs {
			_ = definitions.Validate(def)
			d, err := definitions.Compile(def, definitions.CompileOptions{})
			if err != nil {
				continue
			}
			for _, obj := range objs {
				if obj.GroupVersionKind().GroupKind() != d.GroupKind {
					continue
				}
				o := obj.DeepCopy()
				if w, err := d.Expand(o); err == nil {
					_, _, _ = w.Place(pods[0])
				}
				if w, err := d.ExpandLive(o, &definitions.LiveData{Pods: pods}); err == nil {
					for _, p := range pods {
						_, _, _ = w.Place(p)
					}
				}
				_, _ = d.SetPodTemplateField(o, `metadata.labels["team"]`, "ml")
				_, _ = d.SetPodTemplateField(o, "spec.containers[*].resources", map[string]any{})
			}
		}
		_ = definitions.ValidateSet(defs)
	})
}

// FuzzCompileFields fuzzes the paths and expressions of an otherwise valid definition, so
// that Compile and the expansion see many more well-formed definitions than mutated YAML
// gives: no input may make them panic or hang.
func FuzzCompileFields(f *testing.F) {
	type seed struct{ locator, name, replicas, podsPerReplica, minMember, when, podReplica, field string }
	for _, s := range []seed{
		{"spec.replicatedJobs[*].template.spec.template", "item.name", "item.?replicas.orValue(1)", "item.template.?spec.?parallelism.orValue(1)", "", "true", "pod.metadata.labels['i']", `metadata.labels["team"]`},
		{"spec.components[*]", "key.lowerAscii()", "item.?minReplicas.orValue(1)", "2", "replica + 1", "self.status.conditions.exists(c, c.type == 'Ready')", "0", "spec.containers[*].resources"},
		{"spec.a[*][*].b", "string(key)", "size(self.spec)", "-1", "self.spec.n * 1000000000000", "size(pods) > 0", "'x'", "spec"},
		{".", "''", "9223372036854775807", "9223372036854775807", "2147483648", "children.jobs.all(j, true)", "pod.metadata.name", "."},
		{"spec[0]", "item", "int(item)", "int(key)", "-5", "[1,2].map(x, [1,2].map(y, x*y)).size() > 0", "'-1'", "spec.containers[0].x"},
	} {
		f.Add(s.locator, s.name, s.replicas, s.podsPerReplica, s.minMember, s.when, s.podReplica, s.field)
	}
	objs := []*unstructured.Unstructured{
		object(f, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\n"+jobSet[strings.Index(jobSet, "spec:"):]),
		object(f, "apiVersion: example.com/v1\nkind: Thing\n"+componentsObject[strings.Index(componentsObject, "metadata:"):]),
		object(f, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {a: [[{b: {}}], {k: {b: 1}}], n: 7}\nstatus: {conditions: [{type: Ready}]}\n"),
		object(f, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: [1, 2]\nstatus: oops\n"),
		object(f, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec:\n  components:\n"+
			"    a: {claims: [{claimCreationSpec: {devices: [{name: g, count: 2.5}, {deviceClassName: 7}, x]}}, {resourceClaimName: r}, {name: 3}, 5]}\n"+
			"    b: {claims: {resourceClaimTemplateName: t}}\n    c: {claims: [{claimCreationSpec: {devices: {}}}, {claimCreationSpec: oops}]}\n"),
	}
	pods := []map[string]any{jobSetPod("p", "Running", "workers", "1"), {"metadata": map[string]any{"labels": map[string]any{"i": "3"}}}, {}}
	f.Fuzz(func(t *testing.T, locator, name, replicas, podsPerReplica, minMember, when, podReplica, field string) {
		def := &v1alpha1.WorkloadDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"},
			Spec: v1alpha1.WorkloadDefinitionSpec{
				Workload: v1alpha1.WorkloadType{Group: "example.com", Kind: "Thing", Versions: []string{"v1"}},
				Roles: []v1alpha1.Role{
					{Name: "a", PodTemplate: locator, InstanceName: name, Replicas: replicas, PodsPerReplica: podsPerReplica, PodInstance: name, PodReplica: podReplica},
					{Name: "b", PodFields: &v1alpha1.PodFields{Base: locator, Resources: "resources", Labels: "podLabels", ResourceClaims: "claims"}, Replicas: replicas, PodReplica: podReplica},
				},
				Children: []v1alpha1.ChildKind{{Group: "batch", Version: "v1", Kind: "Job"}},
				Status:   []v1alpha1.StatusRule{{State: v1alpha1.StateRunning, When: when, Reason: name}},
				Gang: &v1alpha1.Gang{Groups: []v1alpha1.GangGroup{
					{Name: "a", Members: []string{"a"}, Scope: v1alpha1.ScopeReplica, MinMember: minMember},
					{Name: "b", Members: []string{"b"}, Scope: v1alpha1.ScopeInstance, MinMember: minMember},
				}},
			},
		}
		d, err := definitions.Compile(def, definitions.CompileOptions{})
		if err != nil {
			return
		}
		for _, obj := range objs {
			o := obj.DeepCopy()
			if _, err := d.Expand(o); err != nil {
				t.Fatalf("Expand of a matching object failed: %v", err)
			}
			w, err := d.ExpandLive(o, &definitions.LiveData{Pods: pods})
			if err != nil {
				t.Fatalf("ExpandLive of a matching object failed: %v", err)
			}
			for _, p := range pods {
				_, _, _ = w.Place(p)
			}
			_, _ = d.SetPodTemplateField(o, field, "v")
		}
	})
}
