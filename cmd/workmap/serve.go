package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"

	"github.com/workmap/workmap/webview"
)

func newServeCommand(o *options) *cobra.Command {
	var addr, topologyLevels string
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a live, read-only web view of every workload, and their metrics at /metrics",
		Long: `serve watches the cluster (one informer per kind the definitions name, their child kinds,
pods, PodGroups and nodes) and serves a web page of every workload — status with its reason, pods,
GPUs, gangs — that follows the cluster as it changes, a page per workload with its tree, the
nodes' GPUs in their topology domains at /topology, and Prometheus metrics at /metrics. It only
reads. Without -n it shows every namespace.`,
		Example: `  workmap serve --addr 127.0.0.1:8080
  workmap serve -n ml --as viewer`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			levels, err := grouper.ParseTopologyLevels(topologyLevels)
			if err != nil {
				return fmt.Errorf("--topology-levels: %w", err)
			}
			ctx, stop := signal.NotifyContext(contextOf(cmd), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			c, err := o.connect()
			if err != nil {
				return err
			}
			// The catalog and --definitions; the cluster's definitions are added once it answers
			// (an unreachable cluster is reported in the page, not here).
			reg, err := o.registry()
			if err != nil {
				return err
			}
			fromCluster := func(ctx context.Context) (*definitions.Registry, error) { return o.liveRegistry(ctx, c) }
			ns := ""
			if f := cmd.Flags().Lookup("namespace"); f != nil && f.Changed && !allNamespaces {
				ns = c.namespace
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "workmap serve: http://%s/ (metrics at /metrics)\n", l.Addr())
			log := slog.New(slog.NewTextHandler(o.errOut, nil))
			return webview.Serve(ctx, c.config, webview.Options{Registry: reg, Definitions: fromCluster, Namespace: ns, Expand: c.expand, Logger: log, TopologyLevels: levels}, l)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "show every namespace (the default unless -n is given)")
	cmd.Flags().StringVar(&topologyLevels, "topology-levels", "", "the cluster's topology levels as name=node-label pairs, comma-separated, broad to narrow (e.g. block=example.com/block,rack=example.com/rack): /topology draws the nodes in their domains")
	return cmd
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
