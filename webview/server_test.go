package webview

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/live"
)

// cluster is the objects of most tests: the example JobSet running in ml (with its PodGroup
// and a pod no role matches), a smaller one pending in team-b, and a malformed one; two nodes
// (16 and 8 GPUs) and a pod of no workload holding one GPU.
func cluster(t *testing.T) []runtime.Object {
	objs := jobSetObjects(t, "ml", "train", 2, "Running")
	objs = append(objs, jobSetObjects(t, "team-b", "eval", 1, "Pending")...)
	objs = append(objs, podGroup("ml", "train-all", 3, "Running", 3), pod("ml", "train", "sidecar", 0, "Pending"))
	objs = append(objs,
		k8sEvent("ml", "e1", "Pod", "train-workers-1-0", "Normal", "Scheduled", "Successfully assigned ml/train-workers-1-0 to gpu-node-0", time.Now().Add(-time.Minute)),
		k8sEvent("ml", "e2", "JobSet", "train", "Warning", "FailedCreate", "a warning of the JobSet itself", time.Now().Add(-30*time.Second)),
		k8sEvent("ml", "e3", "Pod", "someone-else", "Normal", "Scheduled", "an event of another pod", time.Now()),
		k8sEvent("team-b", "e4", "JobSet", "train", "Normal", "Other", "an event of a JobSet of the same name elsewhere", time.Now()),
		related(k8sEvent("ml", "e5", "PodGroup", "train-all", "Normal", "Preempted", "Preempted by PodGroup ml/serve (priority 1000) to fit it whole: 3 pods on gpu-node-0 deleted",
			time.Date(2026, 12, 4, 10, 1, 0, 0, time.UTC)), "PodGroup", "ml", "serve"))
	for _, o := range objs { // the train JobSet's pods run at priority 10
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "Pod" && u.GetNamespace() == "ml" {
			_ = unstructured.SetNestedField(u.Object, int64(10), "spec", "priority")
		}
	}
	broken := exampleJobSet(t, "team-b", "broken", 1)
	broken.Object["spec"] = map[string]any{"replicatedJobs": "not a list"}
	objs = append(objs, node("gpu-node-0", 16, nil), node("gpu-node-1", 8, nil), gpuPod("tools", "notebook", "gpu-node-1", 1))
	return append(objs, broken)
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestOverview(t *testing.T) {
	t.Parallel()
	clients, _ := fakeClients(t, map[string]bool{"leaderworkersets": true}, cluster(t)...)
	s := startServer(t, clients, Options{})
	tests := map[string]struct {
		query         string
		want, notWant []string
		order         []string // row keys in this order
	}{
		"every workload, GPUs bound and waiting per namespace, the cluster's capacity and free GPUs": {
			want: []string{
				`data-key="jobset.x-k8s.io/JobSet/ml/train" data-state="Running"`, `<td class="gpus num">12</td>`, `<td class="pods num">3/3</td>`,
				`Running 3/3`, `data-key="jobset.x-k8s.io/JobSet/team-b/eval" data-state="Pending"`, `no PodGroup 0/2`,
				`<tr data-namespace="ml"><td>ml</td><td class="num">1</td><td class="num bound">12</td><td class="num waiting">0</td></tr>`,
				`<tr data-namespace="team-b"><td>team-b</td><td class="num">2</td><td class="num bound">0</td><td class="num waiting">8</td></tr>`,
				`<td>pods of no workload</td><td class="num">-</td><td class="num bound">1</td>`,
				`<td class="num" id="gpus-bound">13</td><td class="num" id="gpus-waiting">8</td>`,
				`id="gpus-capacity" data-known="true">24 <span class="why">GPUs on 2 nodes</span>`, `<dd id="gpus-free">11</dd>`,
				`data-key="jobset.x-k8s.io/JobSet/team-b/broken" data-state="Unknown"`, "cannot read the workload: role replicatedJob: spec.replicatedJobs: expected list or object, found string",
				`href="/workloads/jobset.x-k8s.io/JobSet/ml/train"`,
			},
			notWant: []string{"s3cr3t-env-value"},
		},
		"a kind the user may not list is shown as not permitted": {
			want: []string{`data-kind="LeaderWorkerSet.leaderworkerset.x-k8s.io" data-access="not permitted"`, "cannot list leaderworkersets.leaderworkerset.x-k8s.io in any namespace: forbidden; ask for a role that grants list on leaderworkersets.leaderworkerset.x-k8s.io", `data-access="not installed"`},
		},
		"filter by namespace": {
			query: "?namespace=team-b", want: []string{"team-b/eval", `id="gpus-bound">0<`, `id="gpus-waiting">8<`, `<dd id="gpus-free">11</dd>`, "capacity, bound and free are the cluster's"},
			notWant: []string{"ml/train", "pods of no workload"},
		},
		"filter by kind and status": {
			query: "?kind=JobSet&status=Running", want: []string{"ml/train"}, notWant: []string{"team-b/eval", "team-b/broken"},
		},
		"filter matching nothing": {query: "?status=Failed", want: []string{"No workloads match the filters."}},
		"sort by GPUs, descending": {
			query: "?sort=gpus&order=desc", order: []string{"ml/train", "team-b/eval", "team-b/broken"},
			want: []string{`<th aria-sort="descending"><a href="?sort=gpus">GPUs ▼</a></th>`, `<a href="?sort=kind">Kind</a>`},
		},
		"sort by name": {
			query: "?sort=name", order: []string{"team-b/broken", "team-b/eval", "ml/train"},
			want: []string{`<th aria-sort="ascending"><a href="?order=desc&amp;sort=name">Name ▲</a></th>`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, body := get(t, s.Handler(), "/"+tc.query)
			require.Equal(t, http.StatusOK, code)
			for _, w := range tc.want {
				require.Contains(t, body, w)
			}
			for _, w := range tc.notWant {
				require.NotContains(t, body, w)
			}
			last := -1
			for _, k := range tc.order {
				i := strings.Index(body, "JobSet/"+k+`"`)
				require.Greater(t, i, last, "%s out of order", k)
				last = i
			}
		})
	}
}

func TestWorkloadPage(t *testing.T) {
	t.Parallel()
	clients, dyn := fakeClients(t, nil, cluster(t)...)
	s := startServer(t, clients, Options{})
	tests := map[string]struct {
		path    string
		code    int
		want    []string
		notWant []string
	}{
		"tree, gangs and the pod no role matches": {
			path: "/workloads/jobset.x-k8s.io/JobSet/ml/train", code: http.StatusOK,
			want: []string{
				`data-state="Running"`, "3 jobs active", `data-role="leader"`, `data-role="workers"`, `data-instance="workers-1"`,
				`data-pod="train-workers-1-0" data-phase="Running"`, "on gpu-node-0", `<span class="gpus">8 GPUs</span>`,
				`data-podgroup="train-all" data-phase="Running"`, `<td class="num">3/3</td>`,
				`id="unmatched"`, "pod/train-sidecar-0-0", `href="/workloads/jobset.x-k8s.io/JobSet/ml/train/json"`,
				`<td>Warning</td><td>FailedCreate</td><td>JobSet/train</td><td>a warning of the JobSet itself <span class="why">(×2)</span></td></tr>`,
				"Successfully assigned ml/train-workers-1-0 to gpu-node-0",
				`<td class="num priority">10</td>`,
				`<p class="preempted">last preempted by PodGroup ml/serve at <time datetime="2026-12-04T10:01:00Z">`,
				`<td>Normal</td><td>Preempted</td><td>PodGroup/train-all</td><td>Preempted by PodGroup ml/serve (priority 1000) to fit it whole`,
			},
			notWant: []string{"s3cr3t-env-value", "an event of another pod", "an event of a JobSet of the same name elsewhere", "made by"},
		},
		"a gang without its PodGroup": {
			path: "/workloads/jobset.x-k8s.io/JobSet/team-b/eval", code: http.StatusOK,
			want: []string{`data-podgroup="eval-all" data-phase=""`, "no PodGroup", `id="unmatched-none"`},
		},
		"a malformed workload": {
			path: "/workloads/jobset.x-k8s.io/JobSet/team-b/broken", code: http.StatusOK,
			want: []string{`data-state="Unknown"`, "cannot read the workload", `<ul class="warnings">`},
		},
		"not found":    {path: "/workloads/jobset.x-k8s.io/JobSet/ml/nope", code: http.StatusNotFound, want: []string{"JobSet ml/nope not found"}},
		"unknown kind": {path: "/workloads/example.com/Widget/ml/w", code: http.StatusNotFound, want: []string{"unknown workload kind Widget.example.com: no definition for it"}},
		"a kind the cluster does not serve": {
			path: "/workloads/ray.io/RayCluster/ml/r", code: http.StatusNotFound, want: []string{"RayCluster.ray.io is not installed in the cluster"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, body := get(t, s.Handler(), tc.path)
			require.Equal(t, tc.code, code, body)
			for _, w := range tc.want {
				require.Contains(t, body, w)
			}
			for _, w := range tc.notWant {
				require.NotContains(t, body, w)
			}
		})
	}

	t.Run("JSON is the document of tree -o json", func(t *testing.T) {
		code, body := get(t, s.Handler(), "/workloads/jobset.x-k8s.io/JobSet/ml/train/json")
		require.Equal(t, http.StatusOK, code)
		reg, err := catalog.Registry()
		require.NoError(t, err)
		root, err := dyn.Resource(jobSets).Namespace("ml").Get(context.Background(), "train", metav1.GetOptions{})
		require.NoError(t, err)
		def, _ := reg.Lookup(root.GroupVersionKind().GroupKind())
		r := &live.Resolver{Client: dyn}
		res, err := r.Resolve(context.Background(), def, root)
		require.NoError(t, err)
		// tree reads the gangs' PodGroups as the page does.
		require.NoError(t, r.GangStates(context.Background(), res.Workload, live.GangOptions{}))
		want, err := json.MarshalIndent(definitions.NewWorkloadTree(res.Workload), "", "  ")
		require.NoError(t, err)
		require.JSONEq(t, string(want), body)
		var w definitions.WorkloadTree
		require.NoError(t, json.Unmarshal([]byte(body), &w))
		require.Equal(t, "WorkloadTree", w.Kind)
		require.EqualValues(t, 12, w.Totals.GPUs)
	})
	t.Run("JSON of a missing workload says why", func(t *testing.T) {
		code, body := get(t, s.Handler(), "/workloads/jobset.x-k8s.io/JobSet/ml/nope/json")
		require.Equal(t, http.StatusNotFound, code)
		require.Contains(t, body, "not found")
	})
	t.Run("every workload as JSON", func(t *testing.T) {
		_, body := get(t, s.Handler(), "/api/workloads")
		var ws definitions.List[definitions.WorkloadTree]
		require.NoError(t, json.Unmarshal([]byte(body), &ws))
		require.Equal(t, "List", ws.Kind)
		require.Len(t, ws.Items, 3)
	})
	t.Run("assets are embedded and the pages keep to them", func(t *testing.T) {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/static/app.js", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		require.Contains(t, rec.Body.String(), "EventSource")
		require.Contains(t, rec.Header().Get("Content-Security-Policy"), "default-src 'self'")
	})
}

// TestHTMLEscaping: names from the cluster are escaped.
func TestHTMLEscaping(t *testing.T) {
	t.Parallel()
	objs := jobSetObjects(t, "ml", "train", 1, "Failed")
	js := objs[0].(*unstructured.Unstructured)
	js.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Failed", "status": "True", "message": `<script>alert(1)</script>`}}}
	clients, _ := fakeClients(t, nil, objs...)
	s := startServer(t, clients, Options{})
	for _, path := range []string{"/", "/workloads/jobset.x-k8s.io/JobSet/ml/train"} {
		_, body := get(t, s.Handler(), path)
		require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
		require.NotContains(t, body, "<script>alert")
	}
}

// TestNotPermitted: resources the user may not list are not watched and are shown as such;
// a workload whose pods may not be listed says so instead of failing the page.
func TestNotPermitted(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		denied       map[string]bool
		path         string
		want         []string
		wantAccessOf map[string]Access
	}{
		"the root kind": {
			denied: map[string]bool{"jobsets": true}, path: "/",
			want:         []string{`data-kind="JobSet.jobset.x-k8s.io" data-access="not permitted"`, "No workloads."},
			wantAccessOf: map[string]Access{"jobsets": AccessNotPermitted, "pods": AccessWatching},
		},
		"pods": {
			denied: map[string]bool{"pods": true}, path: "/workloads/jobset.x-k8s.io/JobSet/ml/train",
			want:         []string{"not permitted: ", "cannot list pods in any namespace: forbidden; ask for the built-in view role bound cluster-wide"},
			wantAccessOf: map[string]Access{"pods": AccessNotPermitted, "jobsets": AccessWatching},
		},
		"PodGroups": {
			denied: map[string]bool{"podgroups": true}, path: "/workloads/jobset.x-k8s.io/JobSet/ml/train",
			want: []string{"cannot list podgroups.scheduling.x-k8s.io in namespace ml: forbidden; ask for the built-in view role in namespace ml, which includes podgroups.scheduling.x-k8s.io once workmap"}, wantAccessOf: map[string]Access{"podgroups": AccessNotPermitted},
		},
		"nodes: the capacity is unknown, not 0": {
			denied: map[string]bool{"nodes": true}, path: "/",
			want: []string{
				`id="gpus-capacity" data-known="false" title="not permitted to list nodes: cannot list nodes cluster-wide: forbidden; ask for a ClusterRole that grants list on nodes, bound cluster-wide (the built-in view role does not)">unknown`,
				`<dd id="gpus-free">unknown</dd>`, `<td class="num" id="gpus-bound">13</td>`,
			},
			wantAccessOf: map[string]Access{"nodes": AccessNotPermitted, "pods": AccessWatching},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clients, dyn := fakeClients(t, tc.denied, cluster(t)...)
			s := startServer(t, clients, Options{})
			code, body := get(t, s.Handler(), tc.path)
			require.Equal(t, http.StatusOK, code)
			for _, w := range tc.want {
				require.Contains(t, body, w)
			}
			for _, r := range s.Snapshot().Resources {
				if want, ok := tc.wantAccessOf[r.Resource.Resource]; ok {
					require.Equal(t, want, r.Access, r.Resource.String())
				}
			}
			for _, a := range dyn.Actions() {
				require.False(t, tc.denied[a.GetResource().Resource], "a denied resource was read: %v", a)
			}
		})
	}
}

