package milvus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
)

// milvusSample is an upstream sample, run in the namespace of its name.
type milvusSample struct {
	file string
	// adjust changes the sample where this cluster needs it (beyond the dependencies, which
	// Dependencies.Use replaces in every sample).
	adjust func(t *testing.T, obj *unstructured.Unstructured)
	// roles are the pods the spec asks for, by role (roles not named: none).
	roles map[string]int64
	// disrupt is the component (app.kubernetes.io/component) one of whose pods is lost in
	// the Degraded step; "" leaves the sample out of it.
	disrupt string
}

// The samples: standalone and two clusters (Milvus 2.6: mixcoord, datanode, streamingnode,
// querynode, proxy). All use the operator's default image, a 2.6 release.
var samples = map[string]milvusSample{
	"standalone": {file: "demo.yaml", roles: map[string]int64{"standalone": 1}, disrupt: "standalone"},
	// The capacity sample: one node short of its pods until one is added.
	"cluster": {
		file: "cluster_demo.yaml",
		// One CPU per component pod (the sample sets no requests), so that the nodes can
		// hold four of its five pods.
		adjust: func(t *testing.T, obj *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(obj.Object, map[string]any{"requests": map[string]any{"cpu": "1"}}, "spec", "components", "resources"))
		},
		roles: map[string]int64{"mixcoord": 1, "datanode": 1, "streamingnode": 1, "querynode": 1, "proxy": 1},
	},
	// Only mixCoord is set: the operator gives every other component of a 2.6 cluster its
	// default of one replica.
	"cluster-defaults": {
		file:    "milvus_cluster_mixcoord.yaml",
		roles:   map[string]int64{"mixcoord": 1, "datanode": 1, "streamingnode": 1, "querynode": 1, "proxy": 1},
		disrupt: "proxy",
	},
}

// capacitySample is the sample the nodes are one pod short for.
const capacitySample = "cluster"

// initialNodes hold four of the five one-CPU pods of the capacity sample (the other samples
// request nothing); extraNode holds the fifth.
var (
	initialNodes = []harness.Node{{Name: "node-a", CPU: "2"}, {Name: "node-b", CPU: "2"}}
	extraNode    = harness.Node{Name: "node-c", CPU: "2"}
)

// release is the name of the Milvus in every sample.
const release = "my-release"

