package grouper

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// graphGetter reads owners from a map, as OwnerResolver reads its caches: a kind it does not
// know is not served, an object of another UID is not the owner.
type graphGetter map[string]*metav1.ObjectMeta

func (g graphGetter) get(_ context.Context, ref metav1.OwnerReference, namespace string) (metav1.Object, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, err
	}
	if ref.Kind != "Link" || gv.Group != "example.com" {
		return nil, &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, SearchedVersions: []string{gv.Version}}
	}
	o, ok := g[namespace+"/"+ref.Name]
	if !ok || o.UID != ref.UID {
		return nil, fmt.Errorf("%w: link %s", ErrOwnerNotFound, ref.Name)
	}
	return o, nil
}

// ownerGraph builds objects from fuzz data, four bytes each: whom the object's controller
// owner reference names (or none), how the reference is broken (a wrong UID, kind or
// apiVersion, missing fields, not a controller), the object's UID (possibly shared) and
// whether it asks to be skipped. A first byte above 200 adds a chain of a thousand owners.
func ownerGraph(data []byte) (graphGetter, *metav1.ObjectMeta) {
	n := len(data) / 4
	objs := make([]*metav1.ObjectMeta, n+1)
	for i := range objs {
		objs[i] = &metav1.ObjectMeta{Name: fmt.Sprintf("o%d", i), Namespace: "ml", UID: types.UID(fmt.Sprintf("u%d", i))}
	}
	yes, no := true, false
	for i := range n {
		b := data[4*i : 4*i+4]
		o := objs[i]
		switch b[2] % 8 {
		case 0:
			o.UID = types.UID(fmt.Sprintf("u%d", int(b[2])%(n+1))) // may be another object's
		case 1:
			o.UID = ""
		}
		if b[3]%5 == 0 {
			o.Annotations = map[string]string{SkipAnnotation: "true"}
		}
		if b[0]%4 == 0 {
			continue // no owner
		}
		target := objs[int(b[0])%(n+1)]
		ref := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Link", Name: target.Name, UID: target.UID, Controller: &yes}
		switch b[1] % 12 {
		case 0:
			ref.UID = "gone"
		case 1:
			ref.Kind = "Unknown"
		case 2:
			ref.APIVersion = "a/b/c"
		case 3:
			ref.APIVersion = ""
		case 4:
			ref.Name = ""
		case 5:
			ref.Kind = ""
		case 6:
			ref.Controller = &no
		case 7:
			ref.APIVersion = "/v1"
		}
		o.OwnerReferences = []metav1.OwnerReference{ref}
	}
	g := graphGetter{}
	for _, o := range objs {
		g[o.Namespace+"/"+o.Name] = o
	}
	if len(data) > 0 && data[0] > 200 {
		prev := objs[n]
		for i := range 1000 {
			o := &metav1.ObjectMeta{Name: fmt.Sprintf("chain%d", i), Namespace: "ml", UID: types.UID(fmt.Sprintf("c%d", i))}
			prev.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Link", Name: o.Name, UID: o.UID, Controller: &yes}}
			g[o.Namespace+"/"+o.Name] = o
			prev = o
		}
	}
	pod := &metav1.ObjectMeta{Name: "pod", Namespace: "ml", UID: "pod-uid"}
	if n > 0 {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Link", Name: objs[0].Name, UID: objs[0].UID, Controller: &yes}}
	}
	return g, pod
}

// FuzzTopOwner walks owner chains of any shape (cycles, self-references, references missing
// their UID, kind or apiVersion, unknown kinds, chains of a thousand owners): it must end,
// never panic, and either reach an object without a controller owner or say why it stopped,
// with a reason the metrics can count. A broken ownership (cycle, chain too long) makes the
// pod its own workload.
func FuzzTopOwner(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		{1, 12, 2, 1},              // pod → o0 → o1 (no owner)
		{0, 12, 2, 1},              // o0 owns itself
		{2, 12, 2, 1, 1, 12, 2, 1}, // o0 → o1 → o0: a cycle
		{1, 0, 2, 1},               // the owner was recreated (another UID)
		{1, 1, 2, 1},               // an unknown kind
		{1, 2, 2, 1},               // an apiVersion that does not parse
		{1, 3, 2, 1}, {1, 4, 2, 1}, // no apiVersion, no name
		{1, 12, 1, 1},                           // an owner without a UID
		{1, 12, 8, 1},                           // an owner with another's UID
		{1, 12, 2, 0},                           // a skipped owner
		{201, 12, 2, 1},                         // a chain of a thousand owners
		{205, 12, 2, 0, 2, 6, 2, 1},             // a chain and a reference that is not a controller
		{1, 7, 2, 1},                            // apiVersion "/v1"
		{3, 12, 2, 1, 3, 12, 2, 1, 1, 12, 2, 1}, // o0 → o3 → o1 → o1
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4*256 {
			data = data[:4*256]
		}
		g, pod := ownerGraph(data)
		const maxDepth = 10
		top, err := topOwner(context.Background(), g, maxDepth, pod, "v1", "Pod")
		if top.Depth > maxDepth {
			t.Fatalf("depth %d beyond %d", top.Depth, maxDepth)
		}
		switch {
		case err == nil:
			o, ok := g[top.Namespace+"/"+top.Name]
			if top.UID != pod.UID && (!ok || metav1.GetControllerOfNoCopy(o) != nil) {
				t.Fatalf("top owner %s/%s still has a controller owner", top.Namespace, top.Name)
			}
		case errors.Is(err, ErrOwnerCycle), errors.Is(err, ErrOwnerChainTooLong):
			if top.UID != pod.UID || top.Kind != "Pod" || top.Depth != 0 {
				t.Fatalf("a broken ownership (%v) must leave the pod its own workload, got %s %s", err, top.Kind, top.Name)
			}
		}
		if reason := ProblemReason(err); err != nil && (reason == ProblemOther || err.Error() == "") {
			t.Fatalf("an error without a clear reason: %v", err)
		}
	})
}
