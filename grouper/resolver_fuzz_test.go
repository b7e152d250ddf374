package grouper_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/grouper"
)

// FuzzOwnerResolver resolves pods whose controller owner reference holds anything (apiVersions
// that do not parse, unknown kinds, names and UIDs of no object, of a cycle, of a chain longer
// than MaxDepth) through OwnerResolver's own caches: no panic, no wait beyond its retry, and
// an error for everything it could not resolve, with a reason.
func FuzzOwnerResolver(f *testing.F) {
	for _, seed := range []struct{ apiVersion, kind, name, uid string }{
		{"batch/v1", "Job", "train-workers-0", "job"},
		{"batch/v1", "Job", "a", "a"},           // a cycle
		{"batch/v1", "Job", "link-0", "link-0"}, // a chain of 20
		{"batch/v1", "Job", "gone", "gone"},     // no such object
		{"batch/v1", "Job", "a", "b"},           // another object's UID
		{"batch/v2", "Job", "a", "a"},           // a version not served
		{"example.com/v1", "Unknown", "x", "x"}, // an unknown kind
		{"a/b/c", "Job", "a", "a"},              // an apiVersion that does not parse
		{"", "", "", ""},                        // nothing
		{"/v1", "Job", "a", "a"},                // an empty group
		{"jobset.x-k8s.io/v1alpha2", "JobSet", "train", "js"},
		{"Batch/V1", "JOB", "a\x00b", "a"},
	} {
		f.Add(seed.apiVersion, seed.kind, seed.name, seed.uid)
	}
	objs := []runtime.Object{
		partial(jobSetGVK, "train", "js", nil),
		partial(jobGVK, "train-workers-0", "job", controllerRef(jobSetGVK, "train", "js")),
		partial(jobGVK, "a", "a", controllerRef(jobGVK, "b", "b")),
		partial(jobGVK, "b", "b", controllerRef(jobGVK, "a", "a")),
	}
	for i := range 20 {
		var owner *metav1.OwnerReference
		if i < 19 {
			owner = controllerRef(jobGVK, fmt.Sprintf("link-%d", i+1), types.UID(fmt.Sprintf("link-%d", i+1)))
		}
		objs = append(objs, partial(jobGVK, fmt.Sprintf("link-%d", i), types.UID(fmt.Sprintf("link-%d", i)), owner))
	}
	r := fakeResolver(f, objs...)
	f.Fuzz(func(t *testing.T, apiVersion, kind, name, uid string) {
		yes := true
		pod := &metav1.ObjectMeta{Name: "pod", Namespace: "ml", UID: "pod-uid", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		top, err := r.TopOwner(ctx, pod, "v1", "Pod")
		if ctx.Err() != nil {
			t.Fatalf("the lookup ran until its context ended: %v", err)
		}
		if err == nil {
			if top.UID == pod.UID || top.Kind == "" {
				t.Fatalf("resolved without error to %s %s", top.Kind, top.Name)
			}
			return
		}
		if reason := grouper.ProblemReason(err); reason == grouper.ProblemOther {
			t.Fatalf("an error without a clear reason: %v", err)
		}
		if errors.Is(err, grouper.ErrOwnerCycle) || errors.Is(err, grouper.ErrOwnerChainTooLong) {
			if top.UID != pod.UID {
				t.Fatalf("a broken ownership (%v) must leave the pod its own workload, got %s %s", err, top.Kind, top.Name)
			}
		}
	})
}
