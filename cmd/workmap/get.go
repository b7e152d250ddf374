package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/live"
)

func newGetCommand(o *options) *cobra.Command {
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "get [KIND]",
		Short: "List the workloads of every known kind (or one kind), one line each with status, pods and GPUs",
		Example: `  workmap get -A
  workmap get jobsets -n ml -o wide`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			c, err := o.connect()
			if err != nil {
				return err
			}
			reg, err := o.liveRegistry(ctx, c)
			if err != nil {
				return err
			}
			defs := reg.All()
			if len(args) == 1 {
				d, err := resolveKind(reg, args[0])
				if err != nil {
					return err
				}
				defs = []*definitions.Definition{d}
			}
			ns := c.namespace
			if allNamespaces {
				ns = ""
			}
			served, err := o.servedResources()
			if err != nil {
				return c.explain(err)
			}
			ws, err := c.resolveAll(ctx, defs, ns, served)
			if err != nil {
				return err
			}
			switch o.output {
			case "json", "yaml":
				return o.printDocument(ws)
			case "", "wide":
				printTable(o.out, ws, allNamespaces, o.output == "wide")
				return nil
			}
			return fmt.Errorf("unknown output format %q: use wide, json or yaml", o.output)
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list workloads in every namespace")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml")
	return cmd
}

// resolveAll lists every workload of the kinds the cluster serves (others are skipped) and
// resolves each, listing each child kind and the pods once per namespace.
func (c *cluster) resolveAll(ctx context.Context, defs []*definitions.Definition, ns string, served map[schema.GroupVersionResource]bool) ([]*definitions.Workload, error) {
	r := &live.Resolver{Client: c.dynamic, Cache: live.NewListCache(), Options: c.expand}
	ws := []*definitions.Workload{}
	for _, d := range defs {
		gvr, ok := servedRoot(d, served)
		if !ok {
			continue // not installed in this cluster
		}
		list, err := c.dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, c.explain(err)
		}
		roots := list.Items
		sort.Slice(roots, func(i, j int) bool {
			return roots[i].GetNamespace()+"/"+roots[i].GetName() < roots[j].GetNamespace()+"/"+roots[j].GetName()
		})
		for i := range roots {
			res, err := r.Resolve(ctx, d, &unstructured.Unstructured{Object: roots[i].Object})
			if err != nil {
				return nil, c.explain(err)
			}
			ws = append(ws, res.Workload)
		}
	}
	return ws, nil
}

func printTable(out io.Writer, ws []*definitions.Workload, namespaces, wide bool) {
	if len(ws) == 0 {
		fmt.Fprintln(out, "No workloads found.")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	header := "KIND\tNAME\tSTATUS\tPODS\tGPUS"
	if namespaces {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tGANGS\tREASON"
	}
	fmt.Fprintln(tw, header)
	for _, w := range ws {
		ready := 0
		if w.Live != nil {
			ready = w.Live.Ready
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%d/%d\t%s", w.Workload.Kind, w.Workload.Name, w.Status.State, ready, w.Totals.Pods, number(w.Totals.GPUs))
		if namespaces {
			line = w.Workload.Namespace + "\t" + line
		}
		if wide {
			line += fmt.Sprintf("\t%s\t%s", gangsText(w.Groups), w.Status.Reason)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

func gangsText(gs []definitions.Group) string {
	if len(gs) == 0 {
		return "-"
	}
	s := ""
	for i, g := range gs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(g.MinMember)
	}
	return s
}
