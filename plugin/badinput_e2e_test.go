package plugin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// linkKind is a kind whose objects only own one another: owner chains of any length, cycles.
var (
	linkKind = harness.CustomKind{Group: "example.com", Version: "v1", Kind: "Link", Plural: "links"}
	links    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "links"}
	// fleetingKind is a kind whose CRD the test deletes while the scheduler still knows it.
	fleetingKind = harness.CustomKind{Group: "example.com", Version: "v1", Kind: "Fleeting", Plural: "fleetings"}
)

// EnvBadInputSeed repeats a run of TestBadInput: the seed it logged.
const EnvBadInputSeed = "WORKMAP_BAD_INPUT_SEED"

// badPod is a pod whose ownership is broken, and what its NoGang event must say.
type badPod struct {
	name string
	// owners makes the owners the pod names and returns its owner references.
	owners func(t *testing.T) []metav1.OwnerReference
	// why are strings its event must contain.
	why []string
	// reason is the grouping error it is counted under.
	reason string
	// rediscovered is what it says and is counted under instead when the scheduler read
	// discovery again before grouping it (see deletedKindPod); nil for the others.
	rediscovered *badPod
}

// TestBadInput: a seeded random stream of good gangs mixed with pods whose ownership is broken
// (cycles, an owner that owns itself, missing owners, unknown kinds, an apiVersion that names
// no served version, a chain of 200 owners, owners of a kind whose CRD was deleted), while the
// gangs' WorkloadDefinition is replaced by a broken one and back. Every good gang binds whole,
// every bad pod is scheduled on its own with a Warning event saying why, the broken
// definition's status says so while its last valid generation groups the gangs, and
// workmap-scheduler neither panics nor stops; its metrics count the grouping errors by reason
// and the failed watch of the deleted kind.
func TestBadInput(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(EnvBadInputSeed); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, EnvBadInputSeed)
	}
	t.Logf("seed %d (%s=%d repeats this run)", seed, EnvBadInputSeed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	c := harness.Start(t, harness.Options{
		CustomKinds: []harness.CustomKind{trainerKind, linkKind, fleetingKind},
		// Room for every good gang at once (at most 6 of 3 pods, 1 GPU each).
		Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 12}, {Name: "gpu-node-1", GPUs: 12}},
		// Pods whose owners are missing stay for the scheduler to see.
		NoGarbageCollector: true,
	})
	sched := c.StartWorkmapScheduler(harness.SchedulerOptions{Args: []string{harness.OpenEndpointsFlag}})
	ctx := context.Background()
	g := newGangs(t, c)
	applyTrainerDefinition(t, c, "")
	waitDefinitionAccepted(t, c, metav1.ConditionTrue, 0)

	metrics, err := sched.Metrics(ctx)
	require.NoError(t, err)
	require.Zero(t, harness.Counter(t, metrics, "workmap_watch_errors_total", nil), "healthy: no failed list or watch")
	require.Zero(t, harness.Counter(t, metrics, "workmap_grouper_grouping_errors_total", nil), "healthy: no grouping error")
	for _, resource := range []string{"workloaddefinitions.workmap.dev", "podgroups.scheduling.x-k8s.io"} {
		_, err := harness.CounterOf(metrics, "workmap_watch_errors_total", map[string]string{"resource": resource, "reason": grouper.WatchNotFound})
		require.NoError(t, err, "the watch errors of %s are exported from the start", resource)
	}

	// A first gang: the scheduler reads discovery (and caches it) for its owner.
	var good []string
	workers := map[string]int{}
	goodGang := func(name string) {
		workers[name] = 2 + rng.IntN(2)
		createGoodTrainer(t, c, name, workers[name])
		good = append(good, name)
	}
	goodGang("good-0")
	g.WaitBound("trainer=good-0", workers["good-0"], 60*time.Second)

	// The Fleeting kind goes away while the scheduler's discovery still has it: the cache of
	// its owners can never be filled.
	deleteCRD(t, c, fleetingKind.Plural+"."+fleetingKind.Group)
	// One such pod before the stream, while nothing has made the scheduler read discovery
	// again: its owner's kind is served no more, and the list of it fails.
	first := deletedKindPod("deleted-kind-first")
	createBadPod(t, c, first.name, first.owners(t))
	requireEventSays(t, c, first.name, first.why)

	bad := badPods(t, c, rng)
	type step struct {
		name string
		run  func()
	}
	var steps []step
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("good-%d", i)
		steps = append(steps, step{name, func() { goodGang(name) }})
	}
	for _, b := range bad {
		steps = append(steps, step{b.name, func() { createBadPod(t, c, b.name, b.owners(t)) }})
	}
	rng.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
	breakAt := len(steps) / 2
	var order []string
	var brokenMsg string
	for i, s := range steps {
		if i == breakAt {
			// The definition is replaced by a broken one: the last valid generation groups
			// the gangs made meanwhile, and its status says what is wrong.
			setTrainerReplicas(t, c, "self.spec.(")
			waitDefinitionAccepted(t, c, metav1.ConditionFalse, 1)
			order = append(order, "[definition broken]")
			goodGang("good-while-broken")
			// Its pods are grouped by the last valid generation before the stream goes on (a
			// definition mended before the grouper decides them would leave nothing to say).
			brokenMsg = waitDefinitionInvalid(t, c, "good-while-broken-")
		}
		s.run()
		order = append(order, s.name)
	}
	setTrainerReplicas(t, c, "self.spec.workers")
	waitDefinitionAccepted(t, c, metav1.ConditionTrue, 0)
	goodGang("good-after")
	t.Logf("stream: %s", strings.Join(order, ", "))

	for _, name := range good {
		want := workers[name]
		g.WaitBound("trainer="+name, want, 60*time.Second)
		pods := g.Pods("trainer=" + name)
		pg, err := g.PodGroup(pods[0].Labels[v1alpha1.PodGroupLabel])
		require.NoError(t, err, "gang %s has its PodGroup", name)
		require.EqualValues(t, want, pg.Spec.MinMember, "gang %s is whole", name)
	}
	for _, b := range bad {
		require.Eventually(t, func() bool {
			pod, err := c.Kube.CoreV1().Pods("default").Get(ctx, b.name, metav1.GetOptions{})
			return err == nil && pod.Spec.NodeName != ""
		}, 60*time.Second, 200*time.Millisecond, "bad pod %s is scheduled on its own", b.name)
	}
	wantReasons := map[string]int{first.reason: 1}
	for _, b := range bad {
		msg := waitEvent(t, c, b.name, "NoGang")
		if b.rediscovered != nil && !strings.Contains(msg, b.why[0]) {
			b = *b.rediscovered
		}
		for _, why := range b.why {
			require.Contains(t, msg, why, "the NoGang event of %s says why", b.name)
		}
		wantReasons[b.reason]++
	}
	require.Contains(t, brokenMsg, "trainers.example.com generation 2 is invalid")

	metrics, err = sched.Metrics(ctx)
	require.NoError(t, err)
	wantReasons[grouper.ProblemDefinitionInvalid]++
	for reason, n := range wantReasons {
		require.GreaterOrEqual(t, harness.Counter(t, metrics, "workmap_grouper_grouping_errors_total", map[string]string{"reason": reason}), float64(n), "grouping errors %s", reason)
	}
	require.Positive(t, harness.Counter(t, metrics, "workmap_watch_errors_total", map[string]string{"resource": "fleetings.example.com", "reason": grouper.WatchNotFound}),
		"the failed list of the deleted kind is counted")

	require.NoError(t, c.CheckProcesses(), "workmap-scheduler still runs")
	logs, err := os.ReadFile(sched.LogPath())
	require.NoError(t, err)
	for _, crash := range []string{"panic:", "Observed a panic"} {
		require.NotContains(t, string(logs), crash, "workmap-scheduler never panicked")
	}
}

