package webview_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/internal/needs"
	"github.com/workmap/workmap/webview"
)

const (
	example     = "leader-workers"
	exampleRow  = `tr[data-key="jobset.x-k8s.io/JobSet/default/leader-workers"]`
	examplePage = "/workloads/jobset.x-k8s.io/JobSet/default/leader-workers"
)

// The cluster's topology: block b1 holds racks r1 and r2, block b2 rack r3, each rack two
// nodes of 8 GPUs (48 GPUs).
var (
	topologyLevels = []webview.TopologyLevel{{Name: "block", NodeLabel: "example.com/block"}, {Name: "rack", NodeLabel: "example.com/rack"}}
	topologyNodes  = func() []harness.Node {
		var out []harness.Node
		for i, rack := range []string{"r1", "r1", "r2", "r2", "r3", "r3"} {
			block := "b1"
			if rack == "r3" {
				block = "b2"
			}
			out = append(out, harness.Node{Name: fmt.Sprintf("gpu-node-%d", i), GPUs: 8, Labels: map[string]string{"example.com/block": block, "example.com/rack": rack}})
		}
		return out
	}()
)

// TestBrowser drives Chromium over `workmap serve` on the local control plane with the real
// JobSet controller and workmap-scheduler (six 8-GPU nodes in two blocks of racks): the example
// JobSet appears in the overview with 12 GPUs bound of 48, its page shows the tree and the
// gang, and the same page document follows its pods from running to completed; the topology
// page draws the racks with the GPUs each workload holds and a gang that waits for a rack with
// the scheduler's reason. It saves a screenshot of each page in artifacts/.
func TestBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	c := harness.Start(t, harness.Options{JobSet: true, Nodes: topologyNodes})
	levels := make([]harness.TopologyLevel, 0, len(topologyLevels))
	for _, l := range topologyLevels {
		levels = append(levels, harness.TopologyLevel{Name: l.Name, NodeLabel: l.NodeLabel})
	}
	c.StartWorkmapScheduler(harness.SchedulerOptions{TopologyLevels: levels})
	base := serve(t, c.Config)
	browser := newBrowser(t, chromium)
	ctx := context.Background()

	t.Run("the overview shows the example JobSet with 12 GPUs as it appears", func(t *testing.T) {
		require.NoError(t, chromedp.Do(browser,
			chromedp.Navigate(base+"/"),
			chromedp.WaitVisible(`#connection[data-state="live"]`),
			chromedp.Evaluate[chromedp.Void](`window.workmapMarker = "same document"`),
		))
		js, err := harness.ExampleJobSet(example, harness.SchedulerName, 0)
		require.NoError(t, err)
		_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
		require.NoError(t, err)

		waitFor(t, browser, `document.querySelector('`+exampleRow+` td.gpus')?.textContent === "12"`)
		waitFor(t, browser, `document.querySelector('`+exampleRow+`')?.dataset.state === "Running"`)
		waitFor(t, browser, `document.querySelector('`+exampleRow+` td.pods')?.textContent === "3/3"`)
		waitFor(t, browser, `document.querySelector('`+exampleRow+` td.gang')?.textContent.startsWith("Running 3/3")`)
		waitFor(t, browser, `document.querySelector('#gpus-bound')?.textContent === "12"`)
		require.Equal(t, "0", text(t, browser, `#gpus-waiting`))
		require.Equal(t, "48 GPUs on 6 nodes", text(t, browser, `#gpus-capacity`))
		require.Equal(t, "36", text(t, browser, `#gpus-free`))
		require.Equal(t, "same document", marker(t, browser), "the page was reloaded")
		screenshot(t, browser, "serve-overview.png")
	})

	t.Run("the workload page shows the tree and the gang, and follows the pods to completion", func(t *testing.T) {
		require.NoError(t, chromedp.Do(browser,
			chromedp.Navigate(base+examplePage),
			chromedp.WaitVisible(`#connection[data-state="live"]`),
			chromedp.Evaluate[chromedp.Void](`window.workmapMarker = "same document"`),
		))
		waitFor(t, browser, `document.querySelectorAll('li.pod[data-phase="Running"]').length === 3`)
		waitFor(t, browser, `document.querySelector('tr[data-podgroup="leader-workers-all"]')?.dataset.phase === "Running"`)
		require.Equal(t, "Running", attr(t, browser, `#status .state`, "state"))
		require.Equal(t, "12", text(t, browser, `#gpus`))
		require.Contains(t, text(t, browser, `li.role[data-role="leader"] > .node`), "4 GPUs")
		require.Contains(t, text(t, browser, `li.role[data-role="workers"] > .node`), "8 GPUs")
		require.Equal(t, 2, count(t, browser, `li.role[data-role="workers"] li.instance`))
		require.Contains(t, text(t, browser, `li.role[data-role="workers"] li.pod`), "on gpu-node-")
		require.Contains(t, text(t, browser, `tr[data-podgroup="leader-workers-all"]`), "3/3")
		require.Equal(t, 1, count(t, browser, `#unmatched-none`))
		screenshot(t, browser, "serve-workload.png")

		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + example})
		require.NoError(t, err)
		require.Len(t, pods.Items, 3)
		for _, p := range pods.Items {
			require.NoError(t, c.SetPodOutcome(ctx, "default", p.Name, corev1.PodSucceeded))
		}
		waitFor(t, browser, `document.querySelectorAll('li.pod[data-phase="Succeeded"]').length === 3`)
		waitFor(t, browser, `document.querySelector('#status .state')?.dataset.state === "Completed"`)
		require.Equal(t, "same document", marker(t, browser), "the page was reloaded")
		screenshot(t, browser, "serve-workload-completed.png")
	})

	t.Run("metrics of the example", func(t *testing.T) {
		families := webview.Scrape(t, base+"/metrics")
		labels := map[string]string{"kind": "JobSet", "namespace": "default", "name": example}
		tests := map[string]struct {
			extra map[string]string
			want  float64
		}{
			"workmap_workload_gpus":          {want: 12},
			"workmap_workload_pods_expected": {want: 3},
			"workmap_workload_pods_ready":    {want: 0},
			"workmap_workload_pods":          {extra: map[string]string{"phase": "Succeeded"}, want: 3},
			"workmap_workload_state":         {extra: map[string]string{"state": "Completed"}, want: 1},
		}
		for name, tc := range tests {
			want := map[string]string{}
			for k, v := range labels {
				want[k] = v
			}
			for k, v := range tc.extra {
				want[k] = v
			}
			v, ok := webview.Sample(families[name], want)
			require.True(t, ok, "%s%v missing", name, want)
			require.Equal(t, tc.want, v, "%s%v", name, want)
		}
		require.Len(t, families["workmap_workload_state"].GetMetric(), 1, "one state per workload")
	})

	t.Run("the topology page draws the racks with each workload's GPUs and the gang that waits", func(t *testing.T) {
		// The example completed: its gang says so, not its PodGroup's counts.
		require.NoError(t, chromedp.Do(browser, chromedp.Navigate(base+"/")))
		waitFor(t, browser, `document.querySelector('`+exampleRow+` td.gang')?.textContent === "Completed"`)
		waitFor(t, browser, `document.querySelector('#gpus-bound')?.textContent === "0"`)

		require.Equal(t, "/topology", attrOf(t, browser, `header #nav-topology`, "href"), "linked from the header")
		require.NoError(t, chromedp.Do(browser,
			chromedp.Navigate(base+"/topology"),
			chromedp.WaitVisible(`#connection[data-state="live"]`),
			chromedp.Evaluate[chromedp.Void](`window.workmapMarker = "same document"`),
		))
		waitFor(t, browser, `document.querySelectorAll('div.node[data-node]').length === 6`)
		require.Equal(t, 3, count(t, browser, `section[data-level="rack"]`))
		require.Equal(t, 2, count(t, browser, `section[data-level="block"]`))
		require.Equal(t, 2, count(t, browser, `section[data-domain="b1"] section[data-level="rack"]`))

		// One JobSet must share a rack (12 GPUs), one asks for a rack no rack can hold (6 pods
		// of 4 GPUs, 24 > 16), one goes anywhere (8 GPUs).
		create := func(name string, workers int64, rack bool) {
			js, err := harness.ExampleJobSet(name, harness.SchedulerName, workers)
			require.NoError(t, err)
			if rack {
				js.SetAnnotations(map[string]string{"workmap.dev/topology-required": "rack"})
			}
			_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		create("train-rack", 0, true)
		create("train-big", 5, true)
		create("serve-any", 1, false)
		train := `a[data-workload="jobset.x-k8s.io/JobSet/default/train-rack"]`
		waitFor(t, browser, `document.querySelectorAll('`+train+` rect.used').length === 12`)
		waitFor(t, browser, `document.querySelectorAll('a[data-workload="jobset.x-k8s.io/JobSet/default/serve-any"] rect.used').length === 8`)
		racks, err := chromedp.Run(browser, chromedp.Evaluate[int](`new Set([...document.querySelectorAll('`+train+`')].map(a => a.closest('section[data-level="rack"]').dataset.domain)).size`))
		require.NoError(t, err)
		require.Equal(t, 1, racks, "the gang shares one rack")
		waitFor(t, browser, `document.querySelector('li[data-workload="jobset.x-k8s.io/JobSet/default/train-rack"]')?.textContent.includes("placed in rack r")`)
		require.Equal(t, "/workloads/jobset.x-k8s.io/JobSet/default/train-rack", attrOf(t, browser, train, "href"))

		big := `tr[data-podgroup="default/train-big-all"]`
		waitFor(t, browser, `document.querySelector('`+big+` td.reason')?.textContent.includes("no rack has room for 6 pods")`)
		require.Equal(t, "one rack", text(t, browser, big+` td.asks`))
		require.Contains(t, text(t, browser, big+` td.reason`), "the closest, rack r")
		require.Equal(t, "28", text(t, browser, `#topology-free`), "48 GPUs, 12 + 8 held")
		require.Equal(t, "same document", marker(t, browser), "the page was reloaded")
		screenshot(t, browser, "serve-topology.png")
	})

	t.Run("the overview says why a gang waits, and a long list of a role's instances folds", func(t *testing.T) {
		// 1 leader and 12 workers of 4 GPUs: 52 GPUs on a cluster of 48.
		js, err := harness.ExampleJobSet("many", harness.SchedulerName, 12)
		require.NoError(t, err)
		_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
		require.NoError(t, err)
		row := `tr[data-key="jobset.x-k8s.io/JobSet/default/many"]`
		require.NoError(t, chromedp.Do(browser, chromedp.Navigate(base+"/")))
		waitFor(t, browser, `document.querySelector('`+row+` td.gang .gang-why')?.textContent.includes("can never fit this cluster as it is")`)
		require.Contains(t, text(t, browser, row+` td.gang .gang-why`), "nvidia.com/gpu 52 (all 6 nodes together have 48)")
		screenshot(t, browser, "serve-gang-why.png")

		// The page lists the recent events of the workload's pods: the scheduler's reason.
		page := base + "/workloads/jobset.x-k8s.io/JobSet/default/many"
		require.Eventually(t, func() bool {
			require.NoError(t, chromedp.Do(browser, chromedp.Navigate(page)))
			ok, err := chromedp.Run(browser, chromedp.Evaluate[bool](`!!document.querySelector('#events')?.textContent.includes("FailedScheduling")`))
			return err == nil && ok
		}, 20*time.Second, time.Second, "the workload page lists its pods' FailedScheduling events")
		require.Contains(t, text(t, browser, `#events`), "can never fit this cluster as it is")
		workers := `li.role[data-role="workers"]`
		waitFor(t, browser, `document.querySelectorAll('`+workers+` li.instance').length === 12`)
		require.Equal(t, 10, count(t, browser, workers+` > ul > li.instance`), "the first 10 instances")
		require.Equal(t, "and 2 more", text(t, browser, workers+` details.more-instances > summary`))
		visible := `[...document.querySelectorAll('` + workers + ` li.instance')].filter(li => li.checkVisibility()).length`
		waitFor(t, browser, visible+` === 10`)
		// Clicked in the page, again if a live update replaced the list meanwhile: a click by
		// node id fails when the node it found was replaced.
		waitFor(t, browser, `(() => { const d = document.querySelector('`+workers+` details.more-instances'); if (d && !d.open) d.querySelector('summary').click(); return `+visible+` === 12; })()`)
		screenshot(t, browser, "serve-folded.png")
		require.NoError(t, c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Delete(ctx, "many", metav1.DeleteOptions{}))
	})

	t.Run("a kind the user cannot list is shown as not permitted", func(t *testing.T) {
		// A user who may read pods, Jobs and PodGroups, but not JobSets.
		_, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "workloads-but-jobsets"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"scheduling.x-k8s.io"}, Resources: []string{"podgroups"}, Verbs: []string{"get", "list", "watch"}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "limited"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "workloads-but-jobsets"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "limited", APIGroup: "rbac.authorization.k8s.io"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		limited := rest.CopyConfig(c.Config)
		limited.Impersonate = rest.ImpersonationConfig{UserName: "limited"}
		limitedBase := serve(t, limited)

		require.NoError(t, chromedp.Do(browser, chromedp.Navigate(limitedBase+"/")))
		waitFor(t, browser, `document.querySelector('tr[data-kind="JobSet.jobset.x-k8s.io"]')?.dataset.access === "not permitted"`)
		require.Contains(t, text(t, browser, `tr[data-kind="JobSet.jobset.x-k8s.io"] td.access`), "cannot list jobsets.jobset.x-k8s.io in any namespace: forbidden")
		require.Zero(t, count(t, browser, exampleRow))
		screenshot(t, browser, "serve-not-permitted.png")

		require.NoError(t, chromedp.Do(browser, chromedp.Navigate(limitedBase+examplePage)))
		require.Contains(t, text(t, browser, `#missing`), "JobSet.jobset.x-k8s.io is not permitted")
	})

	t.Run("the view ClusterRole", func(t *testing.T) {
		// Kubernetes' own read-only role: pods, Jobs, Deployments, StatefulSets, ... but no
		// custom kinds unless their CRDs aggregate into it (JobSet's do not here).
		_, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "viewer", APIGroup: "rbac.authorization.k8s.io"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		viewer := rest.CopyConfig(c.Config)
		viewer.Impersonate = rest.ImpersonationConfig{UserName: "viewer"}
		viewerBase := serve(t, viewer)
		access := func(kind string) string {
			for _, m := range webview.Scrape(t, viewerBase+"/metrics")["workmap_kind_access"].GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["kind"] == kind {
					return labels["access"]
				}
			}
			return ""
		}
		require.Eventually(t, func() bool { return access("JobSet") == "not permitted" }, 30*time.Second, 200*time.Millisecond,
			"JobSets are not in the view role: shown as not permitted")
		require.NoError(t, chromedp.Do(browser, chromedp.Navigate(viewerBase+"/")))
		waitFor(t, browser, `document.querySelector('tr[data-kind="JobSet.jobset.x-k8s.io"]')?.dataset.access === "not permitted"`)
		require.Contains(t, text(t, browser, `h1`), "Workloads", "the overview, not an error page")
		// Nodes are not in the view role either: the capacity is unknown, not 0.
		require.Equal(t, "false", attr(t, browser, `#gpus-capacity`, "known"))
		require.Contains(t, text(t, browser, `#gpus-capacity`), "unknown")
		require.Equal(t, "unknown", text(t, browser, `#gpus-free`))
	})

	t.Run("a preempted gang's page says who preempted it, and when", func(t *testing.T) {
		jobSets := c.Dynamic.Resource(harness.JobSetResource).Namespace("default")
		for _, name := range []string{"train-rack", "train-big", "serve-any"} {
			require.NoError(t, jobSets.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}))
		}
		require.Eventually(t, func() bool {
			pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
			return err == nil && len(pods.Items) == 0
		}, 60*time.Second, 200*time.Millisecond, "the cluster's 48 GPUs free")
		c.CreatePriorityClasses(ctx, map[string]int32{"low": 10, "high": 1000})
		create := func(name, priorityClass string, workers int64) {
			js, err := harness.ExampleJobSet(name, harness.SchedulerName, workers)
			require.NoError(t, err)
			rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
			for _, rj := range rjs {
				require.NoError(t, unstructured.SetNestedField(rj.(map[string]any), priorityClass, "template", "spec", "template", "spec", "priorityClassName"))
			}
			require.NoError(t, unstructured.SetNestedSlice(js.Object, rjs, "spec", "replicatedJobs"))
			_, err = jobSets.Create(ctx, js, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		create("batch", "low", 11) // 12 pods of 4 GPUs: every GPU
		page := base + "/workloads/jobset.x-k8s.io/JobSet/default/batch"
		require.NoError(t, chromedp.Do(browser, chromedp.Navigate(page), chromedp.WaitVisible(`#connection[data-state="live"]`)))
		gang := `tr[data-podgroup="batch-all"]`
		waitFor(t, browser, `document.querySelector('`+gang+`')?.dataset.phase === "Running"`)
		require.Equal(t, "10", text(t, browser, gang+` td.priority`))

		create("urgent", "high", 0)
		require.Eventually(t, func() bool {
			require.NoError(t, chromedp.Do(browser, chromedp.Navigate(page)))
			ok, err := chromedp.Run(browser, chromedp.Evaluate[bool](`!!document.querySelector('`+gang+` p.preempted')`))
			return err == nil && ok
		}, 60*time.Second, time.Second, "the gang's row says it was preempted")
		require.Contains(t, text(t, browser, gang+` p.preempted`), "last preempted by PodGroup default/urgent-all at 20")
		// The events are listed as the page was loaded (the gang's row follows live).
		require.Eventually(t, func() bool {
			require.NoError(t, chromedp.Do(browser, chromedp.Navigate(page)))
			ok, err := chromedp.Run(browser, chromedp.Evaluate[bool](`!!document.querySelector('#events')?.textContent.includes("Preempted by PodGroup default/urgent-all (priority 1000) to fit it whole: 12 pods on")`))
			return err == nil && ok
		}, 30*time.Second, time.Second, "the page lists the Preempted event of the gang's PodGroup")
		screenshot(t, browser, "serve-preempted.png")
	})
}

