package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// Annotations the catalog commands put on the definitions they print, saying where each was
// read and what became of it. They describe this command's view only (the layers it read):
// workmap never reads them back.
const (
	// annotationSource is embedded, cluster or file.
	annotationSource = "workmap.dev/source"
	// annotationInEffect is "true" on the definition its kind uses, "false" on one overridden
	// by a later layer or invalid.
	annotationInEffect = "workmap.dev/in-effect"
	// annotationInvalid, on an invalid cluster definition only, lists its problems.
	annotationInvalid = "workmap.dev/invalid"
)

const catalogLong = `Definitions come in three layers, each overriding the one before for the kinds it defines:
the catalog embedded in workmap ("embedded"), the WorkloadDefinitions installed in the cluster
("cluster", read only with --cluster) and the files of --definitions ("file").

Without --cluster the catalog commands stay offline, like lint: they read no kubeconfig and
make no request, so they are fast and work anywhere. With --cluster they also read the cluster
of the current kubeconfig context; a definition there that workmap cannot compile is listed as
Invalid, with each problem and its field path, and is skipped everywhere else.`

func newCatalogCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List or show the workload definitions: the embedded catalog, the cluster's (--cluster) and --definitions",
		Long:  catalogLong,
	}
	var out *outputFlags
	var listCluster, showCluster bool
	list := &cobra.Command{
		Use:   "list [--cluster]",
		Short: "List the workload definitions of every layer, and the one in effect for each kind",
		Long: catalogLong + `

The text output has one row per definition of every layer, an overridden one too: SOURCE is
its layer, STATUS says whether its kind uses it (In effect), a later layer's definition
overrides it (Overridden by ...) or it is invalid (Invalid: ...). -o json, yaml, name,
jsonpath, ... print a List of the same WorkloadDefinitions, each annotated with
workmap.dev/source (embedded, cluster or file) and workmap.dev/in-effect ("true" or "false"),
and an invalid one with workmap.dev/invalid (its problems).`,
		Example: `  workmap catalog list
  # With the cluster's definitions, and which of them are in effect
  workmap catalog list --cluster
  # The definitions themselves, a List of WorkloadDefinition objects
  workmap catalog list -o yaml
  # The names of the definitions in effect
  workmap catalog list --cluster -o jsonpath='{.items[?(@.metadata.annotations.workmap\.dev/in-effect=="true")].metadata.name}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			l, err := o.catalogLayers(contextOf(cmd), listCluster)
			if err != nil {
				return err
			}
			if !out.isText() {
				defs := make([]*v1alpha1.WorkloadDefinition, 0, len(l.all))
				refs := make([]*unstructured.Unstructured, 0, len(l.all))
				for _, d := range l.all {
					t := printedDefinition(d)
					defs = append(defs, t)
					refs = append(refs, nameRef(t.APIVersion, t.Kind, t.Namespace, t.Name))
				}
				return out.printDocument(o.out, definitions.NewList(defs), refList(refs))
			}
			return printCatalog(o, l)
		},
	}
	out = addOutputFlags(list, &o.output, "", "")
	list.Flags().BoolVar(&listCluster, "cluster", false, "also list the WorkloadDefinitions installed in the cluster")
	show := &cobra.Command{
		Use:   "show KIND [--cluster]",
		Short: "Print the definition in effect for a kind as YAML",
		Long: catalogLong + `

show prints the definition the kind uses, annotated with workmap.dev/source (embedded,
cluster or file) and workmap.dev/in-effect.`,
		Example: `  workmap catalog show jobset
  # The cluster's definition when one overrides the catalog's
  workmap catalog show jobset --cluster`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := o.catalogLayers(contextOf(cmd), showCluster)
			if err != nil {
				return err
			}
			d, err := definitionNamed(l.registry, args[0])
			if err != nil {
				if bad := invalidFor(l, args[0]); bad != nil {
					return fmt.Errorf("WorkloadDefinition %s in the cluster is invalid: %s", bad.def.Name, strings.Join(bad.problems, "; "))
				}
				return err
			}
			for _, bad := range l.all {
				if !bad.valid() && bad.groupKind() == d.GroupKind {
					warnInvalid(o.errOut, bad)
				}
			}
			b, err := yaml.Marshal(printedDefinition(l.layerOf(d.Source)))
			if err != nil {
				return err
			}
			_, err = o.out.Write(b)
			return err
		},
	}
	show.Flags().BoolVar(&showCluster, "cluster", false, "also read the WorkloadDefinitions installed in the cluster")
	cmd.AddCommand(list, show)
	return cmd
}

// catalogLayers reads the layers, the cluster's only when asked.
func (o *options) catalogLayers(ctx context.Context, fromCluster bool) (*layers, error) {
	if !fromCluster {
		return o.layered(nil)
	}
	c, err := o.connect()
	if err != nil {
		return nil, err
	}
	defs, refused, err := c.clusterDefinitions(ctx)
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	return o.layered(defs)
}

// printCatalog prints one row per definition of every layer.
func printCatalog(o *options, l *layers) error {
	tw := tabwriter.NewWriter(o.out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "KIND\tGROUP\tVERSIONS\tROLES\tGANG\tDEFINITION\tSOURCE\tSTATUS")
	for _, d := range l.all {
		s := d.def.Spec
		var roles []string
		for _, r := range s.Roles {
			roles = append(roles, r.Name)
		}
		if len(roles) > 4 {
			roles = append(roles[:3], fmt.Sprintf("… (%d roles)", len(s.Roles)))
		}
		gang := "no"
		if s.Gang != nil {
			gang = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cellOrNone(s.Workload.Kind), cellOrNone(s.Workload.Group), cellOrNone(strings.Join(s.Workload.Versions, ",")),
			cellOrNone(strings.Join(roles, ",")), gang, d.def.Name, d.source, d.status())
	}
	return tw.Flush()
}

func cellOrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// invalidFor is the invalid cluster definition a kind name means, if any: the kind has no
// valid definition, and the user is told why.
func invalidFor(l *layers, arg string) *layeredDefinition {
	for _, d := range l.all {
		if !d.valid() && d.def.Spec.Workload.Kind != "" {
			if offlineNames(d.def)[strings.ToLower(arg)] {
				return d
			}
		}
	}
	return nil
}

// printedDefinition is a copy of the definition with its apiVersion and kind set, annotated
// with its layer and what became of it; as kubectl does, without its managed fields.
func printedDefinition(d *layeredDefinition) *v1alpha1.WorkloadDefinition {
	c := typedDefinition(d.def)
	c.ManagedFields = nil
	annotations := map[string]string{}
	for k, v := range c.Annotations {
		annotations[k] = v
	}
	annotations[annotationSource] = d.source
	annotations[annotationInEffect] = fmt.Sprint(d.inEffect)
	delete(annotations, annotationInvalid)
	if !d.valid() {
		annotations[annotationInvalid] = strings.Join(d.problems, "; ")
	}
	c.Annotations = annotations
	return c
}

// typedDefinition is a copy of the definition with its apiVersion and kind set.
func typedDefinition(d *v1alpha1.WorkloadDefinition) *v1alpha1.WorkloadDefinition {
	c := d.DeepCopy()
	c.APIVersion, c.Kind = v1alpha1.SchemeGroupVersion.String(), "WorkloadDefinition"
	return c
}
