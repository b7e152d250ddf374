package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// JobManagedBy is the spec.managedBy of the bench's Jobs: the Job controller leaves them
// alone and the bench creates their pods itself, at a rate it controls, exactly as the Job
// controller would shape them.
const JobManagedBy = "workmap.dev/bench"

// Gangs are Count batch/v1 Jobs of PodsPerGang pods each (parallelism = completions), a
// native gang of PodsPerGang for workmap. Each pod asks for GPUsPerPod GPUs.
type Gangs struct {
	Namespace     string
	Count         int
	PodsPerGang   int
	SchedulerName string
	GPUsPerPod    int64
	// Bare makes the same number of pods without any owner or gang: plain Pods, no Job, no
	// workmap.dev/min-member annotation.
	Bare bool
	// PodGroups, when set, is the client through which each gang gets a
	// scheduling.x-k8s.io/v1alpha1 PodGroup named after its Job (minMember PodsPerGang)
	// before its pods, which carry the PodGroup's label from creation (as scheduler-plugins'
	// Coscheduling expects).
	PodGroups dynamic.Interface
}

// PodGroupResource is the PodGroup kind of scheduler-plugins (and workmap).
var PodGroupResource = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

// Pods is the number of pods of all gangs.
func (g Gangs) Pods() int { return g.Count * g.PodsPerGang }

// Job returns the Job of gang i.
func (g Gangs) Job(i int) *batchv1.Job {
	n := int32(g.PodsPerGang)
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	if g.GPUsPerPod > 0 {
		res.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(g.GPUsPerPod, resource.DecimalSI)}
	}
	name := fmt.Sprintf("gang-%d", i)
	var labels map[string]string
	if g.PodGroups != nil {
		labels = map[string]string{v1alpha1.PodGroupLabel: name}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.Namespace},
		Spec: batchv1.JobSpec{
			Parallelism: &n, Completions: &n, BackoffLimit: ptr.To[int32](0),
			ManagedBy: ptr.To(JobManagedBy),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				SchedulerName: g.SchedulerName,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "trainer", Image: "registry.example.com/trainer:1.0", Resources: res}},
			}},
		},
	}
}

// PodOf is a pod of a created Job as the Job controller makes it: the template's labels and
// spec, generateName "<job>-", the Job as controller owner (the job-tracking finalizer is left
// out: nobody would remove it).
func PodOf(job *batchv1.Job) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: job.Name + "-",
			Namespace:    job.Namespace,
			Labels:       t.Labels,
			Annotations:  t.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: t.Spec,
	}
}

// Create creates every gang, workers at a time: each Job, then its pods.
func (g Gangs) Create(ctx context.Context, kube kubernetes.Interface, workers int) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for i := range next {
				if err := g.createGang(ctx, kube, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range g.Count {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// BarePod is a pod of chunk i of bare pods: the pod gang i's Job would make, without owner.
func (g Gangs) BarePod(i int) *corev1.Pod {
	job := g.Job(i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: fmt.Sprintf("pod-%d-", i), Namespace: g.Namespace},
		Spec:       job.Spec.Template.Spec,
	}
}

// PodGroup is the PodGroup of gang i (with PodGroups set).
func (g Gangs) PodGroup(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PodGroupResource.GroupVersion().String(),
		"kind":       "PodGroup",
		"metadata":   map[string]any{"name": fmt.Sprintf("gang-%d", i), "namespace": g.Namespace},
		"spec":       map[string]any{"minMember": int64(g.PodsPerGang)},
	}}
}

func (g Gangs) createGang(ctx context.Context, kube kubernetes.Interface, i int) error {
	if g.Bare {
		pod := g.BarePod(i)
		for range g.PodsPerGang {
			if _, err := kube.CoreV1().Pods(g.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating a bare pod: %w", err)
			}
		}
		return nil
	}
	if g.PodGroups != nil {
		if _, err := g.PodGroups.Resource(PodGroupResource).Namespace(g.Namespace).Create(ctx, g.PodGroup(i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating PodGroup %d: %w", i, err)
		}
	}
	job, err := kube.BatchV1().Jobs(g.Namespace).Create(ctx, g.Job(i), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Job %d: %w", i, err)
	}
	pod := PodOf(job)
	for range g.PodsPerGang {
		if _, err := kube.CoreV1().Pods(g.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating a pod of Job %s: %w", job.Name, err)
		}
	}
	return nil
}

// CreateNamespace creates a namespace.
func CreateNamespace(ctx context.Context, kube kubernetes.Interface, name string, labels map[string]string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	return err
}

// DeleteGangs deletes a namespace's pods at once (grace period 0, so kwok's nodes are free
// for the next run) and waits until they are gone, then deletes its Jobs and the namespace,
// and waits until the namespace is gone (its remaining objects, such as PodGroups and
// events, deleted), so that none of this work falls into the next run's window.
func DeleteGangs(ctx context.Context, kube kubernetes.Interface, ns string) error {
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	for {
		// With many pods the API server may give up on the request before it has deleted them
		// all (a timeout, or a reset stream): the loop asks again until none is left, and
		// fails only when ctx ends with pods left, which would hold the next run's nodes.
		deleteErr := kube.CoreV1().Pods(ns).DeleteCollection(ctx, now, metav1.ListOptions{})
		left, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil && len(left.Items) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deleting the pods of %s: some are left (%w; last deletion: %v)", ns, context.Cause(ctx), errors.Join(deleteErr, err))
		case <-time.After(200 * time.Millisecond):
		}
	}
	bg := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	if err := kube.BatchV1().Jobs(ns).DeleteCollection(ctx, bg, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the Jobs of %s: %w", ns, err)
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s still terminating: %w", ns, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