// TestNamespace: -n watches one namespace only (and the nodes, which are in none).
func TestNamespace(t *testing.T) {
	t.Parallel()
	clients, dyn := fakeClients(t, nil, cluster(t)...)
	s := startServer(t, clients, Options{Namespace: "team-b"})
	_, body := get(t, s.Handler(), "/")
	require.Contains(t, body, "team-b/eval")
	require.NotContains(t, body, "ml/train")
	require.Contains(t, body, `<dd id="gpus-free">at most 24</dd>`, "other namespaces' pods are not seen")
	for _, a := range dyn.Actions() {
		if a.GetResource() == nodesResource {
			require.Empty(t, a.GetNamespace(), "%v", a)
			continue
		}
		require.Equal(t, "team-b", a.GetNamespace(), "%v", a)
	}
}

// TestWatchesOnly: the server lists each watched resource once and then only watches, however
// many pages are viewed; it never touches resources no definition names.
func TestWatchesOnly(t *testing.T) {
	t.Parallel()
	clients, dyn := fakeClients(t, nil, cluster(t)...)
	s := startServer(t, clients, Options{})
	before := len(dyn.Actions())
	for range 5 {
		get(t, s.Handler(), "/")
		get(t, s.Handler(), "/workloads/jobset.x-k8s.io/JobSet/ml/train")
		get(t, s.Handler(), "/topology")
		get(t, s.Handler(), "/metrics")
	}
	require.Equal(t, before, len(dyn.Actions()), "page views made API calls")
	lists := map[string]int{}
	for _, a := range dyn.Actions() {
		require.Contains(t, []string{"list", "watch"}, a.GetVerb())
		if a.GetVerb() == "list" {
			lists[a.GetResource().Resource]++
		}
	}
	require.Equal(t, map[string]int{"jobsets": 1, "jobs": 1, "pods": 1, "podgroups": 1, "leaderworkersets": 1, "nodes": 1, "events": 1}, lists)
}

