package manifest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSkippedLine(t *testing.T) {
	docs, err := Read([]byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: code}
---
apiVersion: serving.knative.dev/v1
kind: Route
metadata: {name: hello}
---
apiVersion: v1
kind: Pod
metadata: {generateName: job-}
`), "f.yaml")
	require.NoError(t, err)
	tests := map[string]struct {
		docs []Document
		want string
	}{
		"none": {docs: nil, want: ""},
		"one":  {docs: docs[:1], want: "skipped 1 document with no workload definition: ConfigMap/code (f.yaml:1)"},
		"several, kinds with their group, generated names": {docs: docs, want: "skipped 3 documents with no workload definition: ConfigMap/code (f.yaml:1), Route.serving.knative.dev/hello (f.yaml:5), Pod/job-* (f.yaml:9)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, SkippedLine(tc.docs))
		})
	}
}
