package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// CustomKind is a namespaced custom resource kind whose objects hold anything (its schema
// preserves unknown fields): a stand-in for a framework's CRD in tests.
type CustomKind struct {
	Group, Version, Kind, Plural string
}

// customKindCRD is the CustomResourceDefinition of a CustomKind.
func customKindCRD(k CustomKind) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[4]s.%[1]s}
spec:
  group: %[1]s
  names: {kind: %[3]s, plural: %[4]s, singular: %[5]s, listKind: %[3]sList}
  scope: Namespaced
  versions:
  - name: %[2]s
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, k.Group, k.Version, k.Kind, k.Plural, strings.ToLower(k.Kind))
}

// writeCustomKinds writes the CRDs of kinds into one file of the cluster's folder.
func (c *Cluster) writeCustomKinds(kinds []CustomKind) string {
	docs := make([]string, len(kinds))
	for i, k := range kinds {
		docs[i] = customKindCRD(k)
	}
	path := filepath.Join(c.Dir, "custom-kinds.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// InstallCustomKind creates a CustomKind's CRD in the running cluster and waits until it is
// established (served), as a user applying a CRD would.
func (c *Cluster) InstallCustomKind(ctx context.Context, k CustomKind) {
	c.t.Helper()
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(customKindCRD(k)), &crd.Object); err != nil {
		c.t.Fatal(err)
	}
	crds := c.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating the CRD of %s: %v", k.Kind, err)
	}
	err := poll(ctx, 100*time.Millisecond, func() (bool, error) {
		got, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conditions {
			if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Fatalf("the CRD of %s is not established: %v", k.Kind, err)
	}
}