// TestEvents: a change in the cluster reaches an open page as an update event with the page's
// re-rendered part.
func TestEvents(t *testing.T) {
	t.Parallel()
	clients, dyn := fakeClients(t, nil, jobSetObjects(t, "ml", "train", 2, "Pending")...)
	s := startServer(t, clients, Options{})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	tests := map[string]struct{ query, first, after string }{
		"overview": {query: "view=overview&namespace=ml", first: `data-state="Pending"`, after: `data-key="jobset.x-k8s.io/JobSet/ml/train" data-state="Running"`},
		"workload": {query: "view=workload&group=jobset.x-k8s.io&kind=JobSet&namespace=ml&name=train", first: `data-pod="train-leader-0-0" data-phase="Pending"`, after: `data-pod="train-leader-0-0" data-phase="Running"`},
	}
	streams := map[string]*bufio.Reader{}
	for name, tc := range tests {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events?"+tc.query, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		streams[name] = bufio.NewReader(resp.Body)
		require.Contains(t, nextUpdate(t, streams[name]), tc.first, name)
	}
	for _, p := range []string{"train-leader-0-0", "train-workers-0-0", "train-workers-1-0"} {
		running := pod("ml", "train", strings.Split(p, "-")[1], int(p[len(p)-3]-'0'), "Running")
		running.SetResourceVersion("2")
		_, err := dyn.Resource(podsResource).Namespace("ml").UpdateStatus(ctx, running, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	for name, tc := range tests {
		for {
			data := nextUpdate(t, streams[name])
			if strings.Contains(data, tc.after) {
				break
			}
		}
	}
}

// nextUpdate reads the data of the next update event.
func nextUpdate(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var data strings.Builder
	event := ""
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			t.Fatal("the event stream ended")
		}
		require.NoError(t, err)
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data.WriteString(strings.TrimPrefix(line, "data: ") + "\n")
		case line == "" && event == "update":
			return data.String()
		case line == "":
			data.Reset()
		}
	}
}

