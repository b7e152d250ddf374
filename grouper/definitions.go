package grouper

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// DefinitionSource keeps the definitions in effect while the grouper runs: the embedded
// catalog, overridden by the WorkloadDefinitions in the cluster (watched; each generation
// compiled once; of two for one kind, the one whose name sorts last). A definition changed into
// an invalid one is logged, and its last valid generation stays in effect (an invalid one never
// valid is skipped), across restarts too (its status records it); what became of each one is
// remembered for its status (DefinitionStatus writes it).
type DefinitionSource struct {
	builtin  []*definitions.Definition
	compiled *definitions.Cache
	informer cache.SharedIndexInformer
	current  atomic.Pointer[definitions.Registry]
	changed  atomic.Pointer[func()]
	// results are what became of each cluster definition, by name (see definitionstatus.go);
	// judged is called after they change.
	results atomic.Pointer[map[string]definitionResult]
	judged  atomic.Pointer[func()]

	// lastGood is, by name, the last generation of each cluster definition that compiled.
	mu       sync.Mutex
	lastGood map[string]compiledDefinition
	// stale says, by kind, why the definition in effect is an earlier generation than the
	// cluster's (its latest is invalid).
	stale atomic.Pointer[map[schema.GroupKind]string]
}

// Stale says, for a kind whose definition in effect is the last valid generation of a cluster
// definition whose latest one is invalid, what is wrong with the latest (for an event on the
// pods it groups).
func (s *DefinitionSource) Stale(gk schema.GroupKind) (string, bool) {
	m := s.stale.Load()
	if m == nil {
		return "", false
	}
	msg, ok := (*m)[gk]
	return msg, ok
}

// OnChange makes the source call fn after the definitions in effect changed (call it before
// Run).
func (s *DefinitionSource) OnChange(fn func()) { s.changed.Store(&fn) }

// NewDefinitionSource watches the cluster's WorkloadDefinitions once Run is called.
func NewDefinitionSource(client dynamic.Interface, builtin []*definitions.Definition) *DefinitionSource {
	s := &DefinitionSource{
		builtin:  builtin,
		compiled: definitions.NewCache(),
		lastGood: map[string]compiledDefinition{},
		informer: dynamicinformer.NewFilteredDynamicInformer(client, v1alpha1.SchemeGroupVersion.WithResource("workloaddefinitions"), "", 0, cache.Indexers{}, nil).Informer(),
	}
	s.rebuild(context.Background())
	_, _ = s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { s.rebuild(context.Background()) },
		UpdateFunc: func(old, cur any) {
			if sameGeneration(old, cur) {
				// A status (or metadata) update: nothing to recompile; the status writer
				// checks the conditions are still as they should be.
				if fn := s.judged.Load(); fn != nil {
					(*fn)()
				}
				return
			}
			s.rebuild(context.Background())
		},
		DeleteFunc: func(any) { s.rebuild(context.Background()) },
	})
	return s
}

// CountWatchErrors has w count the failed lists and watches of the definitions (call it before
// Run).
func (s *DefinitionSource) CountWatchErrors(w *WatchErrors) error {
	return w.Watch(s.informer, v1alpha1.SchemeGroupVersion.WithResource("workloaddefinitions").GroupResource(), nil)
}

// Run watches until ctx ends.
func (s *DefinitionSource) Run(ctx context.Context) { s.informer.RunWithContext(ctx) }

// HasSynced reports whether the cluster's definitions have been read.
func (s *DefinitionSource) HasSynced() bool { return s.informer.HasSynced() }

// Registry returns the definitions in effect now.
func (s *DefinitionSource) Registry() *definitions.Registry { return s.current.Load() }

func (s *DefinitionSource) rebuild(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reg := definitions.NewRegistry()
	reg.Add(s.builtin...)
	items := s.informer.GetStore().List()
	var compiled []compiledDefinition
	for _, item := range items {
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		c := compiledDefinition{name: u.GetName(), generation: u.GetGeneration()}
		var wd v1alpha1.WorkloadDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &wd); err != nil {
			klog.FromContext(ctx).Error(err, "skipping WorkloadDefinition", "name", u.GetName())
			c.err = err
			compiled = append(compiled, c)
			continue
		}
		c.groupKind = schema.GroupKind{Group: wd.Spec.Workload.Group, Kind: wd.Spec.Workload.Kind}
		c.def, c.err = s.compiled.Compile(&wd, definitions.CompileOptions{})
		if _, had := s.lastGood[c.name]; c.err != nil && !had {
			// After a restart: the last valid generation the status records.
			if d := definitions.CompileLastValid(&wd, definitions.CompileOptions{}); d != nil {
				s.lastGood[c.name] = compiledDefinition{name: c.name, generation: d.Source.Generation, groupKind: d.GroupKind, def: d}
			}
		}
		switch good, had := s.lastGood[c.name]; {
		case c.err == nil:
			s.lastGood[c.name] = c
		case had:
			c.lastGood = &good
			klog.FromContext(ctx).Error(c.err, "invalid WorkloadDefinition: its last valid generation stays in effect", "name", u.GetName(), "generation", u.GetGeneration(), "inEffect", good.generation)
		default:
			klog.FromContext(ctx).Error(c.err, "skipping invalid WorkloadDefinition", "name", u.GetName())
		}
		compiled = append(compiled, c)
	}
	for name := range s.lastGood {
		if !slices.ContainsFunc(compiled, func(c compiledDefinition) bool { return c.name == name }) {
			delete(s.lastGood, name) // deleted
		}
	}
	// By name, as the API server lists them (and the CLI layers them): of two definitions
	// for one kind, the later name wins, whatever order the watch delivered them in.
	sort.Slice(compiled, func(i, j int) bool { return compiled[i].name < compiled[j].name })
	for _, c := range compiled {
		if d := c.inEffect(); d != nil {
			reg.Add(d)
		}
	}
	s.current.Store(reg)
	stale := map[schema.GroupKind]string{}
	for _, c := range compiled {
		if c.def == nil && c.lastGood != nil {
			if d, _ := reg.Lookup(c.lastGood.groupKind); d == c.lastGood.def {
				stale[c.lastGood.groupKind] = fmt.Sprintf("WorkloadDefinition %s generation %d is invalid (%s); its generation %d, the last valid one, groups this pod",
					c.name, c.generation, invalidMessage(c.err), c.lastGood.generation)
			}
		}
	}
	s.stale.Store(&stale)
	results := judge(compiled, reg, s.builtin)
	s.results.Store(&results)
	if fn := s.changed.Load(); fn != nil {
		(*fn)()
	}
	if fn := s.judged.Load(); fn != nil {
		(*fn)()
	}
}

// compiledDefinition is one cluster definition as compiled: def when valid, else err.
type compiledDefinition struct {
	name       string
	generation int64
	groupKind  schema.GroupKind
	def        *definitions.Definition
	err        error
	// lastGood is, when this generation is invalid, the last one that compiled.
	lastGood *compiledDefinition
}

// inEffect is the definition this one puts in effect: itself when valid, else its last valid
// generation (nil: none).
func (c compiledDefinition) inEffect() *definitions.Definition {
	if c.def != nil {
		return c.def
	}
	if c.lastGood != nil {
		return c.lastGood.def
	}
	return nil
}

// sameGeneration reports whether an update left a definition's generation alone (set, and
// unchanged): the API server bumps it on every change of the spec.
func sameGeneration(old, cur any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	c, ok2 := cur.(*unstructured.Unstructured)
	return ok1 && ok2 && o.GetGeneration() != 0 && o.GetGeneration() == c.GetGeneration()
}
