package lws

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
	scheduling "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/live"
)

const namespace = metav1.NamespaceDefault

// gpuNode holds one pod of the vLLM sample (8 GPUs, 125 CPUs, 1124Gi of memory) and, beside
// it, the small CPU pods of the other samples.
func gpuNode(name string) harness.Node {
	return harness.Node{Name: name, GPUs: 8, CPU: "136", Memory: "1200Gi"}
}

// sample is an upstream LeaderWorkerSet sample, with its other objects (the vLLM sample's
// leader Service), ready to create in the local cluster.
type sample struct {
	lws    *unstructured.Unstructured
	others []*unstructured.Unstructured
}

// readSample reads an upstream sample as it is written (images are never pulled).
func readSample(t *testing.T, file string) sample {
	t.Helper()
	var s sample
	for _, obj := range livecheck.Sample(t, "lws", file) {
		if obj.GroupVersionKind().GroupKind() != GroupKind {
			s.others = append(s.others, obj)
			continue
		}
		require.Nil(t, s.lws, "%s holds one LeaderWorkerSet", file)
		s.lws = obj
	}
	require.NotNil(t, s.lws, "%s holds a LeaderWorkerSet", file)
	return s
}

// create creates the sample's objects in the cluster.
func (s sample) create(ctx context.Context, t *testing.T, c *harness.Cluster) {
	t.Helper()
	_, err := c.Dynamic.Resource(Resource).Namespace(namespace).Create(ctx, s.lws, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, obj := range s.others {
		require.Equal(t, "Service", obj.GetKind(), "samples hold a LeaderWorkerSet and Services")
		_, err := c.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("services")).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// replicasAndSize are the sample's group count and pods per group, as written (defaults 1).
func (s sample) replicasAndSize(t *testing.T) (int, int) {
	t.Helper()
	replicas, found, err := unstructured.NestedInt64(s.lws.Object, "spec", "replicas")
	require.NoError(t, err)
	if !found {
		replicas = 1
	}
	size, found, err := unstructured.NestedInt64(s.lws.Object, "spec", "leaderWorkerTemplate", "size")
	require.NoError(t, err)
	if !found {
		size = 1
	}
	return int(replicas), int(size)
}

// observer resolves one LeaderWorkerSet live and checks, at every observation, that workmap's
// state agrees with the controller's own status in the same object read.
type observer struct {
	c    *harness.Cluster
	def  *definitions.Definition
	name string
	seen []v1alpha1.State
}

// observe reads the LeaderWorkerSet, resolves it live and records the state.
func (o *observer) observe(ctx context.Context, t *testing.T) *live.Result {
	t.Helper()
	root, err := o.c.Dynamic.Resource(Resource).Namespace(namespace).Get(ctx, o.name, metav1.GetOptions{})
	require.NoError(t, err)
	res, err := (&live.Resolver{Client: o.c.Dynamic}).Resolve(ctx, o.def, root)
	require.NoError(t, err)
	requireAgreesWithController(t, root, res)
	if st := res.Workload.Status.State; len(o.seen) == 0 || o.seen[len(o.seen)-1] != st {
		o.seen = append(o.seen, st)
	}
	return res
}

// waitFor observes (every 50ms) until the state satisfies done and returns that resolution.
func (o *observer) waitFor(ctx context.Context, t *testing.T, what string, done func(v1alpha1.State) bool) *live.Result {
	t.Helper()
	var last *live.Result
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if last = o.observe(ctx, t); done(last.Workload.Status.State) {
			return last
		}
	}
	t.Fatalf("LeaderWorkerSet %s never became %s; states seen %v, last reason %q (%v)", o.name, what, o.seen, last.Workload.Status.Reason, o.c.CheckProcesses())
	return nil
}

func (o *observer) waitForState(ctx context.Context, t *testing.T, want v1alpha1.State) *live.Result {
	t.Helper()
	return o.waitFor(ctx, t, string(want), func(s v1alpha1.State) bool { return s == want })
}

// requireAgreesWithController compares workmap's state with the LeaderWorkerSet's status.
// The controller reports Available when every group is ready (its leader running and ready,
// its worker StatefulSet ready, which it is once it has created its pods, running or not),
// else Progressing (the Available condition, once added, then turns False), and counts the
// ready groups in readyReplicas. workmap is Running only while the controller says Available
// and every pod it expects runs; Degraded while Available but a pod does not run, or once
// available while some groups serve and others do not; Pending or Initializing while it
// starts (no group ready, or never available yet); Suspended when scaled to zero.
func requireAgreesWithController(t *testing.T, root *unstructured.Unstructured, res *live.Result) {
	t.Helper()
	available := livecheck.Condition(root, "Available")
	ready, _, _ := unstructured.NestedInt64(root.Object, "status", "readyReplicas")
	replicas, found, _ := unstructured.NestedInt64(root.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	w := res.Workload
	allRunning := int64(len(res.Pods)) >= w.Totals.Pods
	for _, p := range res.Pods {
		phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
		allRunning = allRunning && phase == string(corev1.PodRunning)
	}
	msg := fmt.Sprintf("workmap says %s (%s); the controller says Available=%q with %d of %d groups ready; all %d pods running: %v",
		w.Status.State, w.Status.Reason, available, ready, replicas, w.Totals.Pods, allRunning)
	switch w.Status.State {
	case v1alpha1.StateRunning:
		require.True(t, available == metav1.ConditionTrue && allRunning, msg)
	case v1alpha1.StateDegraded:
		require.True(t, (available == metav1.ConditionTrue && !allRunning) || (available == metav1.ConditionFalse && ready > 0), msg)
	case v1alpha1.StatePending, v1alpha1.StateInitializing:
		require.True(t, available == "" || (available == metav1.ConditionFalse && ready == 0), msg)
	case v1alpha1.StateSuspended:
		require.Zero(t, replicas, msg)
	default:
		require.Fail(t, "a LeaderWorkerSet is never "+string(w.Status.State), msg)
	}
}

// groupPods lists the pods of one group of a LeaderWorkerSet.
func groupPods(ctx context.Context, t *testing.T, c *harness.Cluster, name string, group int) []corev1.Pod {
	t.Helper()
	return livecheck.Pods(ctx, t, c, namespace, groupSelector(name, group))
}

// TestSamples runs upstream samples through the real controller, StatefulSet controller,
// kube-scheduler and kwok: workmap's live tree holds every pod the controller made in its
// role and group, its state follows the controller's status from creation to serving; when a
// container of one group restarts only that group is recreated, while workmap reports the
// LeaderWorkerSet degraded, then serving again; scaled to zero it is suspended.
func TestSamples(t *testing.T) {
	nodes := []harness.Node{gpuNode("gpu-node-0"), gpuNode("gpu-node-1"), gpuNode("gpu-node-2"), gpuNode("gpu-node-3")}
	c := harness.Start(t, harness.Options{Nodes: nodes})
	ctx := context.Background()
	Start(ctx, t, c)
	def := livecheck.Definition(t, GroupKind)

	tests := map[string]string{
		"one template for leaders and workers (3 groups of 4)": "sample-lws.yaml",
		"leader and worker templates (3 groups of 4)":          "leaderworkerset_multi_template.yaml",
		"vLLM on GPUs with a leader Service (2 groups of 2)":   "vllm-gpu-lws.yaml",
	}
	for name, file := range tests {
		t.Run(name, func(t *testing.T) {
			s := readSample(t, file)
			replicas, size := s.replicasAndSize(t)
			lwsName := s.lws.GetName()
			s.create(ctx, t, c)
			o := &observer{c: c, def: def, name: lwsName}

			running := o.waitForState(ctx, t, v1alpha1.StateRunning)
			require.Equal(t, v1alpha1.StatePending, o.seen[0], "a new LeaderWorkerSet is Pending until its pods are scheduled")
			t.Logf("states seen until %s serves: %v", lwsName, o.seen)
			pods := livecheck.Pods(ctx, t, c, namespace, NameLabel+"="+lwsName)
			require.Len(t, pods, replicas*size)
			livecheck.RequireTree(t, running, pods)
			requireRoles(t, running.Workload, replicas, size)
			// The leader StatefulSet, one worker StatefulSet per group (named after its leader
			// pod) and the headless Service of the groups; not the sample's own Service.
			wantSets := []string{lwsName}
			for i := range replicas {
				wantSets = append(wantSets, fmt.Sprintf("%s-%d", lwsName, i))
			}
			require.ElementsMatch(t, wantSets, childNames(running, "StatefulSet"))
			require.Equal(t, []string{lwsName}, childNames(running, "Service"))

			// A worker's container of the last group restarts: with the samples' restart
			// policy (RecreateGroupOnPodRestart, the default) the controller deletes and
			// recreates the whole group; the other groups keep their pods.
			last := replicas - 1
			kept := map[string]bool{}
			for _, p := range pods {
				if p.Labels[GroupIndexLabel] != strconv.Itoa(last) {
					kept[string(p.UID)] = true
				}
			}
			before := groupPods(ctx, t, c, lwsName, last)
			victim := before[0]
			for _, p := range before {
				if p.Labels[WorkerIndexLabel] != "0" {
					victim = p
				}
			}
			restartContainer(ctx, t, c, victim)
			o.seen = []v1alpha1.State{v1alpha1.StateRunning}
			o.waitFor(ctx, t, "not Running", func(s v1alpha1.State) bool { return s != v1alpha1.StateRunning })
			o.waitForState(ctx, t, v1alpha1.StateRunning)
			require.Equal(t, []v1alpha1.State{v1alpha1.StateRunning, v1alpha1.StateDegraded, v1alpha1.StateRunning}, o.seen,
				"while one group is recreated the others serve")

			after := livecheck.Pods(ctx, t, c, namespace, NameLabel+"="+lwsName)
			require.Len(t, after, replicas*size)
			for _, p := range after {
				if p.Labels[GroupIndexLabel] == strconv.Itoa(last) {
					for _, b := range before {
						require.NotEqual(t, b.UID, p.UID, "pod %s of the failed group is new", p.Name)
					}
				} else {
					require.True(t, kept[string(p.UID)], "pod %s of a healthy group is kept", p.Name)
				}
			}
			livecheck.RequireTree(t, o.observe(ctx, t), after)

			// Scaled to zero, the controller removes every group and workmap reports the
			// LeaderWorkerSet suspended.
			patch := []byte(`{"spec":{"replicas":0}}`)
			_, err := c.Dynamic.Resource(Resource).Namespace(namespace).Patch(ctx, lwsName, types.MergePatchType, patch, metav1.PatchOptions{})
			require.NoError(t, err)
			o.waitForState(ctx, t, v1alpha1.StateSuspended)
			require.Eventually(t, func() bool {
				res := o.observe(ctx, t)
				return len(res.Pods) == 0 && res.Workload.Status.State == v1alpha1.StateSuspended
			}, 30*time.Second, 100*time.Millisecond, "the pods of %s are deleted", lwsName)
		})
	}
}

// restartContainer reports a restart of the pod's first container, as the kubelet does when
// the container exits and is started again (kwok never restarts containers itself).
func restartContainer(ctx context.Context, t *testing.T, c *harness.Cluster, pod corev1.Pod) {
	t.Helper()
	patch := `[{"op": "replace", "path": "/status/containerStatuses/0/restartCount", "value": 1}]`
	_, err := c.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
}

// requireRoles checks the roles of a LeaderWorkerSet's tree: one leader per group (from the
// leader template, or the worker template when there is none), size-1 workers per group.
func requireRoles(t *testing.T, w *definitions.Workload, replicas, size int) {
	t.Helper()
	want := map[string]int{"leader": replicas}
	if size > 1 {
		want["worker"] = replicas * (size - 1)
	}
	got := map[string]int{}
	for _, r := range w.Roles {
		if r.Pods > 0 {
			got[r.Name] += int(r.Pods)
		}
	}
	require.Equal(t, want, got, "pods expected by role")
}

// childNames lists the names of the child objects of a kind that a live resolution found.
func childNames(res *live.Result, kind string) []string {
	var names []string
	for _, objs := range res.Children {
		for _, o := range objs {
			if o.GetKind() == kind {
				names = append(names, o.GetName())
			}
		}
	}
	return names
}

// TestGangScheduling: workmap-scheduler gang-schedules the controller's pods, one PodGroup per
// LeaderWorkerSet group (found through the real owner chain: worker pod, worker StatefulSet,
// leader pod, leader StatefulSet, LeaderWorkerSet) with minMember = the group's size; a group
// that the cluster can hold but for one pod binds none of its pods until a node is added.
func TestGangScheduling(t *testing.T) {
	// Room for 3 of the vLLM sample's 4 GPU pods: one group of 2 fits, the other is one pod short.
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{gpuNode("gpu-node-0"), gpuNode("gpu-node-1"), gpuNode("gpu-node-2")}})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(harness.SchedulerOptions{PodGroupBackoffSeconds: 2})
	def := livecheck.Definition(t, GroupKind)
	g := c.NewGangs(t, namespace)

	// create creates a sample whose pods go to workmap-scheduler and returns it.
	create := func(t *testing.T, file string) sample {
		s := readSample(t, file)
		livecheck.SetSchedulerName(t, def, s.lws, harness.SchedulerName)
		s.create(ctx, t, c)
		return s
	}
	// requirePodGroups checks one PodGroup per group, named as workmap names it, owned by the
	// LeaderWorkerSet, minMember = size, holding exactly that group's pods once they are bound.
	requirePodGroups := func(t *testing.T, s sample) {
		replicas, size := s.replicasAndSize(t)
		name := s.lws.GetName()
		o := &observer{c: c, def: def, name: name}
		groups := o.observe(ctx, t).Workload.Groups
		require.Len(t, groups, replicas, "one gang per group")
		for i := range replicas {
			pgName := fmt.Sprintf("%s-group-%d", name, i)
			require.Equal(t, pgName, groups[i].PodGroupName(name))
			require.EqualValues(t, size, groups[i].MinMember)
			pg, err := g.PodGroup(pgName)
			require.NoError(t, err)
			require.EqualValues(t, size, pg.Spec.MinMember, "PodGroup %s", pgName)
			require.Len(t, pg.OwnerReferences, 1)
			require.Equal(t, GroupKind.Kind, pg.OwnerReferences[0].Kind)
			require.Equal(t, name, pg.OwnerReferences[0].Name)
			pods := groupPods(ctx, t, c, name, i)
			require.Len(t, pods, size)
			require.Len(t, g.Pods(scheduling.PodGroupLabel+"="+pgName), size, "the pods of PodGroup %s are its group's", pgName)
			for _, p := range pods {
				require.Equal(t, pgName, p.Labels[scheduling.PodGroupLabel], "pod %s", p.Name)
			}
		}
		o.waitForState(ctx, t, v1alpha1.StateRunning)
	}

	t.Run("every group is a gang of its size (3 groups of 4 CPU pods)", func(t *testing.T) {
		s := create(t, "sample-lws.yaml")
		replicas, size := s.replicasAndSize(t)
		g.WaitBound(NameLabel+"="+s.lws.GetName(), replicas*size, 60*time.Second)
		requirePodGroups(t, s)
	})

	t.Run("a group one pod short binds none of its pods until a node is added (2 groups of 2 GPU pods)", func(t *testing.T) {
		s := create(t, "vllm-gpu-lws.yaml")
		name := s.lws.GetName()
		sizes := map[string]int{groupSelector(name, 0): 2, groupSelector(name, 1): 2}
		g.WaitCreated(NameLabel+"="+name, 4)
		var bound map[string]int
		require.Eventually(t, func() bool {
			bound = g.NeverPartial(time.Second, sizes)
			return bound[groupSelector(name, 0)]+bound[groupSelector(name, 1)] == 2
		}, 60*time.Second, 10*time.Millisecond, "one group is bound")
		bound = g.NeverPartial(5*time.Second, sizes)
		require.Equal(t, 2, bound[groupSelector(name, 0)]+bound[groupSelector(name, 1)], "one group bound, the other has none of its pods bound: %v", bound)
		waiting := 0
		if bound[groupSelector(name, 0)] == 2 {
			waiting = 1
		}
		g.WaitPhase(fmt.Sprintf("%s-group-%d", name, waiting), 0, scheduling.PodGroupPending)
		o := &observer{c: c, def: def, name: name}
		require.Equal(t, v1alpha1.StatePending, o.observe(ctx, t).Workload.Status.State,
			"a LeaderWorkerSet that has never had every group ready is starting, whatever its bound group does")

		c.AddNode(ctx, gpuNode("gpu-node-3"))
		g.WaitBound(NameLabel+"="+name, 4, 60*time.Second)
		g.WaitPhase(fmt.Sprintf("%s-group-%d", name, waiting), 2, scheduling.PodGroupScheduled, scheduling.PodGroupRunning)
		requirePodGroups(t, s)
	})
}

// groupSelector selects the pods of one group of a LeaderWorkerSet.
func groupSelector(name string, group int) string {
	return fmt.Sprintf("%s=%s,%s=%d", NameLabel, name, GroupIndexLabel, group)
}
