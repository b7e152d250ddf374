package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
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
}

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
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gang-%d", i), Namespace: g.Namespace},
		Spec: batchv1.JobSpec{
			Parallelism: &n, Completions: &n, BackoffLimit: ptr.To[int32](0),
			ManagedBy: ptr.To(JobManagedBy),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
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

func (g Gangs) createGang(ctx context.Context, kube kubernetes.Interface, i int) error {
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
func CreateNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// DeleteGangs deletes a namespace's pods at once (grace period 0, so kwok's nodes are free
// for the next run) and waits until they are gone, then deletes its Jobs and the namespace.
func DeleteGangs(ctx context.Context, kube kubernetes.Interface, ns string) error {
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	for {
		if err := kube.CoreV1().Pods(ns).DeleteCollection(ctx, now, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("deleting the pods of %s: %w", ns, err)
		}
		left, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(left.Items) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
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
	return nil
}
