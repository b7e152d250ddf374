// Package kuberay runs the real KubeRay operator (RayCluster, RayJob and RayService) in the
// local control plane of the e2e tests, and its tests check workmap's view of the operator's
// workloads and workmap-scheduler's gangs of their pods against what the cluster holds.
//
// The operator runs outside a cluster as its Deployment would run it in one, minus what a
// local control plane cannot or need not have: no leader election, no metrics endpoint, and
// no webhooks (KubeRay serves its only webhook, RayCluster validation, only when
// ENABLE_WEBHOOKS=true, which its default installation leaves off).
package kuberay

import (
	"context"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/e2e/harness"
)

// The KubeRay API resources and kinds.
var (
	RayClusterResource = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
	RayJobResource     = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayjobs"}
	RayServiceResource = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayservices"}

	RayClusterKind = schema.GroupKind{Group: "ray.io", Kind: "RayCluster"}
	RayJobKind     = schema.GroupKind{Group: "ray.io", Kind: "RayJob"}
	RayServiceKind = schema.GroupKind{Group: "ray.io", Kind: "RayService"}
)

// Tool is the operator's tool module (hack/tools/kuberay), which hack/build-operator.sh kuberay
// builds into the kuberay folder of the control plane's bin folder.
const Tool = "kuberay"

// manager is the operator binary in the Tool folder, its CRDs beside it.
const (
	manager = Tool + "/manager"
	crds    = Tool + "/crds"
)

// Options change how the operator runs.
type Options struct {
	// BatchScheduler is KubeRay's --batch-scheduler (volcano, yunikorn, scheduler-plugins,
	// kai-scheduler); empty runs it without one, as it is installed by default.
	BatchScheduler string
	// FeatureGates is KubeRay's --feature-gates, e.g. "RayMultiHostIndexing=true".
	FeatureGates string
}

// Start installs the KubeRay CRDs and runs the operator as installed by default, until the
// cluster stops.
func Start(ctx context.Context, t harness.T, c *harness.Cluster) {
	t.Helper()
	StartWith(ctx, t, c, Options{})
}

// StartWith installs the KubeRay CRDs and runs the operator with the given options, and
// waits until it is ready and reconciles.
func StartWith(ctx context.Context, t harness.T, c *harness.Cluster, opts Options) {
	t.Helper()
	c.Bin(manager) // skips (fails in CI) when `make controlplane` has not built it
	c.InstallCRDs(c.Bin(crds))
	probePort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--enable-leader-election=false",
		"--metrics-addr=0",
		"--health-probe-bind-address=" + harness.HostPort(probePort),
		"--log-stdout-encoder=console",
	}
	if opts.BatchScheduler != "" {
		args = append(args, "--batch-scheduler="+opts.BatchScheduler)
	}
	if opts.FeatureGates != "" {
		args = append(args, "--feature-gates="+opts.FeatureGates)
	}
	c.Run("kuberay-operator", manager, []string{"KUBECONFIG=" + c.AdminKubeconfig("kuberay-operator")}, args...)
	if err := waitReady(ctx, c, fmt.Sprintf("http://%s/readyz", harness.HostPort(probePort))); err != nil {
		t.Fatalf("KubeRay operator never became ready: %v", err)
	}
}

// waitReady waits until the operator answers its readiness probe and the API server serves
// the RayCluster resource (the CRDs are installed before it starts, so this is quick).
func waitReady(ctx context.Context, c *harness.Cluster, readyz string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	return harness.Poll(ctx, 200*time.Millisecond, func() (bool, error) {
		if err := c.CheckProcesses(); err != nil {
			return false, err
		}
		resp, err := client.Get(readyz)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, nil
		}
		_, err = c.Dynamic.Resource(RayClusterResource).Namespace(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}
