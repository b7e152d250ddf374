package catalog

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// TestGeneratedFileIsTheSources: binaries embed catalog.json, so every other test of the
// catalog runs on it; it must be what the YAML files in this folder give, field for field.
func TestGeneratedFileIsTheSources(t *testing.T) {
	sources, err := FromSources(os.DirFS("."))
	require.NoError(t, err)
	require.NotEmpty(t, sources.Frameworks)
	require.NotEmpty(t, sources.Kubernetes)

	want, err := sources.JSON()
	require.NoError(t, err)
	require.Equal(t, string(want), string(generated), "%s is not what the YAML files give: run `make generate`", GeneratedFile)

	got, err := embedded()
	require.NoError(t, err)
	if diff := cmp.Diff(sources, got); diff != "" {
		t.Errorf("the definitions decoded from %s differ from the YAML files' (-yaml +json):\n%s", GeneratedFile, diff)
	}
}

// TestEmbeddedCopies: each call decodes the catalog anew, so a caller that changes what it
// got changes nothing another caller gets.
func TestEmbeddedCopies(t *testing.T) {
	first, err := Raw()
	require.NoError(t, err)
	first[0].Spec.Workload.Kind = "Changed"
	again, err := Raw()
	require.NoError(t, err)
	require.NotEqual(t, "Changed", again[0].Spec.Workload.Kind)
}
