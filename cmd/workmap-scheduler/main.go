// Command workmap-scheduler is kube-scheduler with workmap's gang plugin (WorkmapGang) and
// pod-grouper built in. Deploy it as a secondary scheduler; workloads opt in with
// spec.schedulerName: workmap-scheduler. Flags and configuration are kube-scheduler's.
//
// It runs kube-scheduler's own Setup and Run; between the two it learns from the leader
// election's lock when this replica leads, so that only the leader writes PodGroups and their
// status while a standby keeps its caches warm.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/workmap/workmap/grouper"
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
	os.Exit(cli.Run(newCommand()))
}

// newCommand is kube-scheduler's command (its flags, help and configuration) running the
// scheduler with the WorkmapGang plugin.
func newCommand() *cobra.Command {
	opts := options.NewOptions()
	cmd := &cobra.Command{
		Use:  "workmap-scheduler",
		Long: "kube-scheduler with workmap's gang scheduling (the WorkmapGang plugin and pod-grouper).",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return opts.ComponentGlobalsRegistry.Set() // feature gates are set before RunE
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, opts) },
		Args: cobra.NoArgs,
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, f := range nfs.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	return cmd
}

func run(cmd *cobra.Command, opts *options.Options) error {
	verflag.PrintAndExitIfRequested()
	if err := logsapi.ValidateAndApply(opts.Logs, opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)); err != nil {
		return fmt.Errorf("logging: %w", err)
	}
	cliflag.PrintFlags(cmd.Flags())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()

	leader := grouper.NewLeader()
	cc, sched, err := app.Setup(ctx, opts, app.WithPlugin(plugin.Name, plugin.Factory(legacyregistry.Registerer(), leader)))
	if err != nil {
		return err
	}
	if cc.LeaderElection == nil {
		leader.Lead() // no election: this replica is the only one
	} else {
		cc.LeaderElection.Lock = leader.Watch(cc.LeaderElection.Lock)
	}
	return app.Run(ctx, cc, sched)
}
