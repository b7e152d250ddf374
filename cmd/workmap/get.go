package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
)

func newGetCommand(o *options) *cobra.Command {
	var allNamespaces bool
	var out *outputFlags
	cmd := &cobra.Command{
		Use:               "get [KIND]",
		ValidArgsFunction: o.completeKinds,
		Short:             "List the workloads of every known kind (or one kind), one line each with status, pods and GPUs",
		Example: `  workmap get -A
  workmap get jobsets -n ml -o wide
  # A List of WorkloadTree documents, or columns of your own
  workmap get -A -o custom-columns=NAME:.workload.name,GPUS:.totals.gpus`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			r, err := o.workloadReader()
			if err != nil {
				return err
			}
			r.gangs.Reasons = out.format() == "wide" // one events list per waiting gang
			var kinds []servedKind
			if len(args) == 1 {
				kinds, err = r.kindsToList(ctx, args[0])
			} else {
				kinds, err = r.servedKinds(ctx)
			}
			if err != nil {
				return err
			}
			ns := r.namespace
			if allNamespaces {
				ns = ""
			}
			ws, err := r.ReadAll(ctx, kinds, ns, len(args) == 1)
			if err != nil {
				return err
			}
			if len(ws) == 0 && ns != "" {
				if err := r.checkNamespace(ctx, ns); err != nil {
					return err
				}
			}
			if out.isText() {
				printTable(o.out, ws, allNamespaces, out.format() == "wide")
				return nil
			}
			return out.printTrees(o.out, ws)
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list workloads in every namespace")
	out = addOutputFlags(cmd, &o.output, "", "", "wide")
	return cmd
}

var namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// checkNamespace says when the namespace asked for does not exist (a user who may not read
// namespaces is not told).
func (c *cluster) checkNamespace(ctx context.Context, ns string) error {
	_, err := c.dynamic.Resource(namespacesResource).Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %q does not exist", ns)
	}
	return nil
}

func printTable(out io.Writer, ws []*definitions.Workload, namespaces, wide bool) {
	if len(ws) == 0 {
		fmt.Fprintln(out, "No workloads found.")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	header := "KIND\tNAME\tSTATUS\tPODS\tGPUS\tGANG"
	if namespaces {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tMIN MEMBERS\tREASON"
	}
	fmt.Fprintln(tw, header)
	for _, w := range ws {
		ready := 0
		if w.Live != nil {
			ready = w.Live.Ready
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%d/%d\t%s\t%s", w.Workload.Kind, w.Workload.DisplayName(), w.Status.State, ready, w.Totals.Pods, number(w.Totals.GPUs), gangPhases(w.Groups))
		if namespaces {
			line = w.Workload.Namespace + "\t" + line
		}
		if wide {
			reason := w.Status.Reason
			if why := gangReason(w.Groups); why != "" {
				reason += "; gang: " + why
			}
			line += fmt.Sprintf("\t%s\t%s", gangsText(w.Groups), reason)
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
