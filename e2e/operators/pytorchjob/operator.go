// Package pytorchjob runs the real Kubeflow training-operator (v1, PyTorchJob only) in the
// local control plane of the e2e tests, and holds the live tests of workmap's PyTorchJob
// definition against it: the trees workmap resolves from what the operator creates, the
// states it reads from the operator's conditions, and workmap-scheduler's gangs of its pods.
package pytorchjob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/e2e/harness"
)

// Resource is the PyTorchJob API resource.
var Resource = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

// GroupKind is the PyTorchJob kind.
var GroupKind = schema.GroupKind{Group: "kubeflow.org", Kind: "PyTorchJob"}

// Tool is the operator's tool module (hack/tools/training-operator), which hack/build-operator.sh training-operator
// builds into the training-operator folder of the control plane's bin folder.
const Tool = "training-operator"

// Namespace is where the operator keeps its webhook certificate Secret (the namespace it is
// deployed in, MY_POD_NAMESPACE; kubeflow is its default).
const Namespace = "kubeflow"

// webhookSecret is the Secret the operator's certificate rotator fills (--webhook-secret-name);
// it must exist before the operator starts.
const webhookSecret = "training-operator-webhook-cert"

// rotatorCertFile is where the operator's certificate rotator expects the webhook Secret
// mounted: it waits for this file (it only checks that it exists) before it starts any
// controller, and the path is not configurable.
const rotatorCertFile = "/tmp/k8s-webhook-server/serving-certs/tls.crt"

// Options say how the operator runs.
type Options struct {
	// GangSchedulerName, when set, is --gang-scheduler-name: the operator then creates a
	// scheduler-plugins PodGroup (scheduling.x-k8s.io) per job, labels its pods with it and
	// sets their schedulerName to this one where the template has none.
	GangSchedulerName string
}

// Start installs the PyTorchJob CRD and runs the training-operator with only its PyTorchJob
// controller and webhook, and waits until the webhook answers.
func Start(ctx context.Context, t harness.T, c *harness.Cluster) {
	t.Helper()
	StartWith(ctx, t, c, Options{})
}

// StartWith is Start with options.
//
// The operator always runs its own certificate rotation (there is no flag to turn it off):
// it writes a certificate for <service>.<namespace>.svc into its Secret, injects its CA into
// the webhook configuration named validator.training-operator.kubeflow.org, and waits for
// its Secret to be mounted at a fixed path. Here the webhook server (controller-runtime's,
// reading tls.crt and tls.key from $TMPDIR/k8s-webhook-server/serving-certs) serves the
// harness's certificate for 127.0.0.1 instead, and the webhook configuration keeps the
// name it has in the release manifests, so the rotator finds nothing to inject into.
func StartWith(ctx context.Context, t harness.T, c *harness.Cluster, opts Options) {
	t.Helper()
	c.InstallCRDs(c.Bin(Tool + "/crds"))
	hooks := c.PrepareWebhooks([]string{c.Bin(Tool + "/webhooks.yaml")}, nil)

	tmp := filepath.Join(c.Dir, "training-operator-tmp")
	certDir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.Symlink(filepath.Join(hooks.CertDir, f), filepath.Join(certDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	ensureRotatorCertFile(t, filepath.Join(hooks.CertDir, "tls.crt"))

	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, err = c.Kube.CoreV1().Secrets(Namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: webhookSecret, Namespace: Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	args := []string{
		"--enable-scheme=pytorchjob",
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--webhook-server-port=" + strconv.Itoa(hooks.Port),
	}
	if opts.GangSchedulerName != "" {
		args = append(args, "--gang-scheduler-name="+opts.GangSchedulerName)
	}
	c.Run("training-operator", Tool+"/manager", []string{
		"KUBECONFIG=" + c.AdminKubeconfig("training-operator"),
		"MY_POD_NAMESPACE=" + Namespace,
		"TMPDIR=" + tmp,
	}, args...)
	hooks.Install()
	if err := waitForWebhook(ctx, c); err != nil {
		t.Fatalf("the training-operator's PyTorchJob webhook never answered: %v", err)
	}
}

// ensureRotatorCertFile creates the file the operator's certificate rotator waits for when
// it is absent (removing it again at the end), with the harness's certificate in it.
func ensureRotatorCertFile(t harness.T, from string) {
	t.Helper()
	if _, err := os.Stat(rotatorCertFile); err == nil {
		return
	}
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(rotatorCertFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rotatorCertFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(rotatorCertFile) })
}

// waitForWebhook dry-runs the create of a valid PyTorchJob until the operator's validating
// webhook admits it (the webhook fails closed, so nothing passes before it serves), then
// checks that it rejects an invalid one.
func waitForWebhook(ctx context.Context, c *harness.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	probe := func(masters int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
			"metadata": map[string]any{"name": "webhook-probe", "namespace": metav1.NamespaceDefault},
			"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": map[string]any{
				"replicas": masters,
				"template": map[string]any{"spec": map[string]any{
					"containers": []any{map[string]any{"name": "pytorch", "image": "probe"}},
				}},
			}}},
		}}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last error
	err := harness.Poll(ctx, 200*time.Millisecond, func() (bool, error) {
		if err := c.CheckProcesses(); err != nil {
			return false, err
		}
		_, last = c.Dynamic.Resource(Resource).Namespace(metav1.NamespaceDefault).Create(ctx, probe(1), dryRun)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last answer: %v)", err, last)
	}
	// The webhook allows exactly one Master.
	_, err = c.Dynamic.Resource(Resource).Namespace(metav1.NamespaceDefault).Create(ctx, probe(2), dryRun)
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return errors.Join(errors.New("a PyTorchJob with 2 Masters was not rejected"), err)
	}
	return nil
}
