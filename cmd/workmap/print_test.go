package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUseColor(t *testing.T) {
	var buf bytes.Buffer
	require.False(t, useColor(&buf), "not a terminal")
	t.Setenv("NO_COLOR", "")
	require.False(t, useColor(os.Stdout), "NO_COLOR set (even empty) disables colour")
}

func TestTreeWide(t *testing.T) {
	out, err := run(t, "tree", "-f", example, "-o", "wide")
	require.NoError(t, err)
	require.Contains(t, out, "per pod: cpu 2, memory 8Gi, nvidia.com/gpu 4")
	require.Contains(t, out, "spec.replicatedJobs[1].template.spec.template")
}
