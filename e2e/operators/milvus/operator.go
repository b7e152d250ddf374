// Package milvus runs the real Milvus operator (zilliztech/milvus-operator) in a local test
// control plane, with the dependencies its health checks probe (an etcd and an S3 endpoint),
// and holds the live tests of the Milvus catalog definition against it.
package milvus

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/e2e/harness"
)

// Resource is the Milvus API resource.
var Resource = schema.GroupVersionResource{Group: "milvus.io", Version: "v1beta1", Resource: "milvuses"}

// GroupKind is the Milvus kind.
var GroupKind = schema.GroupKind{Group: "milvus.io", Kind: "Milvus"}

// Labels the operator puts on every Deployment and pod of a Milvus component.
const (
	InstanceLabel  = "app.kubernetes.io/instance"
	NameLabel      = "app.kubernetes.io/name"
	ComponentLabel = "app.kubernetes.io/component"
)

// PodSelector selects the component pods of the Milvus named name (its dependencies' pods,
// in-cluster Helm releases, carry their own release names).
func PodSelector(name string) string {
	return InstanceLabel + "=" + name + "," + NameLabel + "=milvus"
}

// Tool is the operator's tool module (hack/tools/milvus-operator), which hack/build-operator.sh milvus-operator
// builds into the milvus-operator folder of the control plane's bin folder.
const Tool = "milvus-operator"

// binary is the manager in the Tool folder. It reads its config
// templates and Helm default values from config/assets/ relative to its working directory,
// so it runs in its own folder, where they lie (crds/ lies there too).
const binary = Tool + "/manager"

// SyncInterval is how often the operator re-reads every Milvus (its informers' resync
// period, --sync-interval; 600 s by default). Each pass also recomputes the Milvus' status
// from its Deployments: the controller does not watch them, so this bounds how late the
// status follows the pods. The dependency probes run on a fixed 30 s loop of their own.
const SyncInterval = 2 * time.Second

// DependencyProbeInterval is the operator's fixed period (unhealthySyncInterval) for
// probing etcd, storage and the message stream; the Milvus components are created only
// once a probe has found all three ready, so a new Milvus waits up to this long first.
const DependencyProbeInterval = 30 * time.Second

// Start installs the Milvus CRDs and runs the operator, and waits until it is healthy. Leader
// election and metrics are off. The operator's webhooks are not served: the manager binds
// them to the fixed port 9443, and they only default (the reconciler applies the same
// defaults itself before anything else) and validate; the operator runs without them by
// default (--webhook=false). --tool-image is given so that the operator does not look up
// its own Deployment (there is none) for the image of the config init container.
func Start(ctx context.Context, t harness.T, c *harness.Cluster) {
	t.Helper()
	dir := filepath.Dir(c.Bin(binary))
	c.InstallCRDs(filepath.Join(dir, "crds"))
	probePort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c.RunIn(dir, "milvus-operator", binary, []string{"KUBECONFIG=" + c.AdminKubeconfig("milvus-operator")},
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address="+harness.HostPort(probePort),
		"--sync-interval="+strconv.Itoa(int(SyncInterval/time.Second)),
		"--tool-image=milvusdb/milvus-operator:v1.3.7",
	)
	if err := waitReady(ctx, c, "http://"+harness.HostPort(probePort)+"/readyz"); err != nil {
		t.Fatalf("the Milvus operator never became ready: %v", err)
	}
}

// waitReady polls a health endpoint until it answers OK.
func waitReady(ctx context.Context, c *harness.Cluster, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	var last error
	err := harness.Poll(ctx, 200*time.Millisecond, func() (bool, error) {
		if err := c.CheckProcesses(); err != nil {
			return false, err
		}
		resp, err := client.Get(url)
		if last = err; err != nil {
			return false, nil
		}
		resp.Body.Close()
		last = fmt.Errorf("%s: %s", url, resp.Status)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last answer: %v)", err, last)
	}
	return nil
}
