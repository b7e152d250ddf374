package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

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
			// The cluster's definitions are read again every so often (serve follows
			// definitions as they are applied): each warning about them is printed once.
			o.errOut = &onceLines{w: o.errOut, seen: map[string]bool{}}
			r, err := o.workloadReader()
			if err != nil {
				return err
			}
			// The catalog and --definitions; the cluster's definitions are added once it answers
			// (an unreachable cluster is reported in the page, not here).
			reg, err := o.registry()
			if err != nil {
				return err
			}
			ns := ""
			if f := cmd.Flags().Lookup("namespace"); f != nil && f.Changed && !allNamespaces {
				ns = r.namespace
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "workmap serve: http://%s/ (metrics at /metrics)\n", l.Addr())
			log := slog.New(slog.NewTextHandler(o.errOut, nil))
			return webview.Serve(ctx, r.config, webview.Options{Registry: reg, Definitions: r.readDefinitions, Namespace: ns, Expand: r.expand, Logger: log, TopologyLevels: levels}, l)
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

// onceLines writes each warning line once (other lines, such as timestamped log records,
// always).
type onceLines struct {
	w    io.Writer
	mu   sync.Mutex
	seen map[string]bool
}

func (o *onceLines) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	line := string(p)
	if strings.HasPrefix(line, "warning: ") {
		if o.seen[line] {
			return len(p), nil
		}
		o.seen[line] = true
	}
	return o.w.Write(p)
}
