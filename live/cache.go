package live

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ListCache holds whole-namespace lists so that resolving many workloads costs one list per
// resource and namespace. It never refreshes: make one per command. Safe for concurrent use.
type ListCache struct {
	mu    sync.Mutex
	lists map[listKey]*listResult
}

type listKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

// listResult is one list, made once: callers that ask for it while it is being made wait.
type listResult struct {
	once  sync.Once
	items []*unstructured.Unstructured
	err   error
}

// NewListCache returns an empty cache.
func NewListCache() *ListCache { return &ListCache{lists: map[listKey]*listResult{}} }

// listFunc makes one list call.
type listFunc func(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ([]*unstructured.Unstructured, error)

func (c *ListCache) list(ctx context.Context, listOnce listFunc, gvr schema.GroupVersionResource, ns string, sel map[string]string) ([]*unstructured.Unstructured, error) {
	key := listKey{gvr, ns}
	c.mu.Lock()
	res, ok := c.lists[key]
	if !ok {
		res = &listResult{}
		c.lists[key] = res
	}
	c.mu.Unlock()
	res.once.Do(func() { res.items, res.err = listOnce(ctx, gvr, ns, metav1.ListOptions{}) })
	if res.err != nil {
		return nil, res.err
	}
	if sel == nil {
		return res.items, nil
	}
	selector := labels.SelectorFromSet(sel)
	var out []*unstructured.Unstructured
	for _, o := range res.items {
		if selector.Matches(labels.Set(o.GetLabels())) {
			out = append(out, o)
		}
	}
	return out, nil
}
