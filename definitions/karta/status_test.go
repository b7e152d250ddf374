package karta

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// convertInline converts a Karta whose rootComponent (a pod-producing Deployment-like kind)
// gets the given extra YAML, indented under it.
func convertInline(t *testing.T, rootExtra, specExtra string) Result {
	t.Helper()
	src := `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: widget}
spec:
  structureDefinition:
    rootComponent:
      name: widget
      kind: {group: example.com, version: v1, kind: Widget}
      specDefinition: {podTemplateSpecPath: .spec.template}
` + rootExtra + specExtra
	results, err := Convert([]byte(src), "widget.yaml")
	require.NoError(t, err)
	require.Len(t, results, 1)
	require.NotNil(t, results[0].Definition, "%v", results[0].Issues)
	require.NoError(t, results[0].Err)
	return results[0]
}

func TestStatusRules(t *testing.T) {
	tests := map[string]struct {
		status string
		want   []v1alpha1.StatusRule
	}{
		"every state in precedence order, custom condition fields, ANDed parts": {
			status: `      statusDefinition:
        phaseDefinition: {path: .status.state}
        conditionsDefinition: {path: '.status["conds"]', typeFieldName: kind, statusFieldName: value, reasonFieldName: why}
        statusMappings:
          initializing: [{byPhase: Starting}]
          running: [{byPhase: Active, byConditions: [{type: Ready, status: "True"}, {type: Stalled, status: "False"}]}]
          degraded: [{byConditions: [{type: Ready, reason: Partial}]}]
          suspended: [{byPhase: Paused}]
          completed: [{byPhase: Done}]
          failed: [{byPhase: Error}, {byExpression: {expression: .status.failed, expectedResult: "true"}}]
`,
			want: []v1alpha1.StatusRule{
				{State: v1alpha1.StateFailed, When: "self.?status.?state.orValue('') == 'Error' || self.?status.?failed.orValue(null) == true", Reason: "'phase is Error, or .status.failed is true'"},
				{State: v1alpha1.StateCompleted, When: "self.?status.?state.orValue('') == 'Done'", Reason: "'phase is Done'"},
				{
					State:  v1alpha1.StateDegraded,
					When:   "self.?status.?conds.orValue([]).exists(c, c.kind == 'Ready' && c.?why.orValue('') == 'Partial')",
					Reason: "self.?status.?conds.orValue([]).filter(c, c.kind == 'Ready' && c.?why.orValue('') == 'Partial')[0].?message.orValue('condition Ready with reason Partial')",
				},
				{
					State: v1alpha1.StateRunning,
					When: "self.?status.?state.orValue('') == 'Active' && " +
						"self.?status.?conds.orValue([]).exists(c, c.kind == 'Ready' && c.value == 'True') && " +
						"self.?status.?conds.orValue([]).exists(c, c.kind == 'Stalled' && c.value == 'False')",
					Reason: "'phase is Active and condition Ready is True and condition Stalled is False'",
				},
				{State: v1alpha1.StateInitializing, When: "self.?status.?state.orValue('') == 'Starting'", Reason: "'phase is Starting'"},
				{State: v1alpha1.StateSuspended, When: "self.?status.?state.orValue('') == 'Paused'", Reason: "'phase is Paused'"},
				pending,
			},
		},
		"ORed items with ANDed parts are parenthesized": {
			status: `      statusDefinition:
        phaseDefinition: {path: .status.phase}
        conditionsDefinition: {path: .status.conditions}
        statusMappings:
          running: [{byPhase: Running, byConditions: [{type: Ready, status: "True"}]}, {byPhase: Serving}]
`,
			want: []v1alpha1.StatusRule{
				{
					State: v1alpha1.StateRunning,
					When: "(self.?status.?phase.orValue('') == 'Running' && self.?status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')) || " +
						"self.?status.?phase.orValue('') == 'Serving'",
					Reason: "'phase is Running and condition Ready is True, or phase is Serving'",
				},
				pending,
			},
		},
		"no status definition: no rules": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := convertInline(t, tc.status, "")
			if diff := cmp.Diff(tc.want, r.Definition.Spec.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusMissingDefinitions(t *testing.T) {
	r := convertInline(t, `      statusDefinition:
        statusMappings:
          running: [{byPhase: Running}]
          failed: [{byConditions: [{type: Failed, status: "True"}]}]
`, "")
	require.Empty(t, r.Definition.Spec.Status, "nothing converted: no rules at all, not a lone Pending")
	require.Equal(t, []wantIssue{
		{NotConverted, "spec.structureDefinition.rootComponent.statusDefinition.statusMappings.failed[0].byConditions[0]"},
		{NotConverted, "spec.structureDefinition.rootComponent.statusDefinition.statusMappings.running[0].byPhase"},
	}, issueKeys(r.Issues))
}

func TestPodGroupForm(t *testing.T) {
	r := convertInline(t, "", `    childComponents:
    - name: worker
      ownerRef: widget
      specDefinition: {podTemplateSpecPath: .spec.workerTemplate}
  optimizationInstructions:
    gangScheduling:
      podGroup:
        name: All
        topology: {preferred: rack}
        subGroups: [{componentName: widget}, {componentName: worker}]
`)
	require.Equal(t, []v1alpha1.GangGroup{{Name: "all", Members: []string{"widget", "worker"}}}, r.Definition.Spec.Gang.Groups)
	require.Equal(t, []wantIssue{
		{NotConverted, "spec.optimizationInstructions.gangScheduling.podGroup.topology"},
		{SemanticChange, "spec.optimizationInstructions.gangScheduling.podGroup.subGroups"},
		{SemanticChange, "spec.optimizationInstructions.gangScheduling.podGroup"},
	}, issueKeys(r.Issues))
}
