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
			info, _ := debug.ReadBuildInfo()
			raw, err := catalog.Raw()
			if err != nil {
				return err
			}
			kinds, err := catalog.KubernetesKinds()
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "workmap %s, catalog of %d definitions and %d of Kubernetes' own kinds\n", versionString(version, info), len(raw), len(kinds))
			return nil
		},
	}
}

// versionString says which workmap this is: the version set at build time, else the module
// version (`go install ...@v1.2.3`), else the commit it was built from (with "-dirty" when
// the tree had uncommitted changes) and its time; "unknown" when the build records none.
func versionString(set string, info *debug.BuildInfo) string {
	if set != "" {
		return set
	}
	if info == nil {
		return "unknown"
	}
	var revision, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	if revision == "" {
		return "unknown (built without version control information)"
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	out := "commit " + revision
	if modified {
		out += "-dirty"
	}
	if at != "" {
		out += " (" + at + ")"
	}
	return out
}
