package grouper_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
)

var workloadDefinitionsResource = schema.GroupVersionResource{Group: "workmap.dev", Version: "v1alpha1", Resource: "workloaddefinitions"}

// invalidGadgetDefinition is accepted by the API server (the CRD's schema and rules hold) but
// not by workmap's compiler: its replicas expression does not parse.
const invalidGadgetDefinition = `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: gadgets.example.com}
spec:
  workload: {group: example.com, kind: Gadget, versions: [v1]}
  roles:
  - {name: worker, podTemplate: spec.template, replicas: "self.spec.("}
`

// TestDefinitionStatus: on the real control plane, the leader (and only the leader) sets
// Accepted=True (Compiled) on a valid cluster definition and Accepted=False (Invalid, with the
// field and the problem) on an invalid one, each with its generation; a fixed definition
// becomes accepted at its new generation; one broken after it was valid keeps its last valid
// generation in effect, recorded in its status (and so across a restart) until it is fixed;
// `kubectl get wd` shows the condition; nothing is rewritten while it stays the same.
func TestDefinitionStatus(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	reg, err := catalog.Registry()
	require.NoError(t, err)
	leader := grouper.NewLeader()
	g, err := grouper.New(ctx, c.Config, grouper.Options{SchedulerName: schedulerName, Builtin: reg.All(), Workers: 1, Metrics: prometheus.NewRegistry(), Leader: leader})
	require.NoError(t, err)
	go func() { _ = g.Run(ctx) }()

	wds := c.Dynamic.Resource(workloadDefinitionsResource)
	for _, src := range []string{widgetDefinitionYAML, invalidGadgetDefinition} {
		docs, err := manifest.Read([]byte(src), "definition.yaml")
		require.NoError(t, err)
		_, err = wds.Create(ctx, docs[0].Object, metav1.CreateOptions{})
		require.NoError(t, err, "the API server accepts it")
	}
	accepted := func(name string) (metav1.Condition, *unstructured.Unstructured, bool) {
		obj, err := wds.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, raw := range conditions {
			b, err := json.Marshal(raw)
			require.NoError(t, err)
			var cond metav1.Condition
			require.NoError(t, json.Unmarshal(b, &cond))
			if cond.Type == "Accepted" {
				return cond, obj, true
			}
		}
		return metav1.Condition{}, obj, false
	}

	t.Run("a standby writes nothing", func(t *testing.T) {
		require.Eventually(t, g.Definitions.HasSynced, 30*time.Second, 50*time.Millisecond)
		time.Sleep(2 * time.Second)
		for _, name := range []string{"widgets.example.com", "gadgets.example.com"} {
			_, _, found := accepted(name)
			require.False(t, found, "%s has no condition before the process leads", name)
		}
	})
	leader.Lead()

	t.Run("the leader sets Accepted", func(t *testing.T) {
		var valid, invalid metav1.Condition
		require.Eventually(t, func() bool {
			var ok1, ok2 bool
			valid, _, ok1 = accepted("widgets.example.com")
			invalid, _, ok2 = accepted("gadgets.example.com")
			return ok1 && ok2
		}, 30*time.Second, 100*time.Millisecond)
		require.Equal(t, metav1.ConditionTrue, valid.Status)
		require.Equal(t, "Compiled", valid.Reason)
		require.Equal(t, "in effect for Widget.example.com", valid.Message)
		require.Equal(t, int64(1), valid.ObservedGeneration)
		require.Equal(t, metav1.ConditionFalse, invalid.Status)
		require.Equal(t, "Invalid", invalid.Reason)
		require.Contains(t, invalid.Message, `spec.roles[0].replicas: Invalid value: "self.spec.(": Syntax error`)
		require.Equal(t, int64(1), invalid.ObservedGeneration)
	})

	t.Run("kubectl get wd shows the condition", func(t *testing.T) {
		kube, err := kubernetes.NewForConfig(c.Config)
		require.NoError(t, err)
		raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/apis/workmap.dev/v1alpha1/workloaddefinitions").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		require.NoError(t, err)
		var table metav1.Table
		require.NoError(t, json.Unmarshal(raw, &table))
		col := map[string]int{}
		for i, cd := range table.ColumnDefinitions {
			col[cd.Name] = i
		}
		require.Contains(t, col, "Accepted")
		require.Contains(t, col, "Reason")
		got := map[string][2]any{}
		for _, row := range table.Rows {
			got[row.Cells[col["Name"]].(string)] = [2]any{row.Cells[col["Accepted"]], row.Cells[col["Reason"]]}
		}
		require.Equal(t, map[string][2]any{
			"widgets.example.com": {"True", "Compiled"},
			"gadgets.example.com": {"False", "Invalid"},
		}, got)
	})

	t.Run("a fixed definition is accepted at its new generation", func(t *testing.T) {
		updated := setReplicas(ctx, t, wds, "gadgets.example.com", "self.spec.count")
		require.Equal(t, int64(2), updated.GetGeneration())
		require.Eventually(t, func() bool {
			cond, _, _ := accepted("gadgets.example.com")
			return cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == 2
		}, 30*time.Second, 100*time.Millisecond)
		cond, _, _ := accepted("gadgets.example.com")
		require.Equal(t, "Compiled", cond.Reason)
		require.Equal(t, "in effect for Gadget.example.com", cond.Message)
	})

	t.Run("a definition broken after it was valid keeps its last valid generation in effect", func(t *testing.T) {
		setReplicas(ctx, t, wds, "gadgets.example.com", "self.spec.(") // a typo, accepted by the API server
		require.Eventually(t, func() bool {
			cond, _, _ := accepted("gadgets.example.com")
			return cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == 3
		}, 30*time.Second, 100*time.Millisecond)
		cond, _, _ := accepted("gadgets.example.com")
		require.Equal(t, "Invalid", cond.Reason)
		require.True(t, strings.HasPrefix(cond.Message, "generation 2, the last valid one, stays in effect; spec.roles[0].replicas: "), cond.Message)
		def, ok := g.Definitions.Registry().Lookup(schema.GroupKind{Group: "example.com", Kind: "Gadget"})
		require.True(t, ok, "gangs of the kind go on with the last valid generation")
		require.Equal(t, int64(2), def.Source.Generation, "generation 2")

		// The status records it, for the CLI and for a restarted scheduler.
		require.Eventually(t, func() bool {
			_, obj, _ := accepted("gadgets.example.com")
			generation, _, _ := unstructured.NestedInt64(obj.Object, "status", "lastValid", "generation")
			return generation == 2
		}, 30*time.Second, 100*time.Millisecond, "status.lastValid is generation 2")
		_, obj, _ := accepted("gadgets.example.com")
		lastRoles, _, _ := unstructured.NestedSlice(obj.Object, "status", "lastValid", "spec", "roles")
		require.Len(t, lastRoles, 1)
		require.Equal(t, "self.spec.count", lastRoles[0].(map[string]any)["replicas"], "status.lastValid.spec is generation 2's")
	})

	t.Run("a restarted scheduler keeps the last valid generation in effect", func(t *testing.T) {
		restartCtx, stop := context.WithCancel(ctx)
		defer stop()
		restarted, err := grouper.New(restartCtx, c.Config, grouper.Options{SchedulerName: schedulerName, Builtin: reg.All(), Workers: 1, Metrics: prometheus.NewRegistry(), Leader: grouper.NewLeader()})
		require.NoError(t, err)
		go func() { _ = restarted.Run(restartCtx) }()
		require.Eventually(t, restarted.Definitions.HasSynced, 30*time.Second, 50*time.Millisecond)
		def, ok := restarted.Definitions.Registry().Lookup(schema.GroupKind{Group: "example.com", Kind: "Gadget"})
		require.True(t, ok, "the last valid generation, read from the status")
		require.Equal(t, int64(2), def.Source.Generation)
		msg, stale := restarted.Definitions.Stale(schema.GroupKind{Group: "example.com", Kind: "Gadget"})
		require.True(t, stale)
		require.Contains(t, msg, "WorkloadDefinition gadgets.example.com generation 3 is invalid")
	})

	t.Run("a definition fixed again drops its last valid generation", func(t *testing.T) {
		setReplicas(ctx, t, wds, "gadgets.example.com", "self.spec.size")
		require.Eventually(t, func() bool {
			cond, obj, _ := accepted("gadgets.example.com")
			_, found, _ := unstructured.NestedMap(obj.Object, "status", "lastValid")
			return cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == 4 && !found
		}, 30*time.Second, 100*time.Millisecond)
	})

	t.Run("nothing is rewritten while it stays the same", func(t *testing.T) {
		_, before, _ := accepted("widgets.example.com")
		time.Sleep(3 * time.Second)
		_, after, _ := accepted("widgets.example.com")
		require.Equal(t, before.GetResourceVersion(), after.GetResourceVersion())
	})
}

// setReplicas changes the replicas expression of the first role of the cluster's definition
// name (a new generation) and returns the definition as updated.
func setReplicas(ctx context.Context, t *testing.T, wds dynamic.ResourceInterface, name, replicas string) *unstructured.Unstructured {
	t.Helper()
	obj, err := wds.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	roles, _, _ := unstructured.NestedSlice(obj.Object, "spec", "roles")
	roles[0].(map[string]any)["replicas"] = replicas
	require.NoError(t, unstructured.SetNestedSlice(obj.Object, roles, "spec", "roles"))
	updated, err := wds.Update(ctx, obj, metav1.UpdateOptions{})
	require.NoError(t, err)
	return updated
}