// serve runs `workmap serve` in-process for the config on a free loopback port until the
// test ends and returns its base URL.
func serve(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- webview.Serve(ctx, cfg, webview.Options{Registry: reg, TopologyLevels: topologyLevels}, l)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	base := "http://" + l.Addr().String()
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
	return base
}

// chromiumPath finds Chromium, or skips (fails under WORKMAP_REQUIRE_ALL).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	needs.Skip(t, "Chromium missing: install it (apt-get install -y chromium) to run the browser tests")
	return ""
}

// newBrowser starts headless Chromium with a fresh profile for the test.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	home := t.TempDir()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(home, "profile")),
		chromedp.WindowSize(1280, 900),
		chromedp.Env("HOME="+home),
	)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "starting Chromium")
	return ctx
}

// waitFor waits until a JavaScript expression is true in the page.
func waitFor(t *testing.T, browser context.Context, expression string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(browser, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expression, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0))); err != nil {
		html, _ := chromedp.Run(browser, chromedp.Evaluate[string](`document.getElementById("live")?.innerText ?? document.body.innerText`))
		t.Fatalf("waiting for %s: %v; the page shows:\n%s", expression, err, html)
	}
}

func text(t *testing.T, browser context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(browser, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, sel)))
	require.NoError(t, err)
	return strings.TrimSpace(s)
}

func attr(t *testing.T, browser context.Context, sel, data string) string {
	t.Helper()
	s, err := chromedp.Run(browser, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q)?.dataset[%q] ?? ""`, sel, data)))
	require.NoError(t, err)
	return s
}

func attrOf(t *testing.T, browser context.Context, sel, name string) string {
	t.Helper()
	s, err := chromedp.Run(browser, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q)?.getAttribute(%q) ?? ""`, sel, name)))
	require.NoError(t, err)
	return s
}

func count(t *testing.T, browser context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(browser, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	require.NoError(t, err)
	return n
}

func marker(t *testing.T, browser context.Context) string {
	t.Helper()
	s, err := chromedp.Run(browser, chromedp.Evaluate[string](`window.workmapMarker ?? ""`))
	require.NoError(t, err)
	return s
}

// screenshot saves a PNG of the whole page under artifacts/ at the repository's root.
func screenshot(t *testing.T, browser context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	root, err := harness.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "artifacts")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	t.Logf("screenshot: %s", filepath.Join(dir, name))
}
