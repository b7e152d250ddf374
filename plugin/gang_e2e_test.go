package plugin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// testSchedulerOptions keep failed gangs backed off briefly, so tests see retries quickly.
var testSchedulerOptions = harness.SchedulerOptions{PermitWaitingTimeSeconds: 10, PodGroupBackoffSeconds: 2}

// gangs reads PodGroups and the pods of gangs in the default namespace.
type gangs struct {
	*harness.Gangs
	t *testing.T
	c *harness.Cluster
}

func newGangs(t *testing.T, c *harness.Cluster) *gangs {
	return &gangs{Gangs: c.NewGangs(t, ""), t: t, c: c}
}

func (g *gangs) createJobSet(name string) {
	g.t.Helper()
	js, err := harness.ExampleJobSet(name, harness.SchedulerName, 0)
	require.NoError(g.t, err)
	_, err = g.c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(context.Background(), js, metav1.CreateOptions{})
	require.NoError(g.t, err)
}

func jobSetPods(name string) string { return "jobset.sigs.k8s.io/jobset-name=" + name }

// TestGangSchedulingJobSet: workmap-scheduler on the real control plane, with the real JobSet
// controller and kwok GPU nodes of 8 GPUs (each example pod asks for 4), against the API
// server of each release the tests run: workmap-scheduler is built on the oldest one's
// scheduler framework, which Kubernetes' version-skew policy allows one minor behind.
func TestGangSchedulingJobSet(t *testing.T) {
	for _, r := range harness.Releases {
		t.Run("Kubernetes "+r.Version, func(t *testing.T) { testGangSchedulingJobSet(t, r) })
	}
}

