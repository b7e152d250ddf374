package definitions_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
)

// role is the comparable part of a definitions.Role.
type role struct {
	Name, DefinitionRole, Location string
	Replicas, MinReplicas          int64
	PodsPerReplica, Pods           int64
	GPUs                           float64
	Instances                      []string // name/pods
}

func roles(w *definitions.Workload) []role {
	var out []role
	for _, r := range w.Roles {
		x := role{
			Name: r.Name, DefinitionRole: r.DefinitionRole, Location: r.Location,
			Replicas: r.Replicas, MinReplicas: r.MinReplicas, PodsPerReplica: r.PodsPerReplica, Pods: r.Pods, GPUs: r.GPUs,
		}
		for _, in := range r.Instances {
			x.Instances = append(x.Instances, in.Name+"/"+strconv.FormatInt(in.Pods, 10))
		}
		out = append(out, x)
	}
	return out
}

// nimDef is NIMService-like: the pod's fields are scattered over the root object's spec.
var nimDef = thingDef(`
roles:
- name: nim
  podFields:
    resources: spec.resources
    labels: spec.labels
    annotations: spec.annotations
    nodeSelector: spec.nodeSelector
    tolerations: spec.tolerations
    schedulerName: spec.schedulerName
    containerName: nim
  replicas: self.spec.?replicas.orValue(1)
`)

const nimObject = `
apiVersion: example.com/v1
kind: Thing
metadata: {name: llama}
spec:
  replicas: 2
  resources: {limits: {nvidia.com/gpu: "2"}, requests: {cpu: "4"}}
  labels: {team: ml}
  annotations: {note: hi}
  nodeSelector: {gpu: h100}
  tolerations: [{key: gpu, operator: Exists}]
`

