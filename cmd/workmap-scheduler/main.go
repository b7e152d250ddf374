// Command workmap-scheduler is kube-scheduler with workmap's gang plugin (WorkmapGang) and
// pod-grouper built in. Deploy it as a secondary scheduler; workloads opt in with
// spec.schedulerName: workmap-scheduler. Flags and configuration are kube-scheduler's.
package main

import (
	"os"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/workmap/workmap/plugin"
)

// Every member of a gang waits at Permit, and with NominatedNodeNameForExpectation (beta, on
// by default since 1.35) kube-scheduler writes each waiting pod's node to its status: one more
// write per pod, which halved gang throughput under the client rate limit (docs/benchmarks.md).
// Off by default here; --feature-gates=NominatedNodeNameForExpectation=true turns it back on.
var defaultFeatures = map[string]bool{"NominatedNodeNameForExpectation": false}

func main() {
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(defaultFeatures); err != nil {
		panic(err)
	}
	command := app.NewSchedulerCommand(
		app.WithPlugin(plugin.Name, plugin.Factory(legacyregistry.Registerer())),
	)
	os.Exit(cli.Run(command))
}