// TestUnreachable: a cluster that cannot be reached is a message in the page.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	clients, err := ClientsFor(&rest.Config{Host: "https://127.0.0.1:1"})
	require.NoError(t, err)
	s := New(clients, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Run(ctx) }()
	waitFor(t, s, func(snap *Snapshot) bool { return snap.Problem != "" })
	_, body := get(t, s.Handler(), "/")
	require.Contains(t, body, "cannot reach the cluster at https://127.0.0.1:1")
	require.Contains(t, body, "Loading")
	code, body := get(t, s.Handler(), "/workloads/jobset.x-k8s.io/JobSet/ml/train")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "cannot reach the cluster")
}

// TestGangOfAnotherController: a PodGroup of a gang's name that another controller made (not
// labelled as workmap's) says who made it on the workload's page.
func TestGangOfAnotherController(t *testing.T) {
	t.Parallel()
	pg := podGroup("ml", "train-all", 3, "Running", 3)
	pg.SetLabels(map[string]string{grouper.ManagedByLabel: "training-operator"})
	clients, _ := fakeClients(t, nil, append(jobSetObjects(t, "ml", "train", 1, "Running"), pg)...)
	s := startServer(t, clients, Options{})
	code, body := get(t, s.Handler(), "/workloads/jobset.x-k8s.io/JobSet/ml/train")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<td>train-all <span class="why" data-made-by="training-operator">(made by training-operator)</span></td>`)
}

// TestPodEnvironmentNotCached: pods are cached without the values of their environment.
func TestPodEnvironmentNotCached(t *testing.T) {
	t.Parallel()
	clients, _ := fakeClients(t, nil, jobSetObjects(t, "ml", "train", 1, "Running")...)
	s := startServer(t, clients, Options{})
	pods := s.watcher.objects(podsResource)
	require.NotEmpty(t, pods)
	for _, p := range pods {
		raw, err := json.Marshal(p.Object)
		require.NoError(t, err)
		require.NotContains(t, string(raw), "s3cr3t-env-value")
		require.Contains(t, string(raw), `"name":"TOKEN"`)
	}
}

// TestControlledWorkloadNotASecondRow: a workload that another workload controls (a
// RayService's RayCluster; here a LeaderWorkerSet a JobSet controls) is part of it: no row of
// its own beside its owner, its pods not counted twice. One nobody controls has its row.
func TestControlledWorkloadNotASecondRow(t *testing.T) {
	t.Parallel()
	lws := func(name string) *unstructured.Unstructured {
		return object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "ml", name, nil, map[string]any{"spec": map[string]any{
			"leaderWorkerTemplate": map[string]any{"size": int64(2), "workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "vllm"}}}}},
		}})
	}
	owned := lws("part-of-train")
	owned.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "ml/JobSet/train", Controller: ptr.To(true)}})
	objs := append(jobSetObjects(t, "ml", "train", 2, "Running"), owned, lws("alone"))
	clients, _ := fakeClients(t, nil, objs...)
	s := startServer(t, clients, Options{})
	code, body := get(t, s.Handler(), "/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-key="jobset.x-k8s.io/JobSet/ml/train"`)
	require.Contains(t, body, `data-key="leaderworkerset.x-k8s.io/LeaderWorkerSet/ml/alone"`)
	require.NotContains(t, body, `data-key="leaderworkerset.x-k8s.io/LeaderWorkerSet/ml/part-of-train"`)
}