func TestExpand(t *testing.T) {
	tests := map[string]struct {
		def, object  string
		want         []role
		wantPods     int64
		wantGPUs     float64
		wantWarnings []string
	}{
		"[*] over a list of named items": {
			def:    jobSetDef,
			object: jobSet,
			want: []role{
				{Name: "driver", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"driver-0/1"}},
				{Name: "workers", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[1].template.spec.template", Replicas: 2, PodsPerReplica: 4, Pods: 8, GPUs: 64, Instances: []string{"workers-0/4", "workers-1/4"}},
			},
			wantPods: 9, wantGPUs: 64,
		},
		"[*] over a list: default name is item.name": {
			def: thingDef("roles:\n- {name: part, podTemplate: 'spec.parts[*].template'}\n"),
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  parts: [{name: alpha, template: {}}, {name: beta, template: {}}]`,
			want: []role{
				{Name: "alpha", DefinitionRole: "part", Location: "spec.parts[0].template", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"alpha-0/1"}},
				{Name: "beta", DefinitionRole: "part", Location: "spec.parts[1].template", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"beta-0/1"}},
			},
			wantPods: 2,
		},
		"[*] over a list of unnamed items: the index": {
			def: thingDef("roles:\n- {name: part, podTemplate: 'spec.parts[*]'}\n"),
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  parts: [{}, {spec: {}}, null]`,
			want: []role{
				{Name: "0", DefinitionRole: "part", Location: "spec.parts[0]", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"0-0/1"}},
				{Name: "1", DefinitionRole: "part", Location: "spec.parts[1]", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"1-0/1"}},
			},
			wantPods: 2,
		},
		"[*] over a map: the keys, sorted": {
			def: thingDef(`
roles:
- name: component
  podSpec: spec.components[*].podSpec
  replicas: item.?minReplicas.orValue(1)
`),
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  components:
    Transformer: {podSpec: {containers: [{name: t}]}}
    Predictor: {minReplicas: 2, name: not-used, podSpec: {containers: [{name: p, resources: {limits: {nvidia.com/gpu: "1"}}}]}}`,
			want: []role{
				{Name: "Predictor", DefinitionRole: "component", Location: "spec.components.Predictor.podSpec", Replicas: 2, PodsPerReplica: 1, Pods: 2, GPUs: 2, Instances: []string{"Predictor-0/1", "Predictor-1/1"}},
				{Name: "Transformer", DefinitionRole: "component", Location: "spec.components.Transformer.podSpec", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"Transformer-0/1"}},
			},
			wantPods: 3, wantGPUs: 2,
		},
		"[*] over a map with instanceName from key": {
			def: thingDef(`
roles:
- name: component
  podSpec: spec.components[*].podSpec
  instanceName: key.lowerAscii()
`),
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  components:
    Transformer: {podSpec: {}}
    Predictor: {podSpec: {}}`,
			want: []role{
				{Name: "predictor", DefinitionRole: "component", Location: "spec.components.Predictor.podSpec", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"predictor-0/1"}},
				{Name: "transformer", DefinitionRole: "component", Location: "spec.components.Transformer.podSpec", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"transformer-0/1"}},
			},
			wantPods: 2,
		},
		"nested [*]: the innermost element is item": {
			def: thingDef(`
roles:
- name: clique
  podTemplate: spec.scalingGroups[*].cliques[*].template
  instanceName: item.name
  replicas: item.replicas
`),
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  scalingGroups:
  - cliques: [{name: prefill, replicas: 2, template: {}}]
  - cliques: [{name: decode, replicas: 3, template: {}}]`,
			want: []role{
				{Name: "prefill", DefinitionRole: "clique", Location: "spec.scalingGroups[0].cliques[0].template", Replicas: 2, PodsPerReplica: 1, Pods: 2, Instances: []string{"prefill-0/1", "prefill-1/1"}},
				{Name: "decode", DefinitionRole: "clique", Location: "spec.scalingGroups[1].cliques[0].template", Replicas: 3, PodsPerReplica: 1, Pods: 3, Instances: []string{"decode-0/1", "decode-1/1", "decode-2/1"}},
			},
			wantPods: 5,
		},
		"a path without [*]: the role name": {
			def: thingDef(`
roles:
- name: launcher
  podTemplate: spec.launcher.template
- name: worker
  podTemplate: spec.worker.template
  replicas: self.spec.worker.replicas
  minReplicas: "1"
`),
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  launcher: {template: {}}
  worker: {replicas: 3, template: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: "2"}}}]}}}`,
			want: []role{
				{Name: "launcher", DefinitionRole: "launcher", Location: "spec.launcher.template", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"launcher-0/1"}},
				{Name: "worker", DefinitionRole: "worker", Location: "spec.worker.template", Replicas: 3, MinReplicas: 1, PodsPerReplica: 1, Pods: 3, GPUs: 6, Instances: []string{"worker-0/1", "worker-1/1", "worker-2/1"}},
			},
			wantPods: 4, wantGPUs: 6,
		},
		"a path that finds nothing: no role": {
			def:      jobSetDef,
			object:   "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: empty}\nspec: {}\n",
			wantPods: 0,
		},
		"replicas 0": {
			def:    jobSetDef,
			object: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: [{name: w, replicas: 0, template: {spec: {parallelism: 3, template: {}}}}]\n",
			want: []role{
				{Name: "w", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Replicas: 0, PodsPerReplica: 3, Pods: 0},
			},
		},
		"podsPerReplica 0": {
			def:    jobSetDef,
			object: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: [{name: w, replicas: 2, template: {spec: {parallelism: 0, template: {}}}}]\n",
			want: []role{
				{Name: "w", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Replicas: 2, PodsPerReplica: 0, Pods: 0},
			},
		},
		"negative replicas: a warning": {
			def:    jobSetDef,
			object: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: [{name: w, replicas: -1, template: {spec: {template: {}}}}]\n",
			want: []role{
				{Name: "w", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Replicas: -1, PodsPerReplica: 1, Pods: 0},
			},
			wantWarnings: []string{"role w (spec.replicatedJobs[0].template.spec.template): replicas (-1), minReplicas (0) and podsPerReplica (1) must not be negative"},
		},
		"replicas of the wrong type: a warning": {
			def:    jobSetDef,
			object: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: [{name: w, replicas: two, template: {spec: {template: {}}}}]\n",
			want: []role{
				{Name: "w", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Pods: 0},
			},
			wantWarnings: []string{"role w (spec.replicatedJobs[0].template.spec.template): spec.roles[0].replicas: expected int, got string"},
		},
		"replicas beyond what a role may have: a warning, not an exhausted memory": {
			def:    jobSetDef,
			object: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: [{name: w, replicas: 2000000000, template: {spec: {template: {}}}}]\n",
			want: []role{
				{Name: "w", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Replicas: 2000000000, PodsPerReplica: 1},
			},
			wantWarnings: []string{"role w (spec.replicatedJobs[0].template.spec.template): replicas (2000000000), minReplicas (0) and podsPerReplica (1) exceed the 1000000 pods one role may have"},
		},
		"replicas × podsPerReplica beyond what a role may have": {
			def:    jobSetDef,
			object: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: [{name: w, replicas: 1000, template: {spec: {parallelism: 1001, template: {}}}}]\n",
			want: []role{
				{Name: "w", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Replicas: 1000, PodsPerReplica: 1001},
			},
			wantWarnings: []string{"role w (spec.replicatedJobs[0].template.spec.template): replicas (1000), minReplicas (0) and podsPerReplica (1001) exceed the 1000000 pods one role may have"},
		},
		"replicas × podsPerReplica that would overflow int64": {
			def:    jobSetDef,
			object: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: [{name: w, replicas: 9223372036854775807, template: {spec: {parallelism: 9223372036854775807, template: {}}}}]\n",
			want: []role{
				{Name: "w", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Replicas: 9223372036854775807, PodsPerReplica: 9223372036854775807},
			},
			wantWarnings: []string{"role w (spec.replicatedJobs[0].template.spec.template): replicas (9223372036854775807), minReplicas (0) and podsPerReplica (9223372036854775807) exceed the 1000000 pods one role may have"},
		},
		"exactly the most pods a role may have": {
			def:    jobSetDef,
			object: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: [{name: w, replicas: 1, template: {spec: {parallelism: 1000000, template: {}}}}]\n",
			want: []role{
				{Name: "w", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Replicas: 1, PodsPerReplica: 1000000, Pods: 1000000, Instances: []string{"w-0/1000000"}},
			},
			wantPods: 1000000,
		},
		"a list where the path expects an object: a warning": {
			def:          jobSetDef,
			object:       "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: {a: 1}\n",
			wantWarnings: []string{"role replicatedJob: spec.replicatedJobs.a: expected object, found number"},
		},
		"a version not in versions: a warning": {
			def:    jobSetDef,
			object: "apiVersion: jobset.x-k8s.io/v1\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs: [{name: w, template: {spec: {template: {}}}}]\n",
			want: []role{
				{Name: "w", DefinitionRole: "replicatedJob", Location: "spec.replicatedJobs[0].template.spec.template", Replicas: 1, PodsPerReplica: 1, Pods: 1, Instances: []string{"w-0/1"}},
			},
			wantPods:     1,
			wantWarnings: []string{`version v1 is not among the versions definition "jobsets.jobset.x-k8s.io" was tested with [v1alpha2]`},
		},
		"podFields at the root (NIMService-like)": {
			def:    nimDef,
			object: nimObject,
			want: []role{
				{Name: "nim", DefinitionRole: "nim", Replicas: 2, PodsPerReplica: 1, Pods: 2, GPUs: 4, Instances: []string{"nim-0/1", "nim-1/1"}},
			},
			wantPods: 2, wantGPUs: 4,
		},
		"podFields with a [*] base and containers": {
			def: thingDef(`
roles:
- name: component
  podFields:
    base: spec.components[*]
    containers: sidecars
    resources: resources
    labels: podLabels
  instanceName: key
  replicas: item.?replicas.orValue(1)
`),
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  components:
    proxy: {replicas: 3, resources: {requests: {cpu: "1"}}}
    query:
      resources: {limits: {nvidia.com/gpu: "1"}}
      sidecars: [{name: log, resources: {requests: {cpu: 100m}}}]`,
			want: []role{
				{Name: "proxy", DefinitionRole: "component", Location: "spec.components.proxy", Replicas: 3, PodsPerReplica: 1, Pods: 3, Instances: []string{"proxy-0/1", "proxy-1/1", "proxy-2/1"}},
				{Name: "query", DefinitionRole: "component", Location: "spec.components.query", Replicas: 1, PodsPerReplica: 1, Pods: 1, GPUs: 1, Instances: []string{"query-0/1"}},
			},
			wantPods: 4, wantGPUs: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, tc.def, tc.object)
			if diff := cmp.Diff(tc.want, roles(w)); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
			require.Equal(t, tc.wantPods, w.Totals.Pods)
			require.Equal(t, tc.wantGPUs, w.Totals.GPUs)
			if diff := cmp.Diff(tc.wantWarnings, w.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			var sum int64
			for _, r := range w.Roles {
				if r.Pods > 0 {
					require.Len(t, r.Instances, int(r.Replicas), "one instance per replica")
				} else {
					require.Empty(t, r.Instances, "a role without pods has no instances")
				}
				sum += r.Pods
			}
			require.Equal(t, w.Totals.Pods, sum)
		})
	}
}

func TestExpandTemplates(t *testing.T) {
	t.Run("pod template", func(t *testing.T) {
		w := expand(t, jobSetDef, jobSet)
		require.Len(t, w.Roles, 2)
		tmpl := w.Roles[1].Template
		require.Equal(t, map[string]string{"app": "train"}, tmpl.Labels)
		require.Len(t, tmpl.Spec.Containers, 1)
		require.Equal(t, "trainer", tmpl.Spec.Containers[0].Image)
		require.Equal(t, map[string]string{"cpu": "4", "nvidia.com/gpu": "8"}, resList(w.Roles[1].PodResources))
	})
	t.Run("pod spec", func(t *testing.T) {
		w := expand(t, thingDef("roles:\n- {name: main, podSpec: spec.podSpec}\n"), `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  podSpec: {schedulerName: kai, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "2"}}}]}`)
		require.Len(t, w.Roles, 1)
		require.Equal(t, "kai", w.Roles[0].Template.Spec.SchedulerName)
		require.Empty(t, w.Roles[0].Template.Labels)
		require.Equal(t, 2.0, w.Totals.GPUs)
	})
	t.Run("pod fields", func(t *testing.T) {
		w := expand(t, nimDef, nimObject)
		require.Len(t, w.Roles, 1)
		tmpl := w.Roles[0].Template
		require.Equal(t, map[string]string{"team": "ml"}, tmpl.Labels)
		require.Equal(t, map[string]string{"note": "hi"}, tmpl.Annotations)
		require.Equal(t, map[string]string{"gpu": "h100"}, tmpl.Spec.NodeSelector)
		require.Len(t, tmpl.Spec.Tolerations, 1)
		require.Empty(t, tmpl.Spec.SchedulerName, "schedulerName is declared but absent")
		require.Len(t, tmpl.Spec.Containers, 1)
		require.Equal(t, "nim", tmpl.Spec.Containers[0].Name)
		require.Equal(t, map[string]string{"cpu": "4", "nvidia.com/gpu": "2"}, resList(w.Roles[0].PodResources))
		require.Equal(t, map[string]string{"cpu": "8", "nvidia.com/gpu": "4"}, resList(w.Totals.Resources))
	})
	t.Run("pod fields: main container first, then the containers list", func(t *testing.T) {
		w := expand(t, thingDef(`
