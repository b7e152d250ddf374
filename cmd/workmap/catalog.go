package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

func newCatalogCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List or show the workload definitions in effect (the embedded catalog, overridden by --definitions)",
	}
	var out *outputFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the known workload kinds",
		Example: `  workmap catalog list
  # The definitions themselves, a List of WorkloadDefinition objects
  workmap catalog list -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			reg, err := o.registry()
			if err != nil {
				return err
			}
			if !out.isText() {
				var defs []*v1alpha1.WorkloadDefinition
				var refs []*unstructured.Unstructured
				for _, d := range reg.All() {
					t := typedDefinition(d.Source)
					defs = append(defs, t)
					refs = append(refs, nameRef(t.APIVersion, t.Kind, t.Namespace, t.Name))
				}
				return out.printDocument(o.out, definitions.NewList(defs), refList(refs))
			}
			tw := tabwriter.NewWriter(o.out, 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "KIND\tGROUP\tVERSIONS\tROLES\tGANG\tDEFINITION")
			for _, d := range reg.All() {
				s := d.Source.Spec
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
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Workload.Kind, s.Workload.Group, strings.Join(s.Workload.Versions, ","), strings.Join(roles, ","), gang, d.Source.Name)
			}
			return tw.Flush()
		},
	}
	out = addOutputFlags(list, &o.output, "", "")
	cmd.AddCommand(list, &cobra.Command{
		Use:   "show KIND",
		Short: "Print the definition of a kind as YAML",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			reg, err := o.registry()
			if err != nil {
				return err
			}
			d, err := resolveKind(reg, args[0])
			if err != nil {
				return err
			}
			b, err := yaml.Marshal(typedDefinition(d.Source))
			if err != nil {
				return err
			}
			_, err = o.out.Write(b)
			return err
		},
	})
	return cmd
}

// typedDefinition is a copy of the definition with its apiVersion and kind set.
func typedDefinition(d *v1alpha1.WorkloadDefinition) *v1alpha1.WorkloadDefinition {
	c := d.DeepCopy()
	c.APIVersion, c.Kind = v1alpha1.SchemeGroupVersion.String(), "WorkloadDefinition"
	return c
}