func testGangSchedulingJobSet(t *testing.T, release harness.Release) {
	c := harness.Start(t, harness.Options{JobSet: true, Release: release, Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}}})
	sched := c.StartWorkmapScheduler(testSchedulerOptions)
	g := newGangs(t, c)
	ctx := context.Background()

	t.Run("capacity for 2 of 3 pods: none bound while waiting, all 3 once a node is added", func(t *testing.T) {
		g.t = t
		g.createJobSet("leader-workers")
		g.WaitCreated(jobSetPods("leader-workers"), 3)
		g.NeverPartial(8*time.Second, map[string]int{jobSetPods("leader-workers"): 3})
		require.Zero(t, harness.Bound(g.Pods(jobSetPods("leader-workers"))), "0 pods bound while the gang cannot fit, not 2")
		g.WaitPhase("leader-workers-all", 0, v1alpha1.PodGroupPending)

		c.AddNode(ctx, harness.Node{Name: "gpu-node-1", GPUs: 8})
		g.WaitBound(jobSetPods("leader-workers"), 3, 60*time.Second)
		g.WaitPhase("leader-workers-all", 3, v1alpha1.PodGroupScheduled, v1alpha1.PodGroupRunning)
		pg, err := g.PodGroup("leader-workers-all")
		require.NoError(t, err)
		require.EqualValues(t, 3, pg.Spec.MinMember)
		require.Len(t, g.Pods(v1alpha1.PodGroupLabel+"=leader-workers-all"), 3,
			"kubectl get pods -l scheduling.x-k8s.io/pod-group=leader-workers-all finds the bound gang (the label came with the binding)")
	})

	t.Run("two gangs that fit alone but not together: one bound, one pending, then the other", func(t *testing.T) {
		g.t = t
		g.Finish(jobSetPods("leader-workers")) // frees the 16 GPUs
		g.createJobSet("gang-a")
		g.createJobSet("gang-b")
		sizes := map[string]int{jobSetPods("gang-a"): 3, jobSetPods("gang-b"): 3}
		g.WaitCreated(jobSetPods("gang-a"), 3)
		g.WaitCreated(jobSetPods("gang-b"), 3)
		var counts map[string]int
		require.Eventually(t, func() bool {
			counts = g.NeverPartial(time.Second, sizes)
			return counts[jobSetPods("gang-a")]+counts[jobSetPods("gang-b")] == 3
		}, 60*time.Second, 10*time.Millisecond, "one gang is bound")
		counts = g.NeverPartial(6*time.Second, sizes)
		require.Equal(t, 3, counts[jobSetPods("gang-a")]+counts[jobSetPods("gang-b")], "exactly one gang bound, the other fully pending: %v", counts)

		first, second := "gang-a", "gang-b"
		if counts[jobSetPods("gang-b")] == 3 {
			first, second = second, first
		}
		g.Finish(jobSetPods(first))
		g.WaitBound(jobSetPods(second), 3, 60*time.Second)
		g.WaitPhase(second+"-all", 3, v1alpha1.PodGroupScheduled, v1alpha1.PodGroupRunning)
		g.Finish(jobSetPods(second))
	})

	t.Run("an operator's PodGroup is respected", func(t *testing.T) {
		g.t = t
		pg := &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: "operators", Namespace: "default"},
			Spec:       v1alpha1.PodGroupSpec{MinMember: 3},
		}
		require.NoError(t, g.Client().Create(ctx, pg))
		for i := range 2 {
			createPod(t, c, fmt.Sprintf("operator-%d", i), harness.SchedulerName, map[string]string{v1alpha1.PodGroupLabel: "operators", "app": "operator"}, 1)
		}
		g.NeverPartial(4*time.Second, map[string]int{"app=operator": 2})
		require.Zero(t, harness.Bound(g.Pods("app=operator")), "2 of minMember 3: held")
		createPod(t, c, "operator-2", harness.SchedulerName, map[string]string{v1alpha1.PodGroupLabel: "operators", "app": "operator"}, 1)
		g.WaitBound("app=operator", 3, 30*time.Second)

		got, err := g.PodGroup("operators")
		require.NoError(t, err)
		require.Empty(t, got.Labels[grouper.ManagedByLabel], "workmap does not take the operator's PodGroup over")
		require.EqualValues(t, 3, got.Spec.MinMember)
		for _, p := range g.Pods("app=operator") {
			require.Equal(t, "operators", p.Labels[v1alpha1.PodGroupLabel])
			require.Empty(t, p.Annotations[grouper.GroupedAnnotation])
		}
		g.WaitPhase("operators", 3, v1alpha1.PodGroupScheduled, v1alpha1.PodGroupRunning)
		g.Finish("app=operator") // frees their GPUs, wherever they were placed
	})

	t.Run("another scheduler's PodGroup keeps the status set on it", func(t *testing.T) {
		g.t = t
		theirs := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "default"}, Spec: v1alpha1.PodGroupSpec{MinMember: 2}}
		require.NoError(t, g.Client().Create(ctx, theirs))
		theirs.Status = v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, Scheduled: 7, Running: 7, OccupiedBy: "someone-else"}
		require.NoError(t, g.Client().Status().Update(ctx, theirs))
		for i := range 2 {
			createPod(t, c, fmt.Sprintf("theirs-%d", i), corev1.DefaultSchedulerName, map[string]string{v1alpha1.PodGroupLabel: "theirs", "app": "theirs"}, 0)
		}
		g.WaitBound("app=theirs", 2, 30*time.Second)
		time.Sleep(3 * grouper.StatusDelay)
		got, err := g.PodGroup("theirs")
		require.NoError(t, err)
		require.Equal(t, theirs.Status, got.Status, "workmap-scheduler never writes a PodGroup whose pods another scheduler serves")
	})

	t.Run("pods for the default scheduler are never touched", func(t *testing.T) {
		g.t = t
		js, err := harness.ExampleJobSet("default-sched", corev1.DefaultSchedulerName, 0)
		require.NoError(t, err)
		_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
		require.NoError(t, err)
		g.WaitBound(jobSetPods("default-sched"), 3, 60*time.Second)
		time.Sleep(time.Second)
		for _, p := range g.Pods(jobSetPods("default-sched")) {
			require.Empty(t, p.Labels[v1alpha1.PodGroupLabel], "pod %s", p.Name)
			require.Empty(t, p.Annotations[grouper.GroupedAnnotation], "pod %s", p.Name)
		}
		_, err = g.PodGroup("default-sched-all")
		require.Error(t, err, "no PodGroup for the default scheduler's workload")
		events, err := c.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "source=" + harness.SchedulerName})
		require.NoError(t, err)
		for _, e := range events.Items {
			require.NotContains(t, e.InvolvedObject.Name, "default-sched", "workmap-scheduler reported on a pod it does not own")
		}
	})

	t.Run("a finished gang stays Finished, across a restart of the scheduler", func(t *testing.T) {
		g.t = t
		// Every pod of leader-workers, gang-a and gang-b succeeded above: minMember succeeded.
		g.WaitPhase("leader-workers-all", 3, v1alpha1.PodGroupFinished)
		sched.Stop()
		sched = c.StartWorkmapScheduler(testSchedulerOptions)
		// The restarted scheduler's informer never sees the terminated pods: its gang has no
		// pod, which must not make the gang Pending again.
		time.Sleep(5 * time.Second)
		for _, name := range []string{"leader-workers-all", "gang-a-all", "gang-b-all"} {
			pg, err := g.PodGroup(name)
			require.NoError(t, err)
			require.Equal(t, v1alpha1.PodGroupFinished, pg.Status.Phase, "PodGroup %s", name)
			require.EqualValues(t, 3, pg.Status.Succeeded, "PodGroup %s", name)
		}
	})
}

