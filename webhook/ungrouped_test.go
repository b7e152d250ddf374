package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/webhook"
)

// recorded is one event a recorder was given.
type recorded struct {
	Pod, Type, Reason, Note string
}

// eventRecorder records the events given to it, on their pods, in a channel.
type eventRecorder chan recorded

func (r eventRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	name := fmt.Sprintf("%T", regarding)
	if pod, ok := regarding.(*corev1.Pod); ok {
		name = pod.Namespace + "/" + pod.Name
	}
	r <- recorded{Pod: name, Type: eventtype, Reason: reason, Note: fmt.Sprintf(note, args...)}
}

// existingPod is a pod of a Job as it exists in the cluster: named, with a UID.
func existingPod(name, jobName, scheduler string, change func(*corev1.Pod)) *corev1.Pod {
	pod := jobPod(jobName, scheduler, nil)
	pod.Name, pod.GenerateName, pod.UID = name, "", types.UID("uid-pod-"+name)
	if change != nil {
		change(pod)
	}
	return pod
}

// ungroupedTrainPod is the event on a pod of the Job train created without its gang.
func ungroupedTrainPod(pod string) recorded {
	return recorded{Pod: pod, Type: corev1.EventTypeWarning, Reason: webhook.ReasonCreatedWithoutGang,
		Note: "created without its gang (native PodGroup train-job): workmap-webhook did not group it when it was created " +
			"(the webhook was down or unreachable, or its decision failed or timed out; with failurePolicy Ignore the API server " +
			"admits pods unchanged), so it is scheduled without a gang. Recreate the workload's pods to gang them"}
}

