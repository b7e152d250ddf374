package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/manifest"
)

func newTreeCommand(o *options) *cobra.Command {
	var files []string
	var out *outputFlags
	cmd := &cobra.Command{
		Use:               "tree (KIND/NAME | KIND NAME | -f FILE)",
		ValidArgsFunction: o.completeWorkload,
		Short:             "Show a workload as a tree of roles, replicas and pods with its GPUs, status and gangs",
		Example: `  # A workload in the cluster (kind names work like kubectl's)
  workmap tree jobset/leader-workers -n ml
  # Offline, from a manifest (other kinds in the file are ignored)
  workmap tree -f examples/jobset-leader-workers.yaml -o json
  # One field (a WorkloadTree for one workload, a List of them for several, as kubectl prints)
  workmap tree jobset/leader-workers -o jsonpath='{.totals.gpus}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			workloads, err := o.workloads(cmd.Context(), files, args)
			if err != nil {
				return err
			}
			return o.print(out, workloads, true, printTree)
		},
	}
	addSourceFlags(cmd, &files)
	out = addOutputFlags(cmd, &o.output, "tree", "tree", "", "wide")
	return cmd
}

func addSourceFlags(cmd *cobra.Command, files *[]string) {
	cmd.Flags().StringSliceVarP(files, "filename", "f", nil, "manifest files to read instead of the cluster")
}

// workloads expands the workloads named by -f files, or reads the one KIND/NAME names from
// the cluster.
func (o *options) workloads(ctx context.Context, files, args []string) ([]*definitions.Workload, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(files) > 0 {
		if len(args) > 0 {
			return nil, fmt.Errorf("give either -f FILE or KIND/NAME, not both")
		}
		return o.expandFiles(files)
	}
	ref, err := workloadArgOf(args)
	if err != nil {
		return nil, err
	}
	r, err := o.workloadReader()
	if err != nil {
		return nil, err
	}
	r.gangs.Reasons = true // one events list per waiting gang says why it waits
	w, err := r.Read(ctx, ref)
	if err != nil {
		return nil, err
	}
	return []*definitions.Workload{w.workload}, nil
}

// expandFiles expands every object of a known kind in the files.
func (o *options) expandFiles(files []string) ([]*definitions.Workload, error) {
	reg, err := o.registry()
	if err != nil {
		return nil, err
	}
	var out []*definitions.Workload
	kinds := map[string]bool{}
	// Fields the engine could not read make the manifest invalid: each is reported once, at
	// its line, rather than as an Unknown workload.
	var invalid []string
	seen := map[string]bool{}
	var skipped []manifest.Document
	// Claim templates a workload's pods name are read for its GPUs: they are not skipped.
	claimsRead := map[*unstructured.Unstructured]bool{}
	for _, f := range files {
		docs, err := manifest.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objects := make([]*unstructured.Unstructured, len(docs))
		for i, d := range docs {
			objects[i] = d.Object
		}
		for _, d := range docs {
			gvk := d.Object.GroupVersionKind()
			def, ok := reg.Lookup(gvk.GroupKind())
			if !ok {
				kinds[gvk.GroupKind().String()] = true
				skipped = append(skipped, d)
				continue
			}
			opts := o.expandOptions()
			inFile := definitions.ClaimsIn(objects, d.Object.GetNamespace()) // claim templates from the same file
			opts.Claims = func(kind, namespace, name string) (*unstructured.Unstructured, bool) {
				c, ok := inFile(kind, namespace, name)
				if ok {
					claimsRead[c] = true
				}
				return c, ok
			}
			w, err := def.ExpandWith(d.Object, nil, opts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", d.Where(), err)
			}
			for _, fe := range w.Errors {
				msg := fmt.Sprintf("%s:%d: %s", d.Source, d.LineOf(fe.Path), fe)
				if !seen[msg] {
					seen[msg] = true
					invalid = append(invalid, msg)
				}
			}
			out = append(out, w)
		}
	}
	if len(invalid) > 0 {
		return nil, fmt.Errorf("invalid manifest:\n%s", strings.Join(invalid, "\n"))
	}
	if len(out) == 0 {
		found := make([]string, 0, len(kinds))
		for k := range kinds {
			found = append(found, k)
		}
		sort.Strings(found)
		return nil, fmt.Errorf("no workload of a known kind in %s (found: %s); see `workmap catalog list`, or pass --definitions", strings.Join(files, ", "), orNone(found))
	}
	skipped = slices.DeleteFunc(skipped, func(d manifest.Document) bool { return claimsRead[d.Object] })
	if line := manifest.SkippedLine(skipped); line != "" {
		fmt.Fprintln(o.errOut, line)
	}
	return out, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no objects"
	}
	return strings.Join(s, ", ")
}
