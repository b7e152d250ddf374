package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/grouper"
)

// TestJobGangsAgree: for a batch Job of any shape, `groups -f` shows the gang the scheduler's
// built-in Job grouper forms, and `tree -f` (through the Job's definition) the same gang.
func TestJobGangsAgree(t *testing.T) {
	const template = `
  template:
    spec:
      restartPolicy: Never
      schedulerName: workmap-scheduler
      containers: [{name: c, image: trainer, resources: {limits: {nvidia.com/gpu: 1}}}]`
	job := func(annotations, spec string) string {
		return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train, namespace: ml" + annotations + "}\nspec:\n" + spec + template
	}
	tests := map[string]struct {
		manifest string
		wantMin  int32 // the gang's minMember (0: no gang)
		// suspended: the tree shows no pods and so no gang; the scheduler keeps the gang its
		// pods form once the Job is resumed.
		suspended bool
	}{
		"parallelism = completions":          {manifest: job("", "  parallelism: 4\n  completions: 4"), wantMin: 4},
		"parallelism below completions":      {manifest: job("", "  parallelism: 2\n  completions: 6"), wantMin: 2},
		"completions below parallelism":      {manifest: job("", "  parallelism: 8\n  completions: 3"), wantMin: 3},
		"a work queue (no completions)":      {manifest: job("", "  parallelism: 5"), wantMin: 5},
		"indexed":                            {manifest: job("", "  parallelism: 4\n  completions: 8\n  completionMode: Indexed"), wantMin: 4},
		"one pod at a time":                  {manifest: job("", "  completions: 4")},
		"suspended":                          {manifest: job("", "  suspend: true\n  parallelism: 4\n  completions: 4"), wantMin: 4, suspended: true},
		"min-member annotation":              {manifest: job(", annotations: {workmap.dev/min-member: '3'}", "  parallelism: 8"), wantMin: 3},
		"min-member annotation, suspended":   {manifest: job(", annotations: {workmap.dev/min-member: '3'}", "  suspend: true\n  parallelism: 8"), wantMin: 3},
		"a topology annotation":              {manifest: job(", annotations: {workmap.dev/topology-required: rack}", "  parallelism: 2"), wantMin: 2},
		"min-member annotation of one":       {manifest: job(", annotations: {workmap.dev/min-member: '1'}", "  parallelism: 8")},
		"parallelism 0: the Job runs no pod": {manifest: job("", "  parallelism: 0\n  completions: 4")},
	}
	dir := t.TempDir()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(dir, "job.yaml")
			require.NoError(t, os.WriteFile(f, []byte(tc.manifest), 0o644))
			t.Cleanup(func() { _ = os.Remove(f) })

			// What the scheduler forms for the Job's pods once it is created.
			docs, err := manifest.Read([]byte(tc.manifest), name)
			require.NoError(t, err)
			obj := docs[0].Object
			native, err := grouper.JobGrouper{}.Gangs(grouper.Owner{APIVersion: "batch/v1", Kind: "Job", Namespace: "ml", Name: "train", Annotations: obj.GetAnnotations()}, obj)
			require.NoError(t, err)
			formed := native.Groups()

			out, err := run(t, "groups", "-f", f, "-o", "json")
			require.NoError(t, err)
			var shown struct{ Items []gang }
			require.NoError(t, json.Unmarshal([]byte(out), &shown))
			out, err = run(t, "tree", "-f", f, "-o", "json")
			require.NoError(t, err)
			var tree definitions.Workload
			require.NoError(t, json.Unmarshal([]byte(out), &tree))

			if tc.wantMin == 0 {
				require.Empty(t, formed)
				require.Empty(t, shown.Items)
				require.Empty(t, tree.Groups)
				return
			}
			require.Len(t, formed, 1)
			require.Equal(t, tc.wantMin, formed[0].MinMember)
			require.Len(t, shown.Items, 1)
			g := shown.Items[0]
			require.Equal(t, "train-job", g.PodGroup)
			require.Equal(t, string(grouper.SourceNative), g.Source)
			require.Equal(t, formed[0].MinMember, g.MinMember)
			require.Equal(t, formed[0].Topology, g.Topology)
			if tc.suspended {
				require.Empty(t, tree.Groups, "a suspended Job runs no pods")
				return
			}
			require.Len(t, tree.Groups, 1)
			require.Equal(t, formed[0].MinMember, tree.Groups[0].MinMember)
			require.Equal(t, formed[0].Topology, tree.Groups[0].Topology)
			require.Equal(t, "job", tree.Groups[0].Name)
		})
	}
}
