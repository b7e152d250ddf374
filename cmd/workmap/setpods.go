package main

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/paths"
	"github.com/workmap/workmap/live"
)

// stalePodsShown is how many pods the note on pods that keep their old template names.
const stalePodsShown = 3

// stalePodsNote says which of the workload's live pods do not have what the edits set: a
// pod's spec does not change with its template, so they keep the old values until the
// operator replaces them. "" when every pod has them, or the pods cannot be listed (the change
// itself went through: the note is a courtesy).
func stalePodsNote(ctx context.Context, reader *workloadReader, def *definitions.Definition, obj *unstructured.Unstructured, edits []podTemplateEdit, dryRun bool) string {
	r := &live.Resolver{Client: reader.dynamic, Pods: reader.pods, Options: reader.expand}
	res, err := r.Resolve(ctx, def, obj)
	if err != nil {
		return ""
	}
	var stale []string
	old := ""
	for _, p := range res.Pods {
		if p.GetDeletionTimestamp() != nil || finished(p) {
			continue
		}
		for _, e := range edits {
			if have, ok := podField(p, e.field); !ok || !reflect.DeepEqual(have, e.value) {
				stale = append(stale, "pod/"+p.GetName())
				if old == "" {
					old = podTemplateEdit{field: e.field, value: have}.String()
					if !ok {
						old = e.field + " unset"
					}
				}
				break
			}
		}
	}
	if len(stale) == 0 {
		return ""
	}
	names := strings.Join(stale[:min(len(stale), stalePodsShown)], ", ")
	if len(stale) > stalePodsShown {
		names += fmt.Sprintf(" and %d more", len(stale)-stalePodsShown)
	}
	keep := "keep"
	if dryRun {
		keep = "would keep"
	}
	return fmt.Sprintf("%d of its %d pods %s their old pod template (%s) until they are recreated: %s. A pod does not change with its template; the operator makes new pods from it when it replaces them (a rollout, a restart, or pods you delete).",
		len(stale), runningPods(res.Pods), keep, old, names)
}

// podField reads a field named as in a pod template (spec.schedulerName,
// metadata.labels["team"]) from a pod, which has the same metadata and spec.
func podField(pod *unstructured.Unstructured, field string) (any, bool) {
	p, err := paths.Parse(field)
	if err != nil {
		return nil, false
	}
	v, ok, err := p.GetOne(pod.Object)
	return v, ok && err == nil
}

// finished says whether a pod ran to its end (it is not replaced to take a new template).
func finished(pod *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(pod.Object, "status", "phase")
	return phase == "Succeeded" || phase == "Failed"
}

// runningPods counts the pods that are neither finished nor being deleted.
func runningPods(pods []*unstructured.Unstructured) int {
	n := 0
	for _, p := range pods {
		if p.GetDeletionTimestamp() == nil && !finished(p) {
			n++
		}
	}
	return n
}
