package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