roles:
- name: main
  podFields: {containers: spec.extra, resources: spec.resources}
`), `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  extra: [{name: a}, {name: b}]
  resources: {requests: {cpu: "1"}}`)
		var names []string
		for _, c := range w.Roles[0].Template.Spec.Containers {
			names = append(names, c.Name)
		}
		require.Equal(t, []string{"main", "a", "b"}, names)
	})
}

func TestExpandWorkloadRef(t *testing.T) {
	w := expand(t, jobSetDef, jobSet)
	require.Equal(t, definitions.ObjectRef{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Namespace: "ml", Name: "train", UID: "u-1"}, w.Workload)
	require.Equal(t, "jobsets.jobset.x-k8s.io", w.Definition)
	require.Nil(t, w.Live, "offline expansion has no live part")
}

func TestExpandErrors(t *testing.T) {
	d := compile(t, jobSetDef)
	tests := map[string]struct {
		obj     *unstructured.Unstructured
		wantErr string
	}{
		"nil object": {
			obj:     nil,
			wantErr: "no object to expand",
		},
		"object without content": {
			obj:     &unstructured.Unstructured{},
			wantErr: "no object to expand",
		},
		"wrong kind": {
			obj:     object(t, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n"),
			wantErr: `Job "j": definition "jobsets.jobset.x-k8s.io" describes JobSet.jobset.x-k8s.io`,
		},
		"right kind, wrong group": {
			obj:     object(t, "apiVersion: other.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\n"),
			wantErr: `describes JobSet.jobset.x-k8s.io`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w, err := d.Expand(tc.obj)
			require.ErrorContains(t, err, tc.wantErr)
			require.Nil(t, w)
			w, err = d.ExpandLive(tc.obj, &definitions.LiveData{})
			require.ErrorContains(t, err, tc.wantErr)
			require.Nil(t, w)
		})
	}
}

// TestExpandDoesNotModifyTheObject: expansion only reads.
func TestExpandDoesNotModifyTheObject(t *testing.T) {
	for name, tc := range map[string]struct{ def, obj string }{
		"template roles": {jobSetDef, jobSet},
		"pod fields":     {nimDef, nimObject},
	} {
		t.Run(name, func(t *testing.T) {
			obj := object(t, tc.obj)
			before := obj.DeepCopy()
			_, err := compile(t, tc.def).Expand(obj)
			require.NoError(t, err)
			if diff := cmp.Diff(before.Object, obj.Object); diff != "" {
				t.Errorf("object changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	catalog := compile(t, jobSetDef)
	file := compile(t, jobSetDef)
	nim := compile(t, nimDef)
	r := definitions.NewRegistry()
	r.Add(catalog, nim)
	r.Add(file) // later additions take precedence

	tests := map[string]struct {
		gk     schema.GroupKind
		want   *definitions.Definition
		wantOK bool
	}{
		"replaced by the later definition": {gk: schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"}, want: file, wantOK: true},
		"other kind":                       {gk: schema.GroupKind{Group: "example.com", Kind: "Thing"}, want: nim, wantOK: true},
		"unknown kind":                     {gk: schema.GroupKind{Group: "example.com", Kind: "Other"}},
		"kind in another group":            {gk: schema.GroupKind{Group: "example.org", Kind: "Thing"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := r.Lookup(tc.gk)
			require.Equal(t, tc.wantOK, ok)
			require.Same(t, tc.want, got)
		})
	}
	all := r.All()
	require.Len(t, all, 2)
	require.Same(t, nim, all[0], "sorted by group")
	require.Same(t, file, all[1])
}