// TestKindInstalledAfterStart: a CRD installed after the server started (here LeaderWorkerSet)
// is watched, and its workloads shown, without a restart.
func TestKindInstalledAfterStart(t *testing.T) {
	t.Parallel()
	lws := object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "ml", "serve", nil, map[string]any{"spec": map[string]any{
		"leaderWorkerTemplate": map[string]any{"size": int64(2), "workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "vllm"}}}}},
	}})
	clients, _ := fakeClients(t, nil, append(jobSetObjects(t, "ml", "train", 1, "Running"), lws)...)
	disc := clients.Discovery.(*fakediscovery.FakeDiscovery)
	all := disc.Resources
	disc.Resources = slices.DeleteFunc(slices.Clone(all), func(l *metav1.APIResourceList) bool { return l.GroupVersion == "leaderworkerset.x-k8s.io/v1" })
	s := startServer(t, clients, Options{Replan: 50 * time.Millisecond})
	key := Key{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet", Namespace: "ml", Name: "serve"}
	_, shown := s.Snapshot().Lookup(key)
	require.False(t, shown, "not installed yet")

	disc.Resources = all // the CRD is installed
	waitFor(t, s, func(snap *Snapshot) bool { _, ok := snap.Lookup(key); return ok })
	_, ok := s.Snapshot().Lookup(Key{Group: "jobset.x-k8s.io", Kind: "JobSet", Namespace: "ml", Name: "train"})
	require.True(t, ok, "the workloads shown before are still shown")
}

// TestDefinitionAppliedAfterStart: a WorkloadDefinition applied after the server started (here
// the LeaderWorkerSet one, its CRD installed all along) makes its kind's workloads shown,
// without a restart.
func TestDefinitionAppliedAfterStart(t *testing.T) {
	t.Parallel()
	lws := object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "ml", "serve", nil, map[string]any{"spec": map[string]any{
		"leaderWorkerTemplate": map[string]any{"size": int64(2), "workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "vllm"}}}}},
	}})
	clients, _ := fakeClients(t, nil, append(jobSetObjects(t, "ml", "train", 1, "Running"), lws)...)
	full, err := catalog.Registry()
	require.NoError(t, err)
	without := definitions.NewRegistry()
	for _, d := range full.All() {
		if d.GroupKind.Kind != "LeaderWorkerSet" {
			without.Add(d)
		}
	}
	var current atomic.Pointer[definitions.Registry]
	current.Store(without)
	s := startServer(t, clients, Options{Replan: 50 * time.Millisecond, Definitions: func(context.Context) (*definitions.Registry, error) { return current.Load(), nil }})
	key := Key{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet", Namespace: "ml", Name: "serve"}
	_, shown := s.Snapshot().Lookup(key)
	require.False(t, shown, "no definition describes the kind yet")

	current.Store(full) // the definition is applied
	waitFor(t, s, func(snap *Snapshot) bool { _, ok := snap.Lookup(key); return ok })
}
