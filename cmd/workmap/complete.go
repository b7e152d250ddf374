package main

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completionTimeout bounds the cluster reads of one completion: a shell waits for it.
const completionTimeout = 5 * time.Second

// completeWorkload completes a KIND/NAME argument as kubectl completes TYPE/NAME: first the
// workload kinds the definitions in effect describe (`jobset/`), read offline, then the names
// of that kind's objects in the namespace, read from the cluster when it answers.
func (o *options) completeWorkload(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	kind, prefix, named := strings.Cut(toComplete, "/")
	if !named {
		kinds, _ := o.completeKinds(cmd, nil, toComplete)
		for i := range kinds {
			kinds[i] += "/"
		}
		return kinds, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	r, err := o.workloadReader()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	k, err := r.kindNamed(ctx, kind)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := r.dynamic.Resource(k.resource).Namespace(r.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, item := range list.Items {
		if strings.HasPrefix(item.GetName(), prefix) {
			out = append(out, kind+"/"+item.GetName())
		}
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeKinds completes a KIND argument with the workload kinds the definitions in effect
// describe, by the lower-case kind name kubectl also accepts.
func (o *options) completeKinds(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	reg, err := o.registry()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, s := range reg.Sources() {
		if name := strings.ToLower(s.Spec.Workload.Kind); strings.HasPrefix(name, strings.ToLower(toComplete)) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}
