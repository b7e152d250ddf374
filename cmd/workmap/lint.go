package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/crdschema"
)

func newLintCommand(o *options) *cobra.Command {
	var crdFiles []string
	cmd := &cobra.Command{
		Use:   "lint FILE... [--crd CRD_FILE]",
		Short: "Validate WorkloadDefinitions; with --crd, check their paths and type-check their CEL against the CRD",
		Example: `  workmap lint my-definition.yaml
  workmap lint my-definition.yaml --crd my-crd.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			crds, err := readCRDs(crdFiles)
			if err != nil {
				return err
			}
			var defs []*v1alpha1.WorkloadDefinition
			var sources []string
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				ds, err := definitions.Decode(data, f)
				if err != nil {
					return err
				}
				if len(ds) == 0 {
					return fmt.Errorf("%s: no WorkloadDefinition in the file", f)
				}
				defs = append(defs, ds...)
				for range ds {
					sources = append(sources, f)
				}
			}
			if err := definitions.ValidateSet(defs); err != nil {
				return err
			}
			failed := 0
			for i, d := range defs {
				opts := definitions.CompileOptions{CRD: crds[d.Spec.Workload.Group+"/"+d.Spec.Workload.Kind]}
				if len(crds) > 0 && opts.CRD == nil {
					fmt.Fprintf(o.errOut, "%s: %s: no CRD given for %s/%s: checked without a schema\n", sources[i], d.Name, d.Spec.Workload.Group, d.Spec.Workload.Kind)
				}
				if _, err := definitions.Compile(d, opts); err != nil {
					failed++
					fmt.Fprintf(o.out, "%s: %v\n", sources[i], err)
					continue
				}
				against := ""
				if opts.CRD != nil {
					against = " (against the CRD schema)"
				}
				fmt.Fprintf(o.out, "%s: %s: ok%s\n", sources[i], d.Name, against)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d definitions are invalid", failed, len(defs))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&crdFiles, "crd", nil, "CustomResourceDefinition files to check paths and types against")
	return cmd
}

// readCRDs parses CRD files, keyed by group/kind.
func readCRDs(files []string) (map[string]*crdschema.CRD, error) {
	out := map[string]*crdschema.CRD{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crds, err := crdschema.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if len(crds) == 0 {
			return nil, fmt.Errorf("%s: no CustomResourceDefinition in the file", f)
		}
		for _, c := range crds {
			out[c.Group+"/"+c.Kind] = c
		}
	}
	return out, nil
}