// TestMilvus runs the real Milvus operator with three upstream samples and checks
// workmap's live view of them against what the operator does, at every observation: the
// pods it creates, and its status through Pending, Initializing (dependencies ready,
// components starting), Running (Healthy), Degraded (Unhealthy: a component lost a pod it
// cannot replace) and Suspended (Stopped). workmap-scheduler places every pod: Milvus has no
// gang, so it binds the pods that fit and makes no PodGroup.
//
// The operator marks a component Deployment available 30 s after its pods are ready (it sets
// minReadySeconds: 30), so every step to Running takes that long.
func TestMilvus(t *testing.T) {
	ctx := context.Background()
	c := harness.Start(t, harness.Options{Nodes: initialNodes, NoScheduler: true})
	c.StartWorkmapScheduler(harness.SchedulerOptions{})
	deps := StartDependencies(ctx, t, c)
	Start(ctx, t, c)
	m := newMilvuses(t, c)

	for ns, s := range samples {
		objs := livecheck.Sample(t, "milvus", s.file)
		require.Len(t, objs, 1, livecheck.Names(objs))
		obj := objs[0]
		obj.SetNamespace(ns)
		require.NoError(t, deps.Use(obj))
		if s.adjust != nil {
			s.adjust(t, obj)
		}
		// Through the definition's fields: each running component's own schedulerName
		// (components that do not run get no block, which would change what is deployed).
		livecheck.SetSchedulerName(t, livecheck.Definition(t, GroupKind), obj, harness.SchedulerName)
		require.NoError(t, CreateStorageSecret(ctx, c, ns))
		_, err := c.Dynamic.Resource(Resource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		require.NoError(t, err, s.file)
		m.observe(ctx, t, ns)
	}

	step(t, "the operator creates the components once its probes find the dependencies ready", func(t *testing.T) {
		want := map[string]v1alpha1.State{}
		for ns := range samples {
			want[ns] = v1alpha1.StateRunning
		}
		// Its fifth pod does not fit: the capacity sample stays Initializing.
		want[capacitySample] = v1alpha1.StateInitializing
		last := m.followAll(ctx, t, want, DependencyProbeInterval+time.Minute)
		for ns, s := range samples {
			require.Equal(t, v1alpha1.StatePending, m.seen[ns][0], "%s: a new Milvus is Pending", ns)
			requireInOrder(t, m.seen[ns], v1alpha1.StatePending, v1alpha1.StateInitializing, v1alpha1.StateRunning)
			require.Contains(t, m.seen[ns], v1alpha1.StateInitializing, "%s: the operator found the dependencies ready before the components", ns)
			for _, dep := range []string{"EtcdReady", "StorageReady", "MsgStreamReady"} {
				require.Equal(t, metav1.ConditionTrue, livecheck.Condition(last[ns].root, dep), "%s: %s", ns, dep)
			}
			requireRoles(t, last[ns].res.Workload, s.roles)
		}
		require.Positive(t, deps.BucketProbes(), "the operator probed the storage bucket")
	})

	step(t, "workmap finds every pod the operator made, each in its role", func(t *testing.T) {
		for ns, s := range samples {
			if ns != capacitySample { // checked once it has its node
				o := m.settle(ctx, t, ns, total(s.roles))
				livecheck.RequireTree(t, o.res, o.pods)
				requireDeployments(t, o.res, s.roles)
			}
		}
	})

	gangs := c.NewGangs(t, capacitySample)
	capacityPods := int(total(samples[capacitySample].roles))
	step(t, "no gang: with capacity one pod short, the pods that fit bind and no PodGroup is made", func(t *testing.T) {
		sel := PodSelector(release)
		gangs.WaitCreated(sel, capacityPods)
		require.Eventually(t, func() bool { return harness.Bound(gangs.Pods(sel)) == capacityPods-1 }, 30*time.Second, 100*time.Millisecond)
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			require.Equal(t, capacityPods-1, harness.Bound(gangs.Pods(sel)), "the pod that does not fit stays unbound")
			o := m.observe(ctx, t, capacitySample)
			require.Equal(t, v1alpha1.StateInitializing, o.res.Workload.Status.State)
			require.Equal(t, metav1.ConditionFalse, livecheck.Condition(o.root, "MilvusReady"))
			require.Empty(t, o.res.Workload.Groups, "workmap computes no gang for Milvus")
		}
		require.Empty(t, gangs.PodGroups(), "no PodGroup for Milvus pods")
	})

	disrupted := map[string]v1alpha1.State{}
	step(t, "a component that loses a pod it cannot replace makes Milvus Degraded", func(t *testing.T) {
		setUnschedulable(ctx, t, c, true)
		for ns, s := range samples {
			if s.disrupt == "" {
				continue
			}
			disrupted[ns] = v1alpha1.StateDegraded
			pods := livecheck.Pods(ctx, t, c, ns, PodSelector(release)+","+ComponentLabel+"="+s.disrupt)
			require.NotEmpty(t, pods, "%s: %s pods", ns, s.disrupt)
			require.NoError(t, c.Kube.CoreV1().Pods(ns).Delete(ctx, pods[0].Name, metav1.DeleteOptions{}))
		}
		last := m.followAll(ctx, t, disrupted, time.Minute)
		for ns := range disrupted {
			require.Equal(t, metav1.ConditionFalse, livecheck.Condition(last[ns].root, "MilvusReady"), ns)
			require.Contains(t, last[ns].res.Workload.Status.Reason, "["+samples[ns].disrupt+"] not ready", "%s: the reason names the component", ns)
		}
	})

	step(t, "with the nodes back and a node added, every Milvus runs with all its pods bound", func(t *testing.T) {
		setUnschedulable(ctx, t, c, false)
		c.AddNode(ctx, extraNode)
		gangs.WaitBound(PodSelector(release), capacityPods, 30*time.Second)
		want := map[string]v1alpha1.State{}
		for ns := range samples {
			want[ns] = v1alpha1.StateRunning
		}
		m.followAll(ctx, t, want, time.Minute)
		for ns, s := range samples {
			requireInOrder(t, m.seen[ns], v1alpha1.StatePending, v1alpha1.StateInitializing, v1alpha1.StateRunning, v1alpha1.StateDegraded, v1alpha1.StateRunning)
			o := m.settle(ctx, t, ns, total(s.roles))
			livecheck.RequireTree(t, o.res, o.pods)
			requireDeployments(t, o.res, s.roles)
		}
		require.Empty(t, gangs.PodGroups(), "no PodGroup for Milvus pods")
	})

	step(t, "scaling every component to 0 stops Milvus: Suspended", func(t *testing.T) {
		patch := `{"spec":{"components":{"standalone":{"replicas":0}}}}`
		_, err := c.Dynamic.Resource(Resource).Namespace("standalone").Patch(ctx, release, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
		m.followAll(ctx, t, map[string]v1alpha1.State{"standalone": v1alpha1.StateSuspended}, time.Minute)
		o := m.settle(ctx, t, "standalone", 0)
		livecheck.RequireTree(t, o.res, o.pods)
		requireDeployments(t, o.res, map[string]int64{})
	})
}

// step runs one step of a test as a subtest and stops the test when it fails: the next
// steps build on it.
func step(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	if !t.Run(name, f) {
		t.FailNow()
	}
}
