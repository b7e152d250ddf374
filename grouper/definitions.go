package grouper

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// DefinitionSource keeps the definitions in effect while the grouper runs: the embedded
// catalog, overridden by the WorkloadDefinitions in the cluster (watched; each generation
// compiled once). An invalid definition in the cluster is logged and skipped.
type DefinitionSource struct {
	builtin  []*definitions.Definition
	compiled *definitions.Cache
	informer cache.SharedIndexInformer
	current  atomic.Pointer[definitions.Registry]
	changed  atomic.Pointer[func()]
}

// OnChange makes the source call fn after the definitions in effect changed (call it before
// Run).
func (s *DefinitionSource) OnChange(fn func()) { s.changed.Store(&fn) }

// NewDefinitionSource watches the cluster's WorkloadDefinitions once Run is called.
func NewDefinitionSource(client dynamic.Interface, builtin []*definitions.Definition) *DefinitionSource {
	s := &DefinitionSource{
		builtin:  builtin,
		compiled: definitions.NewCache(),
		informer: dynamicinformer.NewFilteredDynamicInformer(client, v1alpha1.SchemeGroupVersion.WithResource("workloaddefinitions"), "", 0, cache.Indexers{}, nil).Informer(),
	}
	s.rebuild(context.Background())
	_, _ = s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.rebuild(context.Background()) },
		UpdateFunc: func(any, any) { s.rebuild(context.Background()) },
		DeleteFunc: func(any) { s.rebuild(context.Background()) },
	})
	return s
}

// Run watches until ctx ends.
func (s *DefinitionSource) Run(ctx context.Context) { s.informer.RunWithContext(ctx) }

// HasSynced reports whether the cluster's definitions have been read.
func (s *DefinitionSource) HasSynced() bool { return s.informer.HasSynced() }

// Registry returns the definitions in effect now.
func (s *DefinitionSource) Registry() *definitions.Registry { return s.current.Load() }

func (s *DefinitionSource) rebuild(ctx context.Context) {
	reg := definitions.NewRegistry()
	reg.Add(s.builtin...)
	for _, item := range s.informer.GetStore().List() {
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var wd v1alpha1.WorkloadDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &wd); err != nil {
			klog.FromContext(ctx).Error(err, "skipping WorkloadDefinition", "name", u.GetName())
			continue
		}
		d, err := s.compiled.Compile(&wd, definitions.CompileOptions{})
		if err != nil {
			klog.FromContext(ctx).Error(err, "skipping invalid WorkloadDefinition", "name", u.GetName())
			continue
		}
		reg.Add(d)
	}
	s.current.Store(reg)
	if fn := s.changed.Load(); fn != nil {
		(*fn)()
	}
}