// badPods are the pods whose ownership is broken, one of each kind and a few more at random.
func badPods(t *testing.T, c *harness.Cluster, rng *rand.Rand) []badPod {
	ctx := context.Background()
	link := func(name string, owner *metav1.OwnerReference) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Link", "metadata": map[string]any{"name": name}}}
		if owner != nil {
			obj.SetOwnerReferences([]metav1.OwnerReference{*owner})
		}
		created, err := c.Dynamic.Resource(links).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
		require.NoError(t, err)
		return created
	}
	refTo := func(obj *unstructured.Unstructured) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Link", Name: obj.GetName(), UID: obj.GetUID(), Controller: ptr.To(true)}
	}
	setOwner := func(obj, owner *unstructured.Unstructured) {
		obj.SetOwnerReferences([]metav1.OwnerReference{*refTo(owner)})
		_, err := c.Dynamic.Resource(links).Namespace("default").Update(ctx, obj, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	pods := []badPod{
		{name: "cycle", reason: grouper.ProblemOwnerCycle, why: []string{"ownership cycle", "metadata.ownerReferences", "scheduled on its own"},
			owners: func(t *testing.T) []metav1.OwnerReference {
				a := link("cycle-a", nil)
				b := link("cycle-b", refTo(a))
				setOwner(a, b)
				return []metav1.OwnerReference{*refTo(a)}
			}},
		{name: "self-owned", reason: grouper.ProblemOwnerCycle, why: []string{"ownership cycle", "Link default/self"},
			owners: func(t *testing.T) []metav1.OwnerReference {
				self := link("self", nil)
				setOwner(self, self)
				return []metav1.OwnerReference{*refTo(self)}
			}},
		{name: "chain", reason: grouper.ProblemOwnerChainTooLong, why: []string{"owner chain too long", "more than 10 controller owners", "metadata.ownerReferences"},
			owners: func(t *testing.T) []metav1.OwnerReference {
				var owner *metav1.OwnerReference
				for i := range 200 {
					owner = refTo(link(fmt.Sprintf("chain-%d", i), owner))
				}
				return []metav1.OwnerReference{*owner}
			}},
		{name: "missing-owner", reason: grouper.ProblemOwnerNotFound, why: []string{"owner not found", "trainer ghost", "metadata.ownerReferences"},
			owners: func(*testing.T) []metav1.OwnerReference {
				return controller("example.com/v1", "Trainer", "ghost", types.UID(fmt.Sprintf("ghost-%d", rng.Int())))
			}},
		{name: "unknown-kind", reason: grouper.ProblemOwnerKindUnknown, why: []string{`no matches for kind "Nonexistent"`, "metadata.ownerReferences"},
			owners: func(*testing.T) []metav1.OwnerReference {
				return controller("example.com/v1", "Nonexistent", "x", "x-uid")
			}},
		{name: "bad-apiversion", reason: grouper.ProblemOwnerKindUnknown, why: []string{"Example.COM/V1!", "metadata.ownerReferences"},
			owners: func(*testing.T) []metav1.OwnerReference {
				return controller("Example.COM/V1!", "Trainer", "x", "x-uid")
			}},
	}
	// More than the grouper has workers: none of them may hold it.
	for i := range 5 {
		pods = append(pods, deletedKindPod(fmt.Sprintf("deleted-kind-%d", i)))
	}
	for i := range 1 + rng.IntN(3) {
		pods = append(pods, badPod{name: fmt.Sprintf("missing-owner-%d", i), reason: grouper.ProblemOwnerNotFound, why: []string{"owner not found"},
			owners: func(*testing.T) []metav1.OwnerReference {
				return controller("example.com/v1", "Trainer", fmt.Sprintf("ghost-%d", i), types.UID(fmt.Sprintf("ghost-%d", rng.Int())))
			}})
	}
	return pods
}

// deletedKindPod is a pod owned by a Fleeting, a kind deleted after the scheduler read
// discovery: the list of its owners fails. Once a pod of a kind the cluster does not serve
// (unknown-kind, bad-apiversion) has made the scheduler read discovery again, the kind is not
// served at all, which the pod's event says instead; which of the two a pod of the stream
// meets depends on the order the grouper's workers take the pods in.
func deletedKindPod(name string) badPod {
	return badPod{name: name, reason: grouper.ProblemOwnerUnreadable, why: []string{"owner kind unreadable", "fleetings.example.com"},
		rediscovered: &badPod{name: name, reason: grouper.ProblemOwnerKindUnknown, why: []string{`no matches for kind "Fleeting"`, "metadata.ownerReferences"}},
		owners: func(*testing.T) []metav1.OwnerReference {
			return controller("example.com/v1", "Fleeting", name, types.UID(name+"-uid"))
		}}
}

// controller is an owner reference list of one controller.
func controller(apiVersion, kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
}

// requireEventSays waits for the pod's NoGang event and requires it to contain every string
// of why.
func requireEventSays(t *testing.T, c *harness.Cluster, pod string, why []string) {
	t.Helper()
	msg := waitEvent(t, c, pod, "NoGang")
	for _, w := range why {
		require.Contains(t, msg, w, "the NoGang event of %s says why", pod)
	}
}

// createGoodTrainer creates a Trainer and its workers pods (1 GPU each) itself.
func createGoodTrainer(t *testing.T, c *harness.Cluster, name string, workers int) {
	t.Helper()
	ctx := context.Background()
	tr, err := c.Dynamic.Resource(trainers).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Trainer", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"workers": int64(workers), "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	owner := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Trainer", Name: name, UID: tr.GetUID(), Controller: ptr.To(true)}
	for i := range workers {
		createPod(t, c, fmt.Sprintf("%s-%d", name, i), harness.SchedulerName, map[string]string{"trainer": name}, 1, owner)
	}
}

// createBadPod creates a pod without resources owned by owners.
func createBadPod(t *testing.T, c *harness.Cluster, name string, owners []metav1.OwnerReference) {
	t.Helper()
	pod := gpuPod(name, 0)
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	pod.Labels, pod.OwnerReferences, pod.Spec.SchedulerName = map[string]string{"bad": "true"}, owners, harness.SchedulerName
	_, err := c.Kube.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

// setTrainerReplicas replaces the Trainer definition's replicas expression.
func setTrainerReplicas(t *testing.T, c *harness.Cluster, expr string) {
	t.Helper()
	ctx := context.Background()
	def, err := c.Dynamic.Resource(workloadDefinitions).Get(ctx, "trainers.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	roles, _, _ := unstructured.NestedSlice(def.Object, "spec", "roles")
	require.NotEmpty(t, roles)
	roles[0].(map[string]any)["replicas"] = expr
	require.NoError(t, unstructured.SetNestedSlice(def.Object, roles, "spec", "roles"))
	_, err = c.Dynamic.Resource(workloadDefinitions).Update(ctx, def, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// waitDefinitionAccepted waits until the Trainer definition's Accepted condition, for its
// current generation, has status; lastValid is the generation its status keeps in effect (0:
// none).
func waitDefinitionAccepted(t *testing.T, c *harness.Cluster, status metav1.ConditionStatus, lastValid int64) {
	t.Helper()
	var last string
	ok := assert.Eventually(t, func() bool {
		def, err := c.Dynamic.Resource(workloadDefinitions).Get(context.Background(), "trainers.example.com", metav1.GetOptions{})
		if err != nil {
			return false
		}
		conditions, _, _ := unstructured.NestedSlice(def.Object, "status", "conditions")
		kept, _, _ := unstructured.NestedInt64(def.Object, "status", "lastValid", "generation")
		for _, cond := range conditions {
			m, _ := cond.(map[string]any)
			observed, _, _ := unstructured.NestedInt64(m, "observedGeneration")
			last = fmt.Sprintf("%v (generation %d, last valid %d)", m, def.GetGeneration(), kept)
			if m["type"] == "Accepted" && observed == def.GetGeneration() && m["status"] == string(status) && kept == lastValid {
				return status == metav1.ConditionTrue || m["reason"] == "Invalid"
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond)
	if !ok {
		t.Fatalf("want Accepted %s, last valid generation %d; the status is %s", status, lastValid, last)
	}
}

// deleteCRD deletes a CRD and waits until it is gone.
func deleteCRD(t *testing.T, c *harness.Cluster, name string) {
	t.Helper()
	crds := c.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	require.NoError(t, crds.Delete(context.Background(), name, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := crds.Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 100*time.Millisecond, "CRD %s deleted", name)
}

// waitEvent waits for a Warning event of reason on a pod and returns its message.
func waitEvent(t *testing.T, c *harness.Cluster, pod, reason string) string {
	t.Helper()
	var msg string
	require.Eventually(t, func() bool {
		events, err := c.Kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason + ",involvedObject.name=" + pod})
		if err != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning {
				msg = e.Message
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "a %s Warning event on pod %s", reason, pod)
	return msg
}

// waitDefinitionInvalid waits for the DefinitionInvalid Warning event on a pod whose name starts
// with prefix (the first pod of a gang decided carries it: any of them, the grouper decides in
// parallel) and returns its message.
func waitDefinitionInvalid(t *testing.T, c *harness.Cluster, prefix string) string {
	t.Helper()
	var msg string
	require.Eventually(t, func() bool {
		events, err := c.Kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=DefinitionInvalid,type=Warning"})
		if err != nil {
			return false
		}
		for _, e := range events.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, prefix) {
				msg = e.Message
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "a DefinitionInvalid Warning event on a pod %s…", prefix)
	return msg
}
