package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/workmap/workmap/definitions/catalog"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func newVersionCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print workmap's version and the size of its embedded catalog",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := version
			if v == "" {
				v = "(devel)"
				if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
					v = info.Main.Version
				}
			}
			raw, err := catalog.Raw()
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "workmap %s, catalog of %d definitions\n", v, len(raw))
			return nil
		},
	}
}
