package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/live"
	"github.com/workmap/workmap/internal/access"
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
			c, err := o.connect()
			if err != nil {
				return err
			}
			c.gangs.Reasons = out.format() == "wide" // one events list per waiting gang
			reg, err := o.liveRegistry(ctx, c)
			if err != nil {
				return err
			}
			var kinds []servedKind
			if len(args) == 1 {
				kinds, err = c.kindsToList(reg, args[0])
			} else {
				kinds, err = c.servedKinds(reg.All())
			}
			if err != nil {
				return err
			}
			ns := c.namespace
			if allNamespaces {
				ns = ""
			}
			ws, err := c.resolveAll(ctx, kinds, ns, len(args) == 1)
			if err != nil {
				return err
			}
			if len(ws) == 0 && ns != "" {
				if err := c.checkNamespace(ctx, ns); err != nil {
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

// listParallelism bounds how many kinds are listed at once.
const listParallelism = 8

// kindListing is what listing one kind gave.
type kindListing struct {
	workloads []*definitions.Workload
	// forbidden is set when the user may not list the kind.
	forbidden bool
	err       error
}

// resolveAll lists the workloads of every kind, several kinds at once, and resolves each,
// listing each child kind and the pods once per namespace. A kind the user may not list is
// skipped with one warning line, and so is a child kind or the pods (those workloads are shown
// from their spec); named says the user named the kinds, so a kind that cannot be listed at
// all is an error rather than a warning when it is the only one.
func (c *cluster) resolveAll(ctx context.Context, kinds []servedKind, ns string, named bool) ([]*definitions.Workload, error) {
	r := &live.Resolver{Client: c.dynamic, Pods: c.pods, Cache: live.NewListCache(), Options: c.expand, SpecWhenForbidden: true}
	listed := func(gk schema.GroupKind) bool {
		return slices.ContainsFunc(kinds, func(k servedKind) bool { return k.def.GroupKind == gk })
	}
	results := make([]kindListing, len(kinds))
	forbidden := make([][]string, len(kinds))
	sem := make(chan struct{}, listParallelism)
	var wg sync.WaitGroup
	for i, k := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], forbidden[i] = c.listKind(ctx, r, k, ns, listed)
		}()
	}
	wg.Wait()

	var refused []schema.GroupResource
	for i, res := range results {
		if res.err != nil {
			return nil, res.err
		}
		if res.forbidden {
			refused = append(refused, kinds[i].resource.GroupResource())
		}
	}
	switch {
	case len(refused) == 1 && len(kinds) == 1 && named:
		return nil, access.New("list", refused[0], ns, nil)
	case len(refused) > 0 && len(refused) == len(kinds):
		return nil, errors.New(access.Kinds("list", refused, ns))
	}
	ws := []*definitions.Workload{}
	warned := map[string]bool{}
	for i, res := range results {
		for _, line := range forbidden[i] {
			if !warned[line] {
				warned[line] = true
				c.warnf("%s", line)
			}
		}
		ws = append(ws, res.workloads...)
	}
	return ws, nil
}

// listKind lists and resolves the workloads of one kind, but for those a workload of a kind
// listed controls (shown under it); the lines are the lists the user
// was refused, in order, once each.
func (c *cluster) listKind(ctx context.Context, r *live.Resolver, k servedKind, ns string, listed func(schema.GroupKind) bool) (kindListing, []string) {
	list, err := c.dynamic.Resource(k.resource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return kindListing{forbidden: true}, []string{access.New("list", k.resource.GroupResource(), ns, err).Message()}
	}
	if err != nil {
		return kindListing{err: fmt.Errorf("listing %s %s: %w", k.name(), namespaceText(ns), c.explain(err))}, nil
	}
	roots := list.Items
	sort.Slice(roots, func(i, j int) bool {
		return roots[i].GetNamespace()+"/"+roots[i].GetName() < roots[j].GetNamespace()+"/"+roots[j].GetName()
	})
	var out kindListing
	var lines []string
	for i := range roots {
		if live.PartOfAnother(&roots[i], k.def.GroupKind, listed) {
			continue // listed under the workload that controls it, or part of its owner's
		}
		res, err := r.Resolve(ctx, k.def, &unstructured.Unstructured{Object: roots[i].Object})
		if err != nil {
			return kindListing{err: fmt.Errorf("%s %s/%s: %w", k.def.GroupKind.Kind, roots[i].GetNamespace(), roots[i].GetName(), c.explain(err))}, nil
		}
		for _, f := range res.Forbidden {
			if !slices.Contains(lines, f) {
				lines = append(lines, f)
			}
		}
		c.gangStates(ctx, r, res.Workload, c.gangs)
		out.workloads = append(out.workloads, res.Workload)
	}
	return out, lines
}

func namespaceText(ns string) string {
	if ns == "" {
		return "in any namespace"
	}
	return "in namespace " + ns
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