func TestUngroupedReporter(t *testing.T) {
	grouped := func(p *corev1.Pod) {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train-job")}
	}
	tests := map[string]struct {
		// pods are there when the reporter starts.
		pods []*corev1.Pod
		// then changes the cluster while it runs.
		then func(ctx context.Context, t *testing.T, kube kubernetes.Interface)
		want []recorded
	}{
		"a pod in its native PodGroup: none": {
			pods: []*corev1.Pod{existingPod("grouped", "train", "", grouped)}},
		"a pod of a gang created without its PodGroup: one event": {
			pods: []*corev1.Pod{existingPod("ungrouped", "train", "", nil)},
			want: []recorded{ungroupedTrainPod("ml/ungrouped")}},
		"a pod of the default scheduler by name: one event": {
			pods: []*corev1.Pod{existingPod("ungrouped", "train", corev1.DefaultSchedulerName, nil)},
			want: []recorded{ungroupedTrainPod("ml/ungrouped")}},
		"a pod created while the reporter runs: one event": {
			then: func(ctx context.Context, t *testing.T, kube kubernetes.Interface) {
				_, err := kube.CoreV1().Pods("ml").Create(ctx, existingPod("later", "train", "", nil), metav1.CreateOptions{})
				require.NoError(t, err)
			},
			want: []recorded{ungroupedTrainPod("ml/later")}},
		"a pod reported is not reported again when it changes": {
			pods: []*corev1.Pod{existingPod("ungrouped", "train", "", nil)},
			then: func(ctx context.Context, t *testing.T, kube kubernetes.Interface) {
				pod := existingPod("ungrouped", "train", "", func(p *corev1.Pod) {
					p.Labels = map[string]string{"changed": "yes"}
					p.Spec.NodeName = "node-0"
					p.Status.Phase = corev1.PodRunning
				})
				_, err := kube.CoreV1().Pods("ml").Update(ctx, pod, metav1.UpdateOptions{})
				require.NoError(t, err)
			},
			want: []recorded{ungroupedTrainPod("ml/ungrouped")}},
		"a terminal pod: none": {
			pods: []*corev1.Pod{
				existingPod("succeeded", "train", "", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				existingPod("failed", "train", "", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
			}},
		"a pod being deleted: none": {
			pods: []*corev1.Pod{existingPod("deleting", "train", "", func(p *corev1.Pod) {
				p.DeletionTimestamp, p.Finalizers = ptr.To(metav1.Now()), []string{"example.com/hold"}
			})}},
		"a pod of another scheduler: none": {
			pods: []*corev1.Pod{existingPod("volcano", "train", "volcano", nil)}},
		"a pod of workmap-scheduler (its grouper labels it): none": {
			pods: []*corev1.Pod{existingPod("workmap", "train", "workmap-scheduler", nil)}},
		"a pod of a workload without a gang: none": {
			pods: []*corev1.Pod{existingPod("single", "single", "", nil)}},
		"a pod that names its pod group: none": {
			pods: []*corev1.Pod{existingPod("operators", "train", "", func(p *corev1.Pod) {
				p.Labels = map[string]string{v1alpha1.PodGroupLabel: "operators"}
			})}},
		"a pod workmap skips: none": {
			pods: []*corev1.Pod{existingPod("skipped", "train", "", func(p *corev1.Pod) {
				p.Annotations = map[string]string{grouper.SkipAnnotation: "true"}
			})}},
		"a pod without an owner, even one that asks for a gang (never grouped at admission): none": {
			pods: []*corev1.Pod{existingPod("bare", "train", "", func(p *corev1.Pod) {
				p.OwnerReferences, p.Annotations = nil, map[string]string{definitions.AnnotationMinMember: "2"}
			})}},
		"a pod in a namespace the webhook is not called for: none": {
			pods: []*corev1.Pod{existingPod("system", "train", "", func(p *corev1.Pod) { p.Namespace = "kube-system" })}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			objs := make([]runtime.Object, 0, len(tc.pods))
			for _, p := range tc.pods {
				objs = append(objs, p)
			}
			kube := fake.NewClientset(objs...)
			m, _ := newMutator(t)
			events := make(eventRecorder, 10)
			r, err := webhook.NewUngroupedReporter(kube, m, events, []string{"kube-system"})
			require.NoError(t, err)
			go r.Run(ctx)
			require.Eventually(t, r.HasSynced, 10*time.Second, 10*time.Millisecond)

			got := reportedUntil(ctx, t, kube, events, "sentinel-start")
			if tc.then != nil {
				tc.then(ctx, t, kube)
				got = append(got, reportedUntil(ctx, t, kube, events, "sentinel-then")...)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// reportedUntil creates a pod of a gang without its PodGroup and returns the events recorded
// before its own: the reporter decides pods in the order it sees them, so those are the
// events of every change made before.
func reportedUntil(ctx context.Context, t *testing.T, kube kubernetes.Interface, events eventRecorder, sentinel string) []recorded {
	t.Helper()
	_, err := kube.CoreV1().Pods("ml").Create(ctx, existingPod(sentinel, "train", "", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	var got []recorded
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-events:
			if e == ungroupedTrainPod("ml/"+sentinel) {
				return got
			}
			got = append(got, e)
		case <-timeout:
			t.Fatalf("no event on pod %s within 10s; events before: %v", sentinel, got)
		}
	}
}

// unservedTrainPod is the event on a pod of the Job train on a cluster that serves no native
// PodGroups.
func unservedTrainPod(pod string) recorded {
	return recorded{Pod: pod, Type: corev1.EventTypeWarning, Reason: webhook.ReasonCreatedWithoutGang,
		Note: "created without its gang (train-job): the cluster serves no native PodGroups (scheduling.k8s.io v1beta1 or v1alpha2; " +
			"kube-apiserver serves them with the GenericWorkload feature gate and that version in --runtime-config), so " +
			"workmap-webhook could not group it and it is scheduled without a gang. Ask for workmap-scheduler (schedulerName) to " +
			"gang it, or leave this scheduler out of workmap-webhook's --native-schedulers"}
}

// TestUngroupedReporterWithoutNativePodGroups: on a cluster that serves no native PodGroups
// (kube-apiserver's GenericWorkload gate off, under which it would also drop a pod's
// spec.schedulingGroup), no gang is made at admission, and each pod of a native scheduler
// whose workload has a gang is told why, once.
func TestUngroupedReporterWithoutNativePodGroups(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, _ := newMutator(t)
	m.Native = nil
	mutation, err := m.Mutate(ctx, jobPod("train", "", nil), false)
	require.NoError(t, err)
	require.Equal(t, webhook.Mutation{Outcome: webhook.OutcomeSkipped, Detail: "the cluster serves no native PodGroups"}, mutation,
		"nothing written at admission")

	kube := fake.NewClientset(
		existingPod("ungrouped", "train", "", nil),
		existingPod("single", "single", "", nil),
		existingPod("workmap", "train", "workmap-scheduler", nil),
		existingPod("volcano", "train", "volcano", nil),
	)
	events := make(eventRecorder, 10)
	r, err := webhook.NewUngroupedReporter(kube, m, events, []string{"kube-system"})
	require.NoError(t, err)
	go r.Run(ctx)
	require.Eventually(t, r.HasSynced, 10*time.Second, 10*time.Millisecond)
	_, err = kube.CoreV1().Pods("ml").Create(ctx, existingPod("sentinel", "train", "", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	var got []recorded
	for e := range events {
		got = append(got, e)
		if e.Pod == "ml/sentinel" {
			break
		}
	}
	want := []recorded{unservedTrainPod("ml/ungrouped"), unservedTrainPod("ml/sentinel")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