func createPod(t *testing.T, c *harness.Cluster, name, scheduler string, labels map[string]string, gpus int64, owner ...metav1.OwnerReference) {
	t.Helper()
	pod := gpuPod(name, gpus)
	pod.Labels, pod.OwnerReferences, pod.Spec.SchedulerName = labels, owner, scheduler
	_, err := c.Kube.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

// gpuPod is a pod in the default namespace whose one container asks for gpus GPUs.
func gpuPod(name string, gpus int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)},
			}}},
		},
	}
}

// trainerKind is a kind the catalog does not know.
var trainerKind = harness.CustomKind{Group: "example.com", Version: "v1", Kind: "Trainer", Plural: "trainers"}

const trainerDefinition = `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: trainers.example.com}
spec:
  workload: {group: example.com, kind: Trainer, versions: [v1]}
  roles:
  - {name: worker, podTemplate: spec.template, replicas: "self.spec.workers"}
  gang:
    groups: [{name: all, members: [worker]}]
`

var trainers = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "trainers"}

// runTrainerController is a tiny controller for the Trainer kind: it creates spec.workers
// pods (4 GPUs each, for workmap-scheduler) owned by each new Trainer, but for those with
// spec.manual.
func runTrainerController(t *testing.T, c *harness.Cluster) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informer := dynamicinformer.NewFilteredDynamicInformer(c.Dynamic, trainers, "default", 0, cache.Indexers{}, nil).Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		tr := obj.(*unstructured.Unstructured)
		if manual, _, _ := unstructured.NestedBool(tr.Object, "spec", "manual"); manual {
			return // the test makes this Trainer's pods itself
		}
		workers, _, _ := unstructured.NestedInt64(tr.Object, "spec", "workers")
		yes := true
		owner := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Trainer", Name: tr.GetName(), UID: tr.GetUID(), Controller: &yes}
		for i := range workers {
			createPod(t, c, fmt.Sprintf("%s-%d", tr.GetName(), i), harness.SchedulerName, map[string]string{"trainer": tr.GetName()}, 4, owner)
		}
	}})
	require.NoError(t, err)
	go informer.RunWithContext(ctx)
}

