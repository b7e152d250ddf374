// Command workmap-scheduler is kube-scheduler with workmap's gang plugin (WorkmapGang) and
// pod-grouper built in. Deploy it as a secondary scheduler; workloads opt in with
// spec.schedulerName: workmap-scheduler. Flags and configuration are kube-scheduler's.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/workmap/workmap/plugin"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(plugin.Name, plugin.Factory(legacyregistry.Registerer())),
	)
	os.Exit(cli.Run(command))
}
