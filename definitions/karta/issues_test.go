package karta

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// TestUnconvertibleReported: every part the converter cannot take over is reported with its
// field path in the input, and the rest still makes a definition that compiles.
func TestUnconvertibleReported(t *testing.T) {
	def, issues := convertFile(t, "unconvertible.yaml")
	const (
		root    = "spec.structureDefinition.rootComponent."
		mapping = root + "statusDefinition.statusMappings."
		child   = "spec.structureDefinition.childComponents"
		group   = "spec.optimizationInstructions.gangScheduling.podGroups[0]."
	)
	tests := map[string]struct {
		severity Severity
		field    string
		message  string
	}{
		"suspend actions":              {NotConverted, root + "suspendDefinition", "does not suspend or resume"},
		"metadataPath":                 {NotConverted, child + "[0].specDefinition.metadataPath", "the pod labels and annotations at `.spec.launcher.metadata` are not read"},
		"a pipe with arithmetic":       {NotConverted, child + "[1].scaleDefinition.replicasPath", "`.spec.workerGroups[] | .replicas * .size` is not a simple jq path (it uses a pipe, arithmetic): replicas default to 1"},
		"maxReplicas":                  {NotConverted, child + "[1].scaleDefinition.maxReplicasPath", "no maximum replicas"},
		"a function":                   {NotConverted, child + "[1].podSelector.componentTypeSelector", "(it uses a pipe, a function (`has`)): pods of role workers are recognized by their instance id only"},
		"a // default in a path":       {NotConverted, child + "[2].specDefinition.fragmentedPodSpecDefinition.labelsPath", "`.spec.sidecar.labels // {}` is not a simple jq path (it uses a `//` default)"},
		"a pod field workmap lacks":    {NotConverted, child + "[2].specDefinition.fragmentedPodSpecDefinition.imagePath", "no image path"},
		"a status expression":          {NotConverted, mapping + "failed[0].byExpression.expression", "`.status.failed | length > 0` is not a simple jq path (it uses a pipe, a function (`length`), a comparison); the matcher is skipped"},
		"an empty matcher":             {NotConverted, mapping + "running[0]", "empty matcher: Karta matches every object with it; skipped"},
		"a state workmap lacks":        {NotConverted, mapping + "suspending", "no state suspending"},
		"status reordered":             {SemanticChange, strings.TrimSuffix(mapping, "."), "failed → Failed, completed → Completed, running → Running, anything else → Pending"},
		"an unknown grouping key":      {NotConverted, group + "members[0].groupByKeyPaths[1]", "cannot tell whether grouping by `.metadata.labels[\"example.com/slice\"]`"},
		"a filter":                     {NotConverted, group + "members[0].filters[0]", "filters are not converted (`(.spec.containers[0].resources.limits[\"nvidia.com/gpu\"] // 0) > 0`)"},
		"a missing member":             {NotConverted, group + "members[1].componentName", `no component named "missing"`},
		"group-level minMember":        {SemanticChange, strings.TrimSuffix(group, "."), "minMember is now computed once for group workers"},
		"an unknown field":             {NotConverted, "spec.optimizationInstructions.topologyAwareness", "unknown field"},
		"pods found by the name label": {SemanticChange, group + "members[0].groupByKeyPaths[0]", "live pods are found by their label example.com/trainer-name"},
	}
	found := map[string]bool{}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for _, is := range issues {
				if is.Field == tc.field && is.Severity == tc.severity {
					found[is.Field+string(is.Severity)] = true
					assert.Contains(t, is.Message, tc.message)
					return
				}
			}
			t.Errorf("no %s issue for %s in:\n%v", tc.severity, tc.field, issues)
		})
	}
	for _, is := range issues {
		assert.True(t, found[is.Field+string(is.Severity)], "issue not covered by the test: %v", is)
	}

	// What could be converted is there; what could not is left out, not half-converted.
	roles := map[string]v1alpha1.Role{}
	for _, r := range def.Spec.Roles {
		roles[r.Name] = r
	}
	require.Len(t, roles, 3)
	assert.Equal(t, "spec.launcher.podSpec", roles["launcher"].PodSpec)
	assert.Equal(t, "spec.workerGroups[*].template", roles["workers"].PodTemplate)
	assert.Empty(t, roles["workers"].Replicas, "an unconvertible replicas path leaves the default")
	assert.Equal(t, "pod.metadata.?labels[?'example.com/group'].orValue('')", roles["workers"].PodInstance)
	assert.Equal(t, &v1alpha1.PodFields{Containers: "spec.sidecar.containers"}, roles["sidecar"].PodFields)
	var states []v1alpha1.State
	for _, r := range def.Spec.Status {
		states = append(states, r.State)
	}
	assert.Equal(t, []v1alpha1.State{v1alpha1.StateFailed, v1alpha1.StateCompleted, v1alpha1.StateRunning, v1alpha1.StatePending}, states)
	assert.Equal(t, "self.?status.?phase.orValue('') == 'Failed'", def.Spec.Status[0].When, "the unconvertible matcher is left out, the other one kept")
	assert.Equal(t, "self.?status.?done.orValue(null) == true", def.Spec.Status[1].When, "a simple-path expression compares with its expected result")
	assert.Equal(t, "self.?status.?phase.orValue('') == 'Running'", def.Spec.Status[2].When, "the empty matcher is skipped")
	assert.Equal(t, []v1alpha1.GangGroup{{Name: "workers", Members: []string{"workers"}}}, def.Spec.Gang.Groups)
}

