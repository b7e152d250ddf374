package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controllers the controller-manager runs: Jobs, Deployments (through ReplicaSets) and
// StatefulSets make pods (operators build on all three), the garbage collector deletes what
// owners leave behind, namespaces get their default ServiceAccount, kwok's node leases keep
// nodes Ready, aggregated ClusterRoles (view, edit) get their rules, and pods' device claims
// are made from their ResourceClaimTemplates.
var controllers = []string{
	"job-controller", "garbage-collector-controller", "serviceaccount-controller",
	"deployment-controller", "replicaset-controller", "statefulset-controller",
	"node-lifecycle-controller", "namespace-controller", "clusterrole-aggregation-controller",
	"resourceclaim-controller",
}

func (c *Cluster) startControllerManager(nativeGangs, noGarbageCollector bool) {
	run := slices.Clone(controllers)
	if nativeGangs {
		run = append(run, nativeGangControllers...)
	}
	if noGarbageCollector {
		run = slices.DeleteFunc(run, func(name string) bool { return name == "garbage-collector-controller" })
	}
	c.runKubeComponent("kube-controller-manager",
		"--controllers="+strings.Join(run, ","),
		"--flex-volume-plugin-dir="+filepath.Join(c.Dir, "flexvolume"),
		"--concurrent-job-syncs=10",
	)
}

func (c *Cluster) startScheduler() {
	c.runKubeComponent("kube-scheduler")
}

// runKubeComponent runs a Kubernetes component with its own admin kubeconfig, no leader
// election, the cluster's feature gates, and its HTTPS endpoint on a free loopback port.
func (c *Cluster) runKubeComponent(name string, args ...string) {
	port, err := freePort()
	if err != nil {
		c.t.Fatal(err)
	}
	base := []string{
		"--kubeconfig=" + c.kubeconfig(name),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
	}
	if c.gates != "" {
		base = append(base, "--feature-gates="+c.gates)
	}
	c.run(name, name, nil, append(base, args...)...)
}

// waitForDefaultServiceAccount waits until the serviceaccount controller has created the
// default ServiceAccount, without which pods of the default namespace are refused.
func (c *Cluster) waitForDefaultServiceAccount(ctx context.Context) error {
	return poll(ctx, 100*time.Millisecond, func() (bool, error) {
		if err := c.checkProcesses(); err != nil {
			return false, err
		}
		_, err := c.Kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("getting the default service account: %w", err)
		}
		return true, nil
	})
}
