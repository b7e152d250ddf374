package definitions_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// jobSetDef is a small JobSet definition in the shape of the catalog's, written for the tests.
const jobSetDef = `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata:
  name: jobsets.jobset.x-k8s.io
spec:
  workload: {group: jobset.x-k8s.io, kind: JobSet, versions: [v1alpha2]}
  roles:
  - name: replicatedJob
    podTemplate: spec.replicatedJobs[*].template.spec.template
    instanceName: item.name
    replicas: "item.?replicas.orValue(1)"
    podsPerReplica: "item.template.?spec.?parallelism.orValue(1)"
    podInstance: "pod.metadata.?labels[?'jobset.sigs.k8s.io/replicatedjob-name'].orValue('')"
    podReplica: "pod.metadata.?labels[?'jobset.sigs.k8s.io/job-index'].orValue('-1')"
  children:
  - {group: batch, version: v1, kind: Job}
  pods:
    selector: "{'jobset.sigs.k8s.io/jobset-name': self.metadata.name}"
  status:
  - state: Failed
    when: "self.?status.?conditions.orValue([]).exists(c, c.type == 'Failed' && c.status == 'True')"
    reason: "'a job failed'"
  - state: Completed
    when: "self.?status.?conditions.orValue([]).exists(c, c.type == 'Completed' && c.status == 'True')"
  - state: Running
    when: "size(children.jobs) > 0 && children.jobs.all(j, j.?status.?active.orValue(0) > 0)"
    reason: "string(size(children.jobs)) + ' jobs active'"
  - state: Pending
    when: "true"
    reason: "'waiting'"
  gang:
    groups:
    - name: all
      members: [replicatedJob]
      timeoutSeconds: 60
`

// jobSet is a JobSet with a driver (1 pod) and workers (2 jobs × 4 pods, 8 GPUs each).
const jobSet = `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train, namespace: ml, uid: u-1}
spec:
  replicatedJobs:
  - name: driver
    template:
      spec:
        template:
          spec:
            containers:
            - name: main
              image: trainer
              resources: {requests: {cpu: "1", memory: 1Gi}}
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 4
        template:
          metadata: {labels: {app: train}}
          spec:
            containers:
            - name: main
              image: trainer
              resources: {limits: {nvidia.com/gpu: "8", cpu: "4"}}
`

// decodeOne decodes a manifest holding exactly one WorkloadDefinition.
func decodeOne(t testing.TB, src string) *v1alpha1.WorkloadDefinition {
	t.Helper()
	defs, err := definitions.Decode([]byte(src), "test.yaml")
	require.NoError(t, err)
	require.Len(t, defs, 1)
	return defs[0]
}

// compile decodes and compiles one definition.
func compile(t testing.TB, src string) *definitions.Definition {
	t.Helper()
	d, err := definitions.Compile(decodeOne(t, src), definitions.CompileOptions{})
	require.NoError(t, err)
	return d
}

// object decodes one YAML object the way objects come from the API server: whole numbers
// are int64 (sigs.k8s.io/yaml alone would make them float64).
func object(t testing.TB, src string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(src))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(j))
	return u
}

// objectMap decodes one YAML object into its unstructured map.
func objectMap(t testing.TB, src string) map[string]any {
	t.Helper()
	return object(t, src).Object
}

// expand compiles def and expands obj offline.
func expand(t testing.TB, def, obj string) *definitions.Workload {
	t.Helper()
	w, err := compile(t, def).Expand(object(t, obj))
	require.NoError(t, err)
	return w
}

// withSpec replaces the text between "spec:\n" and the end of a definition: it builds a
// definition of kind Thing (group example.com, version v1) around the given spec body.
func thingDef(specBody string) string {
	return `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: things.example.com}
spec:
  workload: {group: example.com, kind: Thing, versions: [v1]}
` + indent(specBody, "  ")
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
