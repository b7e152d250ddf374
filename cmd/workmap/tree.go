package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/manifest"
)

func newTreeCommand(o *options) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "tree -f FILE",
		Short: "Show a workload as a tree of roles, replicas and pods with its GPUs, status and gangs",
		Example: `  # Offline, from a manifest (other kinds in the file are ignored)
  workmap tree -f examples/jobset-leader-workers.yaml
  workmap tree -f examples/jobset-leader-workers.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("tree needs -f FILE (live trees from a cluster come in a later release)")
			}
			workloads, err := o.expandFiles(files)
			if err != nil {
				return err
			}
			return o.print(workloads)
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest files to read instead of a cluster")
	cmd.Flags().StringVarP(&o.output, "output", "o", "tree", "output format: tree, json or yaml")
	return cmd
}

// expandFiles expands every object of a known kind in the files.
func (o *options) expandFiles(files []string) ([]*definitions.Workload, error) {
	reg, err := o.registry()
	if err != nil {
		return nil, err
	}
	var out []*definitions.Workload
	kinds := map[string]bool{}
	for _, f := range files {
		docs, err := manifest.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			gvk := d.Object.GroupVersionKind()
			def, ok := reg.Lookup(gvk.GroupKind())
			if !ok {
				kinds[gvk.GroupKind().String()] = true
				continue
			}
			w, err := def.Expand(d.Object)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", d.Where(), err)
			}
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		found := make([]string, 0, len(kinds))
		for k := range kinds {
			found = append(found, k)
		}
		sort.Strings(found)
		return nil, fmt.Errorf("no workload of a known kind in %s (found: %s); see the embedded catalog or pass --definitions", strings.Join(files, ", "), orNone(found))
	}
	return out, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no objects"
	}
	return strings.Join(s, ", ")
}
