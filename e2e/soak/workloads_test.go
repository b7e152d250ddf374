//go:build soak

package soak

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/lws"
)

// namespace holds every workload of the soak.
const namespace = "soak"

// Labels on every pod of the soak's workloads.
const (
	// workloadLabel names the pod's workload.
	workloadLabel = "soak.workmap.dev/workload"
	// lwsGroupLabel is the LeaderWorkerSet group a pod belongs to (its gang).
	lwsGroupLabel = "leaderworkerset.sigs.k8s.io/group-index"
	// holdGate keeps one member of a Permit victim from being scheduled.
	holdGate = "soak.workmap.dev/hold"
)

// gpusPerNode and gpusPerPod: every pod takes a whole node, so room is counted in nodes.
const (
	gpusPerNode = 8
	gpusPerPod  = 8
)

type kind string

const (
	kindJob    kind = "Job"
	kindJobSet kind = "JobSet"
	kindLWS    kind = "LeaderWorkerSet"
)

// workload is one submitted workload and what the monitor learns of it.
type workload struct {
	kind kind
	name string
	uid  types.UID
	// gangs by key ("" for the whole workload; a LeaderWorkerSet's group index) and minMember.
	gangs   map[string]int
	pods    int
	created time.Time
	// victim workloads have one member held by a scheduling gate and are deleted while the
	// others wait at Permit.
	victim bool
	// failPod: once whole, one of its pods is failed (its Job makes a new one).
	failPod  bool
	failed   bool
	lifetime time.Duration
	// deleted is when it was deleted (zero while live).
	deleted time.Time
	// wholeAt is when every gang was first whole.
	wholeAt time.Time
}

func podTemplate(name string, gated bool) corev1.PodTemplateSpec {
	spec := corev1.PodSpec{
		SchedulerName: harness.SchedulerName, RestartPolicy: corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpusPerPod, resource.DecimalSI)},
		}}},
	}
	if gated {
		spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{workloadLabel: name}}, Spec: spec}
}

// createJob creates a Job of n pods, one gang (none for a single pod).
func createJob(ctx context.Context, c *harness.Cluster, w *workload, gated bool) error {
	n := int32(w.pods)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: namespace},
		Spec: batchv1.JobSpec{
			Parallelism: &n, Completions: &n, BackoffLimit: ptr.To[int32](20),
			Template: podTemplate(w.name, gated),
		},
	}
	created, err := c.Kube.BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
	if err == nil {
		w.uid = created.UID
	}
	return err
}

// createJobSet creates a JobSet of one replicated Job: replicas Jobs of parallelism pods, one
// gang of all of them.
func createJobSet(ctx context.Context, c *harness.Cluster, w *workload, replicas int) error {
	parallelism := int64(w.pods / replicas)
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(podTemplate(w.name, false)))
	if err != nil {
		return err
	}
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": w.name, "namespace": namespace},
		"spec": map[string]any{
			"failurePolicy": map[string]any{"maxRestarts": int64(5)},
			"replicatedJobs": []any{map[string]any{
				"name": "w", "replicas": int64(replicas),
				"template": map[string]any{"spec": map[string]any{
					"parallelism": parallelism, "completions": parallelism, "backoffLimit": int64(20),
					"template": tmpl,
				}},
			}},
		},
	}}
	created, err := c.Dynamic.Resource(harness.JobSetResource).Namespace(namespace).Create(ctx, js, metav1.CreateOptions{})
	if err == nil {
		w.uid = created.GetUID()
	}
	return err
}

// createLWS creates a LeaderWorkerSet of replicas groups of size pods: one gang per group.
func createLWS(ctx context.Context, c *harness.Cluster, w *workload, replicas, size int) error {
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(podTemplate(w.name, false)))
	if err != nil {
		return err
	}
	// A LeaderWorkerSet's pods restart in place: no restartPolicy Never.
	unstructured.RemoveNestedField(tmpl, "spec", "restartPolicy")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": w.name, "namespace": namespace},
		"spec": map[string]any{
			"replicas":             int64(replicas),
			"leaderWorkerTemplate": map[string]any{"size": int64(size), "workerTemplate": tmpl},
		},
	}}
	created, err := c.Dynamic.Resource(lws.Resource).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err == nil {
		w.uid = created.GetUID()
	}
	return err
}

// deleteWorkload deletes a workload; the garbage collector deletes its pods and PodGroups.
func deleteWorkload(ctx context.Context, c *harness.Cluster, w *workload) error {
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	switch w.kind {
	case kindJob:
		return c.Kube.BatchV1().Jobs(namespace).Delete(ctx, w.name, opts)
	case kindJobSet:
		return c.Dynamic.Resource(harness.JobSetResource).Namespace(namespace).Delete(ctx, w.name, opts)
	case kindLWS:
		return c.Dynamic.Resource(lws.Resource).Namespace(namespace).Delete(ctx, w.name, opts)
	}
	return fmt.Errorf("unknown kind %s", w.kind)
}

// gangID names a gang of w across the soak: its workload and its key within it.
func gangID(w *workload, key string) string { return w.name + "/" + key }

// gangKey is the gang of a pod within its workload.
func gangKey(w *workload, p *corev1.Pod) string {
	if w.kind == kindLWS {
		return p.Labels[lwsGroupLabel]
	}
	return ""
}
