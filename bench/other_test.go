package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProfileName(t *testing.T) {
	const two = "kind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: first\n- schedulerName: second\n"
	for _, tc := range []struct {
		name, config, want, got, err string
	}{
		{name: "first profile by default", config: two, got: "first"},
		{name: "a named profile", config: two, want: "second", got: "second"},
		{name: "unknown profile", config: two, want: "third", err: `no profile "third"`},
		{name: "no profile", config: "kind: KubeSchedulerConfiguration\n", err: "no profile with a schedulerName"},
		{name: "A's name", config: "kind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n", err: "is A's or B's"},
		{name: "B's name", config: "kind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: workmap-scheduler\n", err: "is A's or B's"},
		{name: "not a scheduler configuration", config: "kind: ConfigMap\n", err: "want KubeSchedulerConfiguration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := profileName([]byte(tc.config), tc.want)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.got, got)
		})
	}
}

func TestLoadOtherScheduler(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "scheduler")
	require.NoError(t, os.WriteFile(binary, []byte("#!/bin/sh\n"), 0o755))
	o, err := LoadOtherScheduler(binary, "testdata/other-kube-scheduler.yaml", "", true)
	require.NoError(t, err)
	assert.Equal(t, "other-scheduler", o.Name)
	assert.Equal(t, binary, o.Binary)
	assert.True(t, o.PodGroups)
	assert.Contains(t, string(o.Config), "schedulerName: other-scheduler")

	_, err = LoadOtherScheduler(binary, "", "", false)
	require.ErrorContains(t, err, "-other-scheduler-config")
	_, err = LoadOtherScheduler(filepath.Join(t.TempDir(), "missing"), "testdata/other-kube-scheduler.yaml", "", false)
	require.Error(t, err)
}
