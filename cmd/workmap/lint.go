package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/crdschema"
	"github.com/workmap/workmap/internal/access"
	"github.com/workmap/workmap/internal/nativeapi"
)

func newLintCommand(o *options) *cobra.Command {
	var crdFiles []string
	var fromCluster bool
	cmd := &cobra.Command{
		Use:   "lint [FILE...] [--crd CRD_FILE | --cluster]",
		Short: "Validate WorkloadDefinitions; with --crd or --cluster, check their paths and type-check their CEL against the CRDs",
		Long: `Validates the definitions in FILEs (or, without files, every definition in effect: the
catalog and --definitions). With --crd the CRDs come from files; with --cluster from the
cluster of the current kubeconfig context. Every path must then exist in the schema of every
version the definition lists that the CRD serves, and every expression type-checks against
each of them.

Without files, --cluster also lints every WorkloadDefinition installed in the cluster (an
overridden one too): one that workmap cannot compile is accepted by the API server but skipped
by workmap, so lint fails on it, naming the definition, the field and the problem.`,
		Example: `  workmap lint my-definition.yaml --crd my-crd.yaml
  workmap lint --cluster`,
		RunE: func(cmd *cobra.Command, files []string) error {
			if fromCluster && len(crdFiles) > 0 {
				return fmt.Errorf("use either --crd or --cluster")
			}
			ctx := contextOf(cmd)
			crds, err := crdschema.ReadFiles(crdFiles)
			if err != nil {
				return err
			}
			var c *cluster
			var inCluster []*layeredDefinition
			if fromCluster {
				if c, err = o.connect(); err != nil {
					return err
				}
				if len(files) == 0 {
					var refused *access.Refused
					if inCluster, refused, err = c.clusterDefinitions(ctx); err != nil {
						return err
					}
					if refused != nil {
						return refused
					}
				}
			}
			defs, sources, err := o.lintInputs(files, inCluster)
			if err != nil {
				return err
			}
			failed, total := 0, len(defs)
			for _, d := range inCluster {
				if d.undecoded {
					failed++
					total++
					fmt.Fprintf(o.out, "%s: WorkloadDefinition %s: %s\n", sourceCluster, d.def.Name, strings.Join(d.problems, "; "))
				}
			}
			if c != nil {
				if crds, err = c.crdsFor(ctx, defs); err != nil {
					return err
				}
			}
			for i, d := range defs {
				crd := crds[d.Spec.Workload.Group+"/"+d.Spec.Workload.Kind]
				if (fromCluster || len(crdFiles) > 0) && crd == nil {
					fmt.Fprintf(o.errOut, "%s: %s: no CRD for %s/%s: checked without a schema\n", sources[i], d.Name, d.Spec.Workload.Group, d.Spec.Workload.Kind)
				}
				against, err := lintOne(d, crd)
				if err != nil {
					failed++
					fmt.Fprintf(o.out, "%s: %v\n", sources[i], err)
					continue
				}
				for _, v := range against.NotServed {
					fmt.Fprintf(o.errOut, "%s: %s: version %s is not served by the CRD: not checked\n", sources[i], d.Name, v)
				}
				for _, w := range against.Warnings {
					fmt.Fprintf(o.errOut, "%s: %s: warning: %s\n", sources[i], d.Name, w)
				}
				suffix := ""
				if crd != nil {
					suffix = " (against the CRD schema of " + strings.Join(against.Checked, ", ")
					if n := len(against.Warnings); n > 0 {
						suffix += fmt.Sprintf("; %s: fields the CRD does not have", plural(int64(n), "warning"))
					}
					suffix += ")"
				}
				fmt.Fprintf(o.out, "%s: %s: ok%s\n", sources[i], d.Name, suffix)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d definitions are invalid", failed, total)
			}
			if c != nil {
				return o.lintNativeAPI(c)
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&crdFiles, "crd", nil, "CustomResourceDefinition files to check paths and types against")
	cmd.Flags().BoolVar(&fromCluster, "cluster", false, "check against the CRDs installed in the cluster")
	return cmd
}

// lintNativeAPI checks the fields of Kubernetes' own gang API that workmap-webhook writes and
// workmap reads against the schemas the cluster serves: a field no served version has fails,
// named.
func (o *options) lintNativeAPI(c *cluster) error {
	v, served, problems, err := nativeapi.Check(c.discovery)
	if err != nil {
		fmt.Fprintf(o.errOut, "%s: native gang API not checked: %v\n", sourceCluster, err)
		return nil
	}
	for _, p := range problems {
		fmt.Fprintf(o.out, "%s: %v\n", sourceCluster, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("the cluster's native gang API lacks %s workmap uses", plural(int64(len(problems)), "field"))
	}
	if !served {
		fmt.Fprintf(o.out, "%s: native gang API: no native PodGroups served (kube-apiserver's GenericWorkload gate off): the Pod's spec.schedulingGroup ok\n", sourceCluster)
		return nil
	}
	fmt.Fprintf(o.out, "%s: native gang API %s/%s: ok (the PodGroup and Pod fields workmap-webhook writes and workmap reads)\n", sourceCluster, nativeapi.Group, v.Name)
	return nil
}

// lintOne compiles a definition, against every version of crd it lists when crd is known.
func lintOne(d *v1alpha1.WorkloadDefinition, crd *crdschema.CRD) (definitions.CRDCheck, error) {
	if crd == nil {
		_, err := definitions.Compile(d, definitions.CompileOptions{})
		return definitions.CRDCheck{}, err
	}
	return definitions.CheckAgainstCRD(d, crd)
}

// lintInputs decodes the definitions in files, or takes every definition in effect and every
// one of the cluster's that decoded (inCluster, read with --cluster).
func (o *options) lintInputs(files []string, inCluster []*layeredDefinition) ([]*v1alpha1.WorkloadDefinition, []string, error) {
	var defs []*v1alpha1.WorkloadDefinition
	var sources []string
	if len(files) == 0 {
		l, err := o.layered(inCluster)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range l.all {
			if d.undecoded || (!d.inEffect && d.source != sourceCluster) {
				continue
			}
			defs = append(defs, d.def)
			sources = append(sources, d.source)
		}
		return defs, sources, nil
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		ds, err := definitions.Decode(data, f)
		if err != nil {
			return nil, nil, err
		}
		if len(ds) == 0 {
			return nil, nil, fmt.Errorf("%s: no WorkloadDefinition in the file", f)
		}
		defs = append(defs, ds...)
		for range ds {
			sources = append(sources, f)
		}
	}
	return defs, sources, definitions.ValidateSet(defs)
}
