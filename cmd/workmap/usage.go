package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagGroupAnnotation marks the flags of a group shown apart in help.
const flagGroupAnnotation = "workmap.dev/flag-group"

// kubeconfigGroup is the group of kubectl's connection flags (--kubeconfig, --context, -n, ...).
const kubeconfigGroup = "kubeconfig"

// offlineAnnotation marks a command that never talks to the cluster: its help leaves out
// the kubeconfig flags.
const offlineAnnotation = "workmap.dev/offline"

// markFlags puts every flag of fs into a help group.
func markFlags(fs *pflag.FlagSet, group string) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[flagGroupAnnotation] = []string{group}
	})
}

func inGroup(f *pflag.Flag, group string) bool {
	g := f.Annotations[flagGroupAnnotation]
	return len(g) == 1 && g[0] == group
}

// markOffline marks commands, and the commands under them, as never reading the cluster.
func markOffline(cmds ...*cobra.Command) {
	for _, c := range cmds {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[offlineAnnotation] = "true"
		markOffline(c.Commands()...)
	}
}

func isOffline(c *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		if c.Annotations[offlineAnnotation] == "true" {
			return true
		}
	}
	return false
}

// displayName is the command's name in help: `kubectl workmap` when kubectl runs it as the
// plugin kubectl-workmap.
func displayName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if strings.HasPrefix(base, "kubectl-") {
		return "kubectl " + strings.ReplaceAll(strings.TrimPrefix(base, "kubectl-"), "_", "-")
	}
	return "workmap"
}

// usage prints a command's usage like cobra's default, with its own flags first, then
// workmap's global flags, then (for commands that read the cluster) kubectl's connection
// flags in a section of their own.
func usage(c *cobra.Command) error {
	w := c.OutOrStderr()
	fmt.Fprint(w, "Usage:")
	if c.Runnable() {
		fmt.Fprintf(w, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n  %s [command]", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(w, "\n\nAliases:\n  %s", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprint(w, "\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(w, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	own, global, kube := pflag.NewFlagSet("own", pflag.ContinueOnError), pflag.NewFlagSet("global", pflag.ContinueOnError), pflag.NewFlagSet("kube", pflag.ContinueOnError)
	sort := func(f *pflag.Flag) {
		switch {
		case inGroup(f, kubeconfigGroup):
			kube.AddFlag(f)
		case c.InheritedFlags().Lookup(f.Name) == f || (!c.HasParent() && c.PersistentFlags().Lookup(f.Name) == f):
			global.AddFlag(f)
		default:
			own.AddFlag(f)
		}
	}
	c.LocalFlags().VisitAll(sort)
	c.InheritedFlags().VisitAll(sort)
	section(w, "Flags", own)
	section(w, "Global Flags", global)
	if !isOffline(c) {
		section(w, "Kubeconfig Flags", kube)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	fmt.Fprintln(w)
	return nil
}

func section(w io.Writer, title string, fs *pflag.FlagSet) {
	if s := strings.TrimRight(fs.FlagUsages(), " \t\n"); s != "" {
		fmt.Fprintf(w, "\n\n%s:\n%s", title, s)
	}
}
