package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/internal/access"
	"github.com/workmap/workmap/live"
)

// listParallelism bounds how many kinds are listed at once.
const listParallelism = 8

// kindListing is what listing one kind gave.
type kindListing struct {
	workloads []*definitions.Workload
	// forbidden is set when the user may not list the kind.
	forbidden bool
	err       error
}

// ReadAll reads every workload of the kinds in a namespace (every namespace for ""), several
// kinds at once, each as Read reads one, listing each child kind and the pods once per
// namespace. A kind the user may not list is
// skipped with one warning line, and so is a child kind or the pods (those workloads are shown
// from their spec); named says the user named the kinds, so a kind that cannot be listed at
// all is an error rather than a warning when it is the only one.
func (r *workloadReader) ReadAll(ctx context.Context, kinds []servedKind, ns string, named bool) ([]*definitions.Workload, error) {
	resolver := r.resolver(live.NewListCache())
	listed := func(gk schema.GroupKind) bool {
		return slices.ContainsFunc(kinds, func(k servedKind) bool { return k.def.GroupKind == gk })
	}
	results := make([]kindListing, len(kinds))
	forbidden := make([][]string, len(kinds))
	sem := make(chan struct{}, listParallelism)
	var wg sync.WaitGroup
	for i, k := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], forbidden[i] = r.listKind(ctx, resolver, k, ns, listed)
		}()
	}
	wg.Wait()

	var refused []schema.GroupResource
	for i, res := range results {
		if res.err != nil {
			return nil, res.err
		}
		if res.forbidden {
			refused = append(refused, kinds[i].resource.GroupResource())
		}
	}
	switch {
	case len(refused) == 1 && len(kinds) == 1 && named:
		return nil, access.New("list", refused[0], ns, nil)
	case len(refused) > 0 && len(refused) == len(kinds):
		return nil, errors.New(access.Kinds("list", refused, ns))
	}
	ws := []*definitions.Workload{}
	warned := map[string]bool{}
	for i, res := range results {
		for _, line := range forbidden[i] {
			if !warned[line] {
				warned[line] = true
				r.warnf("%s", line)
			}
		}
		ws = append(ws, res.workloads...)
	}
	return ws, nil
}

// listKind lists and resolves the workloads of one kind, but for those a workload of a kind
// listed controls (shown under it); the lines are the lists the user
// was refused, in order, once each.
func (r *workloadReader) listKind(ctx context.Context, resolver *live.Resolver, k servedKind, ns string, listed func(schema.GroupKind) bool) (kindListing, []string) {
	list, err := r.dynamic.Resource(k.resource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return kindListing{forbidden: true}, []string{access.New("list", k.resource.GroupResource(), ns, err).Message()}
	}
	if err != nil {
		return kindListing{err: fmt.Errorf("listing %s %s: %w", k.name(), namespaceText(ns), r.explain(err))}, nil
	}
	roots := list.Items
	sort.Slice(roots, func(i, j int) bool {
		return roots[i].GetNamespace()+"/"+roots[i].GetName() < roots[j].GetNamespace()+"/"+roots[j].GetName()
	})
	var out kindListing
	var lines []string
	for i := range roots {
		if live.PartOfAnother(&roots[i], k.def.GroupKind, listed) {
			continue // listed under the workload that controls it, or part of its owner's
		}
		res, err := resolver.Resolve(ctx, k.def, &unstructured.Unstructured{Object: roots[i].Object})
		if err != nil {
			return kindListing{err: fmt.Errorf("%s %s/%s: %w", k.def.GroupKind.Kind, roots[i].GetNamespace(), roots[i].GetName(), r.explain(err))}, nil
		}
		for _, f := range res.Forbidden {
			if !slices.Contains(lines, f) {
				lines = append(lines, f)
			}
		}
		r.gangStates(ctx, resolver, res.Workload, r.gangs)
		out.workloads = append(out.workloads, res.Workload)
	}
	return out, lines
}

func namespaceText(ns string) string {
	if ns == "" {
		return "in any namespace"
	}
	return "in namespace " + ns
}
