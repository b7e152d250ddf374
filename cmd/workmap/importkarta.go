package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/workmap/workmap/definitions/karta"
)

func newImportKartaCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "import-karta FILE",
		Short: "Convert Karta / ResourceInterface definitions (jq paths) into WorkloadDefinitions",
		Long: `Converts every run.ai/v1alpha1 Karta and optimization.nvidia.com/v1alpha1 ResourceInterface
in FILE ("-" reads stdin). Simple jq paths become workmap paths and CEL; status mappings become
ordered rules (Failed, Completed, Degraded, Running, Initializing, Suspended, then Pending);
pod groups become gang groups.

The definitions are printed as YAML on stdout. Everything that could not be converted, or whose
meaning changed, is printed on stderr, one line each, naming the field of the input:
  not converted: <field path>: <message>
  warning: <field path>: <message>
and repeated as comments above each definition. The command fails only when FILE cannot be
read or parsed, or nothing in it could be converted.`,
		Example: `  workmap import-karta jobset-karta.yaml > jobset-definition.yaml
  workmap lint jobset-definition.yaml --crd jobset-crd.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			var data []byte
			var err error
			if file == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				return err
			}
			results, err := karta.Convert(data, file)
			if err != nil {
				return err
			}
			converted := 0
			for _, r := range results {
				prefix := ""
				if len(results) > 1 {
					prefix = r.Name + ": "
				}
				lines := make([]string, 0, len(r.Issues)+1)
				for _, is := range r.Issues {
					lines = append(lines, fmt.Sprintf("%s: %s%s: %s", is.Severity, prefix, is.Field, is.Message))
				}
				if r.Definition != nil && r.Err != nil {
					lines = append(lines, fmt.Sprintf("%s: %sspec: the converted definition does not compile, so it is not printed: %s", karta.NotConverted, prefix, strings.Join(strings.Fields(r.Err.Error()), " ")))
				}
				for _, l := range lines {
					fmt.Fprintln(o.errOut, l)
				}
				if r.Definition == nil || r.Err != nil {
					continue
				}
				out, err := karta.MarshalYAML(r.Definition)
				if err != nil {
					return err
				}
				if converted > 0 {
					fmt.Fprintln(o.out, "---")
				}
				fmt.Fprintf(o.out, "# Converted by workmap import-karta from %s (%s).\n", r.Name, r.Source)
				if len(lines) > 0 {
					fmt.Fprintln(o.out, "# Review:")
				}
				for _, l := range lines {
					fmt.Fprintf(o.out, "# - %s\n", l)
				}
				if _, err := o.out.Write(out); err != nil {
					return err
				}
				converted++
			}
			if converted == 0 {
				return fmt.Errorf("%s: nothing could be converted (see the messages above)", file)
			}
			return nil
		},
	}
}
