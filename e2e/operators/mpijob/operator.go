// Package mpijob runs the real Kubeflow MPI operator (MPIJob v2beta1) in the local control
// plane of the e2e tests, and holds the live tests of workmap's MPIJob definition against
// it: the trees workmap resolves from what the operator creates (a launcher Job and worker
// pods), the states it reads from the operator's conditions, and workmap-scheduler's gangs
// of its pods.
package mpijob

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/e2e/harness"
)

// Resource is the MPIJob API resource.
var Resource = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}

// GroupKind is the MPIJob kind.
var GroupKind = schema.GroupKind{Group: "kubeflow.org", Kind: "MPIJob"}

// Tool is the operator's tool module (hack/tools/mpi-operator), which hack/build-operator.sh mpi-operator
// builds into the mpi-operator folder of the control plane's bin folder.
const Tool = "mpi-operator"

// lockNamespace holds the operator's leader-election Lease (--lock-namespace; the operator
// always runs leader election).
const lockNamespace = "mpi-operator"

// Options say how the operator runs.
type Options struct {
	// GangSchedulerName, when set, is --gang-scheduling: the operator then creates a
	// scheduler-plugins PodGroup (scheduling.x-k8s.io) per job, labels its pods with it and
	// sets their schedulerName to this one.
	GangSchedulerName string
}

// Start installs the MPIJob CRD, runs the MPI operator and waits until it holds its
// leader-election Lease (it starts its controller then).
//
// The operator serves a leader-election health check on port 8080 of every interface,
// which no flag changes: two operators cannot run on one host at once.
func Start(ctx context.Context, t harness.T, c *harness.Cluster) {
	t.Helper()
	StartWith(ctx, t, c, Options{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, t harness.T, c *harness.Cluster, opts Options) {
	t.Helper()
	c.InstallCRDs(c.Bin(Tool + "/crds"))
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: lockNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	args := []string{
		"--lock-namespace=" + lockNamespace,
		"--monitoring-port=0",
		// The default client rate (5 QPS) makes every job wait on the operator's throttle.
		"--kube-api-qps=" + strconv.Itoa(50),
		"--kube-api-burst=" + strconv.Itoa(100),
	}
	if opts.GangSchedulerName != "" {
		args = append(args, "--gang-scheduling="+opts.GangSchedulerName)
	}
	c.Run("mpi-operator", Tool+"/manager", []string{"KUBECONFIG=" + c.AdminKubeconfig("mpi-operator")}, args...)
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	err = harness.Poll(wait, 200*time.Millisecond, func() (bool, error) {
		if err := c.CheckProcesses(); err != nil {
			return false, err
		}
		lease, err := c.Kube.CoordinationV1().Leases(lockNamespace).Get(wait, "mpi-operator", metav1.GetOptions{})
		last = err
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
	if err != nil {
		t.Fatalf("the MPI operator never took its leader-election Lease: %v (last: %v)", err, last)
	}
}
