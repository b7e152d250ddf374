package main

import (
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/live"
)

// options are the flags shared by every command.
type options struct {
	out, errOut    io.Writer
	definitionDirs []string
	output         string
	// gpuResources and gpuDeviceClasses say what counts as a GPU (empty: the defaults).
	gpuResources, gpuDeviceClasses []string
	// gangSchedulers are the schedulers that gang pods (a gang whose pods ask for another is
	// not in effect).
	gangSchedulers []string
	// kube holds kubectl's connection flags (--kubeconfig, --context, -n, ...).
	kube *genericclioptions.ConfigFlags
}

// newRootCommand builds the CLI; tune adjusts the options (tests use it to wrap the client).
func newRootCommand(out, errOut io.Writer, tune ...func(*options)) *cobra.Command {
	o := &options{out: out, errOut: errOut, kube: genericclioptions.NewConfigFlags(true)}
	for _, f := range tune {
		f(o)
	}
	root := &cobra.Command{
		Use:   "workmap",
		Short: "Show AI workloads on Kubernetes as trees of roles, pods and GPUs",
		Long: `workmap shows AI workloads (JobSet, PyTorchJob, RayCluster, LeaderWorkerSet, ...) as one
tree each: roles, replicas, pods, GPUs, one status with its reason, and the gangs the
workmap scheduler would form. It reads the cluster through your kubeconfig and needs
nothing installed there; -f reads manifests offline.`,
		// Run as kubectl's plugin, help says `kubectl workmap tree ...`.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: displayName(os.Args[0])},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	kube := pflag.NewFlagSet("kubeconfig", pflag.ContinueOnError)
	o.kube.AddFlags(kube)
	markFlags(kube, kubeconfigGroup)
	root.PersistentFlags().AddFlagSet(kube)
	root.PersistentFlags().StringSliceVar(&o.definitionDirs, "definitions", nil, "files or directories of WorkloadDefinitions that override the catalog and the cluster's definitions")
	root.PersistentFlags().StringSliceVar(&o.gangSchedulers, "gang-schedulers", []string{live.DefaultGangScheduler}, "schedulers that gang pods: the live gangs of pods that ask for another are shown as not in effect")
	root.PersistentFlags().StringSliceVar(&o.gpuResources, "gpu-resources", nil, "extended resources that count as whole GPUs (default "+resourceNames(definitions.DefaultGPUResources)+")")
	root.PersistentFlags().StringSliceVar(&o.gpuDeviceClasses, "gpu-device-classes", nil, "DRA device classes whose devices count as GPUs (default "+strings.Join(definitions.DefaultGPUDeviceClasses, ",")+")")
	root.AddCommand(
		newTreeCommand(o), newGetCommand(o), newGroupsCommand(o),
		newLintCommand(o), newTestCommand(o), newCatalogCommand(o), newVersionCommand(o), newImportKartaCommand(o),
		newServeCommand(o), newSetCommand(o),
	)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "test", "version", "import-karta", "completion", "help":
			markOffline(c)
		}
	}
	root.SetUsageFunc(usage)
	return root
}

func resourceNames(names []corev1.ResourceName) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return strings.Join(out, ",")
}
