package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

func newCatalogCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List or show the workload definitions in effect (the embedded catalog, overridden by --definitions)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the known workload kinds",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			reg, err := o.registry()
			if err != nil {
				return err
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
	}, &cobra.Command{
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
			src := d.Source.DeepCopy()
			src.APIVersion, src.Kind = "workmap.dev/v1alpha1", "WorkloadDefinition"
			b, err := yaml.Marshal(src)
			if err != nil {
				return err
			}
			_, err = o.out.Write(b)
			return err
		},
	})
	return cmd
}