// TestGangSchedulingCustomKind: a kind the catalog does not know schedules pod by pod; once a
// WorkloadDefinition with gang hints is applied, a new workload of it is scheduled as a gang.
func TestGangSchedulingCustomKind(t *testing.T) {
	c := harness.Start(t, harness.Options{CustomKinds: []harness.CustomKind{trainerKind}, Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}}})
	c.StartWorkmapScheduler(testSchedulerOptions)
	runTrainerController(t, c)
	g := newGangs(t, c)
	ctx := context.Background()
	// Without a definition: 2 of the 3 pods fit and bind, one by one.
	createTrainer(t, c, "before", 3, false)
	g.WaitCreated("trainer=before", 3)
	require.Eventually(t, func() bool { return harness.Bound(g.Pods("trainer=before")) == 2 }, 60*time.Second, 100*time.Millisecond, "2 of 3 bound without a gang")
	time.Sleep(2 * time.Second)
	require.Equal(t, 2, harness.Bound(g.Pods("trainer=before")), "the third waits for room")
	_, err := g.PodGroup("before-all")
	require.Error(t, err, "no PodGroup without a definition")
	require.NoError(t, c.Dynamic.Resource(trainers).Namespace("default").Delete(ctx, "before", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return len(g.Pods("trainer=before")) == 0 }, 60*time.Second, 100*time.Millisecond, "the Trainer's pods are garbage-collected")

	// With a definition: the next Trainer is one gang of 3, which does not fit 8 GPUs.
	docs, err := manifest.Read([]byte(trainerDefinition), "trainer-definition.yaml")
	require.NoError(t, err)
	_, err = c.Dynamic.Resource(schema.GroupVersionResource{Group: "workmap.dev", Version: "v1alpha1", Resource: "workloaddefinitions"}).Create(ctx, docs[0].Object, metav1.CreateOptions{})
	require.NoError(t, err)
	time.Sleep(time.Second) // the grouper's watch delivers it
	createTrainer(t, c, "after", 3, false)
	g.WaitCreated("trainer=after", 3)
	require.Eventually(t, func() bool {
		pg, err := g.PodGroup("after-all")
		return err == nil && pg.Spec.MinMember == 3
	}, 30*time.Second, 100*time.Millisecond, "PodGroup after-all of 3")
	g.NeverPartial(6*time.Second, map[string]int{"trainer=after": 3})
	require.Zero(t, harness.Bound(g.Pods("trainer=after")), "none bound while the gang cannot fit")
	c.AddNode(ctx, harness.Node{Name: "gpu-node-1", GPUs: 8})
	g.WaitBound("trainer=after", 3, 60*time.Second)
}

// TestKindInstalledAfterStart: a CRD and its WorkloadDefinition applied while
// workmap-scheduler runs; the new kind's workloads are gang-scheduled at once (the REST mapping
// follows CRDs installed later).
func TestKindInstalledAfterStart(t *testing.T) {
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}}})
	c.StartWorkmapScheduler(testSchedulerOptions)
	g := newGangs(t, c)
	ctx := context.Background()
	c.InstallCustomKind(ctx, trainerKind)
	applyTrainerDefinition(t, c, "")
	runTrainerController(t, c)
	time.Sleep(time.Second) // the scheduler's watch delivers the definition

	createTrainer(t, c, "w1", 3, false)
	g.WaitCreated("trainer=w1", 3)
	require.Eventually(t, func() bool {
		pg, err := g.PodGroup("w1-all")
		return err == nil && pg.Spec.MinMember == 3
	}, 10*time.Second, 100*time.Millisecond, "PodGroup w1-all of 3 within seconds")
	g.NeverPartial(4*time.Second, map[string]int{"trainer=w1": 3})
	require.Zero(t, harness.Bound(g.Pods("trainer=w1")), "12 GPUs on 8: none bound, not 2 one by one")
	c.AddNode(ctx, harness.Node{Name: "gpu-node-1", GPUs: 8})
	g.WaitBound("trainer=w1", 3, 30*time.Second)
	events, err := c.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=NoGang"})
	require.NoError(t, err)
	require.Empty(t, events.Items, "no pod was scheduled without its gang")

	// A gang whose last pod never comes: its pods say why they wait (kubectl describe pod).
	createTrainerPods(t, c, "short", 3, []bool{false, false})
	require.Eventually(t, func() bool {
		// The reason may read differently for a moment while the pods arrive (the first pod
		// waits for two more); the event that stays says what the pod waits for now.
		events, err := c.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=WaitingForGang,involvedObject.name=short-0"})
		if err != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Message == "waiting for 1 more pod of PodGroup default/short-all (2 of minMember 3 created)" {
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "the held pod's event says what it waits for")
}

// createTrainer creates a Trainer of workers workers; with manual, runTrainerController leaves
// its pods to the test.
func createTrainer(t *testing.T, c *harness.Cluster, name string, workers int64, manual bool) *unstructured.Unstructured {
	t.Helper()
	tr, err := c.Dynamic.Resource(trainers).Namespace("default").Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Trainer", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"workers": workers, "manual": manual, "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr
}
