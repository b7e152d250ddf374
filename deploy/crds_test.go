// Package deploy_test checks the shipped manifests: the generated CRDs are valid for the API
// server (including their CEL validation rules and cost budget) and the rules reject what
// they promise to reject (this file); workmap-scheduler's RBAC allows what it needs and nothing
// else (rbac_test.go) and is enough to run it (scheduler_test.go); the kustomization renders and
// the API server accepts it (kustomize_test.go); the Helm chart agrees with it (helm_test.go).
package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

func loadCRD(t *testing.T, path string) (*apiextensionsv1.CustomResourceDefinition, *apiextensions.CustomResourceDefinition) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var v1 apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.UnmarshalStrict(data, &v1))
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1)
	var internal apiextensions.CustomResourceDefinition
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &internal, nil))
	return &v1, &internal
}

// TestCRDsAreValid: the API server would accept every shipped CRD.
func TestCRDsAreValid(t *testing.T) {
	tests := map[string]struct {
		file       string
		scope      apiextensions.ResourceScope
		shortNames []string
	}{
		"WorkloadDefinition": {file: "crds/workmap.dev_workloaddefinitions.yaml", scope: apiextensions.ClusterScoped, shortNames: []string{"wd"}},
		"PodGroup":           {file: "crds/scheduling.x-k8s.io_podgroups.yaml", scope: apiextensions.NamespaceScoped, shortNames: []string{"pg", "pgs"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, internal := loadCRD(t, tc.file)
			errs := validation.ValidateCustomResourceDefinition(context.Background(), internal)
			require.Empty(t, errs, "the API server would reject the CRD")
			require.Equal(t, tc.scope, internal.Spec.Scope)
			require.Equal(t, tc.shortNames, internal.Spec.Names.ShortNames)
		})
	}
	files, err := filepath.Glob("crds/*.yaml")
	require.NoError(t, err)
	require.Len(t, files, len(tests), "every shipped CRD is checked")
}

// TestWorkloadDefinitionCRDRules runs the CRD's x-kubernetes-validations the way the API
// server does on create.
func TestWorkloadDefinitionCRDRules(t *testing.T) {
	v1, _ := loadCRD(t, "crds/workmap.dev_workloaddefinitions.yaml")
	var props apiextensions.JSONSchemaProps
	require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1.Spec.Versions[0].Schema.OpenAPIV3Schema, &props, nil))
	s, err := structuralschema.NewStructural(&props)
	require.NoError(t, err)
	validator := cel.NewValidator(s, true, celconfig.PerCallLimit)
	require.NotNil(t, validator)

	const good = `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: widgets.example.com}
spec:
  workload: {group: example.com, kind: Widget, versions: [v1]}
  roles:
  - {name: main, podTemplate: spec.template}
  gang:
    groups:
    - {name: all, members: [main]}
`
	tests := map[string]struct {
		edit    func(spec map[string]any)
		wantErr string
	}{
		"valid definition": {edit: func(map[string]any) {}},
		"two pod sources in one role": {
			edit:    func(spec map[string]any) { role(spec)["podSpec"] = "spec.template.spec" },
			wantErr: "exactly one of podTemplate, podSpec and podFields",
		},
		"no pod source": {
			edit:    func(spec map[string]any) { delete(role(spec), "podTemplate") },
			wantErr: "exactly one of podTemplate, podSpec and podFields",
		},
		"gang member that is not a role": {
			edit: func(spec map[string]any) {
				group(spec)["members"] = []any{"nope"}
			},
			wantErr: "every gang member must name a role",
		},
		"smaller parts inside parts of scope instance": {
			edit: func(spec map[string]any) {
				group(spec)["topology"] = map[string]any{"nested": map[string]any{
					"scope": "instance", "required": "'block'", "nested": map[string]any{"scope": "instanceReplica", "required": "'rack'"},
				}}
			},
		},
		"smaller parts inside parts of scope instanceReplica": {
			edit: func(spec map[string]any) {
				group(spec)["topology"] = map[string]any{"nested": map[string]any{
					"scope": "instanceReplica", "required": "'block'", "nested": map[string]any{"scope": "instanceReplica", "required": "'rack'"},
				}}
			},
			wantErr: "parts of scope instanceReplica have no smaller parts",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var obj map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(good), &obj))
			tc.edit(obj["spec"].(map[string]any))
			errs, _ := validator.Validate(context.Background(), nil, s, obj, nil, celconfig.RuntimeCELCostBudget)
			if tc.wantErr == "" {
				require.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			require.Contains(t, errs.ToAggregate().Error(), tc.wantErr)
		})
	}
}

func group(spec map[string]any) map[string]any {
	return spec["gang"].(map[string]any)["groups"].([]any)[0].(map[string]any)
}

func role(spec map[string]any) map[string]any {
	return spec["roles"].([]any)[0].(map[string]any)
}