// TestNothingConverted: without a role there is no definition, and the issues say why.
func TestNothingConverted(t *testing.T) {
	tests := map[string]struct {
		input string
		field string
		msg   string
	}{
		"root without kind": {
			input: "spec:\n  structureDefinition:\n    rootComponent: {name: x}\n",
			field: "spec.structureDefinition.rootComponent.kind", msg: "needs a kind with a version",
		},
		"the only pod template is not a simple path": {
			input: `spec:
  structureDefinition:
    rootComponent:
      name: x
      kind: {group: example.com, version: v1, kind: X}
      specDefinition: {podTemplateSpecPath: '.spec.templates | first'}
`,
			field: "spec.structureDefinition", msg: "needs at least one role",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			results, err := Convert([]byte("apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: k}\n"+tc.input), "in.yaml")
			require.NoError(t, err)
			require.Len(t, results, 1)
			assert.Nil(t, results[0].Definition)
			var msgs []string
			for _, is := range results[0].Issues {
				msgs = append(msgs, is.String())
			}
			assert.Contains(t, strings.Join(msgs, "\n"), "not converted: "+tc.field+": ")
			assert.Contains(t, strings.Join(msgs, "\n"), tc.msg)
		})
	}
}

// TestGangScopes: grouping keys tell the scope of a group.
func TestGangScopes(t *testing.T) {
	const lws = `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: lws}
spec:
  structureDefinition:
    rootComponent:
      name: lws
      kind: {group: leaderworkerset.x-k8s.io, version: v1, kind: LeaderWorkerSet}
    childComponents:
    - name: group
      ownerRef: lws
      scaleDefinition: {replicasPath: .spec.replicas // 1}
      podSelector:
        replicaSelector: {keyPath: '.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"]'}
    - name: leader
      kind: {group: apps, version: v1, kind: StatefulSet}
      ownerRef: group
      specDefinition: {podTemplateSpecPath: '.spec.leaderWorkerTemplate.leaderTemplate'}
      scaleDefinition: {replicasPath: .spec.replicas // 1}
    - name: worker
      kind: {group: apps, version: v1, kind: StatefulSet}
      ownerRef: group
      specDefinition: {podTemplateSpecPath: '.spec.leaderWorkerTemplate.workerTemplate'}
  optimizationInstructions:
    gangScheduling:
      podGroups:
      - name: group
        members:
        - componentName: leader
          groupByKeyPaths: ['.metadata.labels["leaderworkerset.sigs.k8s.io/name"]', '.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"]']
        - componentName: worker
          groupByKeyPaths: ['.metadata.labels["leaderworkerset.sigs.k8s.io/name"]', '.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"]']
`
	results, err := Convert([]byte(lws), "lws.yaml")
	require.NoError(t, err)
	r := results[0]
	require.NotNil(t, r.Definition, "%v", r.Issues)
	require.NoError(t, r.Err)
	spec := r.Definition.Spec
	require.Len(t, spec.Roles, 2)
	for _, role := range spec.Roles {
		assert.Equal(t, "pod.metadata.?labels[?'leaderworkerset.sigs.k8s.io/group-index'].orValue('-1')", role.PodReplica, "inherited from the virtual group component")
	}
	assert.Equal(t, "self.?spec.?replicas.orValue(1)", spec.Roles[0].Replicas)
	assert.Equal(t, []v1alpha1.GangGroup{{Name: "group", Members: []string{"leader", "worker"}, Scope: v1alpha1.ScopeReplica}}, spec.Gang.Groups)
	assert.Equal(t, []v1alpha1.ChildKind{{Group: "apps", Version: "v1", Kind: "StatefulSet"}}, spec.Children)
	assert.Equal(t, "{'leaderworkerset.sigs.k8s.io/name': self.metadata.name}", spec.Pods.Selector)
	var fields []string
	for _, is := range r.Issues {
		fields = append(fields, is.String())
	}
	all := strings.Join(fields, "\n")
	assert.Contains(t, all, "not converted: spec.structureDefinition.childComponents[0].scaleDefinition: component group has no specDefinition")
	assert.Contains(t, all, "warning: spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath: jq default `// 1` became `.orValue(1)`")
	assert.NotContains(t, all, "replicaSelector: component group", "the group's replicaSelector is used by its roles")
}
