package grouper

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHashAnnotations: an owner's annotations hash alike whatever their order, and differently
// once a value changes, a key is added or one moves to another key.
func TestHashAnnotations(t *testing.T) {
	base := map[string]string{"workmap.dev/topology-required": "rack", "team": "ml"}
	same := map[string]string{"team": "ml", "workmap.dev/topology-required": "rack"}
	require.Equal(t, hashAnnotations(base), hashAnnotations(same))
	for name, other := range map[string]map[string]string{
		"a value changed": {"workmap.dev/topology-required": "block", "team": "ml"},
		"a key added":     {"workmap.dev/topology-required": "rack", "team": "ml", "x": ""},
		"a value moved":   {"workmap.dev/topology-required": "ml", "team": "rack"},
		"none":            nil,
	} {
		require.NotEqual(t, hashAnnotations(base), hashAnnotations(other), name)
	}
}
