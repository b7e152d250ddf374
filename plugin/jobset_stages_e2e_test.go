package plugin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
)

// stagedJobSet is built the way Kubeflow Trainer builds its JobSets: an initializer, a
// launcher created once the initializer is Complete, and 4 workers (4 GPUs each) created once
// the launcher is Ready.
const stagedJobSet = `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: staged, namespace: default}
spec:
  replicatedJobs:
  - name: initializer
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            schedulerName: workmap-scheduler
            containers: [{name: init, image: registry.example.com/init:1.0}]
  - name: launcher
    dependsOn: [{name: initializer, status: Complete}]
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            schedulerName: workmap-scheduler
            containers: [{name: launcher, image: registry.example.com/launcher:1.0}]
  - name: worker
    dependsOn: [{name: launcher, status: Ready}]
    template:
      spec:
        parallelism: 4
        completions: 4
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            schedulerName: workmap-scheduler
            containers:
            - name: worker
              image: registry.example.com/trainer:1.0
              resources: {limits: {nvidia.com/gpu: 4}}
`

// TestGangSchedulingJobSetDependsOn: a JobSet whose Jobs are created in stages (dependsOn)
// runs to completion under workmap-scheduler. One gang across the stages could never fill: its
// first stage would wait at Permit forever. Each replicatedJob is its own gang instead.
func TestGangSchedulingJobSetDependsOn(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true})
	c.StartWorkmapScheduler(testSchedulerOptions)
	g := newGangs(t, c)
	ctx := context.Background()

	docs, err := manifest.Read([]byte(stagedJobSet), "staged-jobset.yaml")
	require.NoError(t, err)
	_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, docs[0].Object, metav1.CreateOptions{})
	require.NoError(t, err)
	stage := func(name string) string {
		return jobSetPods("staged") + ",jobset.sigs.k8s.io/replicatedjob-name=" + name
	}

	// The initializer is one pod: no gang. It binds and runs alone; the next stages do not
	// exist yet.
	g.WaitBound(stage("initializer"), 1, 60*time.Second)
	require.Empty(t, g.Pods(stage("launcher")), "the launcher waits for the initializer to complete")
	g.Finish(stage("initializer"))

	// The launcher is created once the initializer completed, and binds alone too.
	g.WaitBound(stage("launcher"), 1, 60*time.Second)

	// Once the launcher is Ready, the workers are created: one gang of 4 (16 GPUs on two
	// 8-GPU nodes), bound whole.
	g.WaitCreated(stage("worker"), 4)
	g.WaitBound(stage("worker"), 4, 60*time.Second)
	pg, err := g.PodGroup("staged-job-worker")
	require.NoError(t, err, "the workers' gang")
	require.EqualValues(t, 4, pg.Spec.MinMember)
	for _, name := range []string{"staged-all", "staged-job-initializer", "staged-job-launcher"} {
		_, err := g.PodGroup(name)
		require.Error(t, err, "no PodGroup %s: one gang across stages would never fill, a stage of one pod needs none", name)
	}

	g.Finish(stage("worker"))
	g.Finish(stage("launcher"))
	require.Eventually(t, func() bool {
		js, err := c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Get(ctx, "staged", metav1.GetOptions{})
		if err != nil {
			return false
		}
		conditions, _, _ := unstructured.NestedSlice(js.Object, "status", "conditions")
		for _, cond := range conditions {
			m, _ := cond.(map[string]any)
			if m["type"] == "Completed" && m["status"] == string(corev1.ConditionTrue) {
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "the JobSet runs to completion")
}
