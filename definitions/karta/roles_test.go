package karta

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

func TestFragmentedPodSpec(t *testing.T) {
	r := convertInline(t, "", `    childComponents:
    - name: component
      ownerRef: widget
      specDefinition:
        fragmentedPodSpecDefinition:
          labelsPath: '.spec.components[].labels'
          containersPath: '.spec.components[].podSpec.containers'
          resourcesPath: '.spec.components[].resources'
          resourceClaimsPath: '.spec.components[].podSpec.resourceClaims'
          schedulerNamePath: .spec.schedulerName
          priorityClassNamePath: '.spec.other[].priorityClassName'
          nodeAffinityPath: '.spec.components[].affinity'
      scaleDefinition: {replicasPath: '.spec.components[].replicas'}
      instanceIdPath: '.spec.components[].name'
`)
	role := r.Definition.Spec.Roles[1]
	assert.Equal(t, &v1alpha1.PodFields{
		Base:           "spec.components[*]",
		Labels:         "labels",
		Containers:     "podSpec.containers",
		Resources:      "resources",
		ResourceClaims: "podSpec.resourceClaims",
	}, role.PodFields)
	assert.Equal(t, "item.?replicas.orValue(1)", role.Replicas)
	assert.Equal(t, "item.?name.orValue(key)", role.InstanceName)
	const f = "spec.structureDefinition.childComponents[0].specDefinition.fragmentedPodSpecDefinition."
	assert.Equal(t, []wantIssue{
		{NotConverted, f + "nodeAffinityPath"},
		{NotConverted, f + "schedulerNamePath"},
		{NotConverted, f + "priorityClassNamePath"},
	}, issueKeys(r.Issues))

	d, err := definitions.Compile(r.Definition, definitions.CompileOptions{})
	require.NoError(t, err)
	w, err := d.ExpandWith(readObject(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  template: {spec: {containers: [{name: main}]}}
  components:
  - name: frontend
    replicas: 2
    labels: {app: frontend}
    resources: {limits: {nvidia.com/gpu: 1}}
  - name: backend
    podSpec:
      containers: [{name: db, resources: {requests: {cpu: "1"}}}]
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
`), nil, definitions.ExpandOptions{Claims: definitions.ClaimsIn([]*unstructured.Unstructured{readObject(t, `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}}
`)}, "")})
	require.NoError(t, err)
	require.Empty(t, w.Warnings)
	var got []rolePods
	for _, r := range w.Roles {
		got = append(got, rolePods{r.Name, r.Pods, r.GPUs})
	}
	assert.Equal(t, []rolePods{{"widget", 1, 0}, {"frontend", 2, 2}, {"backend", 1, 1}}, got)
	assert.Equal(t, "frontend", w.Roles[1].Template.Labels["app"])
}

func TestRoleLocations(t *testing.T) {
	tests := map[string]struct {
		child      string
		wantRole   *v1alpha1.Role
		wantIssues []wantIssue
	}{
		"podSpecPath": {
			child:    "specDefinition: {podSpecPath: .spec.jobTemplate.spec}",
			wantRole: &v1alpha1.Role{Name: "c", PodSpec: "spec.jobTemplate.spec"},
		},
		"several spec definitions: the first is used": {
			child:      "specDefinition: {podTemplateSpecPath: .spec.a, podSpecPath: .spec.b}",
			wantRole:   &v1alpha1.Role{Name: "c", PodTemplate: "spec.a"},
			wantIssues: []wantIssue{{NotConverted, "spec.structureDefinition.childComponents[0].specDefinition.podSpecPath"}},
		},
		"a template path with a default: no role": {
			child:      "specDefinition: {podTemplateSpecPath: '.spec.a // .spec.b'}",
			wantIssues: []wantIssue{{NotConverted, "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath"}},
		},
		"a virtual component: no role, its counts reported": {
			child:      "scaleDefinition: {replicasPath: .spec.groups}",
			wantIssues: []wantIssue{{NotConverted, "spec.structureDefinition.childComponents[0].scaleDefinition"}},
		},
		"an instance id that does not follow the template's []": {
			child:      "specDefinition: {podTemplateSpecPath: '.spec.groups[].template'}\n      instanceIdPath: .metadata.name",
			wantRole:   &v1alpha1.Role{Name: "c", PodTemplate: "spec.groups[*].template"},
			wantIssues: []wantIssue{{NotConverted, "spec.structureDefinition.childComponents[0].instanceIdPath"}},
		},
		"instances over a map without an instance selector": {
			child:      "specDefinition: {podTemplateSpecPath: '.spec.groups[].template'}\n      podSelector: {componentTypeSelector: {keyPath: '.metadata.labels.role', value: c}}",
			wantRole:   &v1alpha1.Role{Name: "c", PodTemplate: "spec.groups[*].template"},
			wantIssues: []wantIssue{{NotConverted, "spec.structureDefinition.childComponents[0].podSelector.componentTypeSelector"}},
		},
		"a type selector and an instance selector": {
			child: "specDefinition: {podTemplateSpecPath: '.spec.groups[].template'}\n      instanceIdPath: '.spec.groups[].groupName'\n" +
				"      podSelector: {componentTypeSelector: {keyPath: '.metadata.labels.type'}, componentInstanceSelector: {idPath: '.metadata.labels.group'}}",
			wantRole: &v1alpha1.Role{
				Name: "c", PodTemplate: "spec.groups[*].template", InstanceName: "item.?groupName.orValue(key)",
				PodInstance: "pod.metadata.?labels.?type.hasValue() ? pod.metadata.?labels.?group.orValue('') : ''",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := convertInline(t, "", "    childComponents:\n    - name: c\n      ownerRef: widget\n      "+tc.child+"\n")
			roles := r.Definition.Spec.Roles
			require.Equal(t, "widget", roles[0].Name)
			if tc.wantRole == nil {
				assert.Len(t, roles, 1)
			} else {
				require.Len(t, roles, 2)
				assert.Equal(t, *tc.wantRole, roles[1])
			}
			assert.Equal(t, tc.wantIssues, issueKeys(r.Issues))
		})
	}
}
