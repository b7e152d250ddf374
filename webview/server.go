package webview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/live"
)

// Options configure the server.
type Options struct {
	// Registry holds the definitions in effect (catalog, cluster, files).
	Registry *definitions.Registry
	// Definitions, when set, is called once the cluster answers to build the registry (so
	// the cluster's WorkloadDefinitions count even when it was unreachable at start); when it
	// fails, Registry is used.
	Definitions func(context.Context) (*definitions.Registry, error)
	// Namespace limits the view to one namespace; "" shows them all.
	Namespace string
	// Expand says what counts as a GPU.
	Expand definitions.ExpandOptions
	// TopologyLevels are the cluster's topology levels, broad to narrow: the topology page
	// draws nodes in their domains (none: nodes only).
	TopologyLevels []TopologyLevel
	// Logger gets what goes wrong in the background (nil: discarded).
	Logger *slog.Logger
	// SyncTimeout bounds the wait for the caches before the first page shows workloads
	// (default 30s); Debounce is how long changes are gathered before the pages are updated
	// (default 100ms).
	SyncTimeout, Debounce time.Duration
	// Replan is how often the server reads again what the cluster serves and the definitions
	// in effect, to watch a CRD installed or a WorkloadDefinition applied after it started
	// (default 30s).
	Replan time.Duration
}

// Clients are what the server reads the cluster with.
type Clients struct {
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// Access checks what the user may list (nil: assume everything, let lists tell).
	Access authorizationv1.SelfSubjectAccessReviewInterface
	// Host is the API server's address, for messages.
	Host string
}

// ClientsFor builds the clients from a rest.Config.
func ClientsFor(cfg *rest.Config) (Clients, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	authz, err := authorizationv1.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Dynamic: dyn, Discovery: disc, Access: authz.SelfSubjectAccessReviews(), Host: cfg.Host}, nil
}

// Server watches the cluster and serves the pages and metrics. Run it with Run; serve
// Handler.
type Server struct {
	clients Clients
	opts    Options
	log     *slog.Logger
	watcher *watcher
	handler http.Handler
	pages   pageTemplates
	events  broker

	snapshot atomic.Pointer[Snapshot]
	health   *health
	ready    chan struct{}
	version  atomic.Uint64

	mu       sync.Mutex
	resolver *resolver
	byNS     map[string][]*Entry
	dirty    map[string]bool // namespaces to resolve again; "" means all
	problem  string
	wake     chan struct{}
}

// New makes a server; nothing is read from the cluster until Run.
func New(clients Clients, opts Options) *Server {
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = 30 * time.Second
	}
	if opts.Replan == 0 {
		opts.Replan = 30 * time.Second
	}
	if opts.Debounce == 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.Registry == nil {
		opts.Registry = definitions.NewRegistry()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{clients: clients, opts: opts, log: log, pages: parsePages(), health: newHealth(time.Now()), ready: make(chan struct{}), byNS: map[string][]*Entry{}, dirty: map[string]bool{}, wake: make(chan struct{}, 1)}
	s.watcher = newWatcher(clients, opts.Namespace, log, s.markDirty, s.unreachable)
	s.watcher.failed = s.health.watchFailed
	s.snapshot.Store(&Snapshot{Namespace: opts.Namespace, Host: clients.Host, Syncing: true, byKey: map[Key]*Entry{}})
	s.handler = s.routes()
	return s
}

// Handler serves the pages, the JSON documents, the event stream and /metrics.
func (s *Server) Handler() http.Handler { return s.handler }

// Snapshot is the current state of every workload.
func (s *Server) Snapshot() *Snapshot { return s.snapshot.Load() }

// Ready is closed once the caches synced and the first snapshot was published.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run discovers what the cluster serves (retrying while it cannot be reached), starts the
// informers and keeps the snapshot current until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	served, err := s.discover(ctx)
	if err != nil {
		return err
	}
	kinds, resources := plan(s.registry(ctx), served)
	s.watcher.watch(ctx, resources, served)
	s.watcher.watchNodes(ctx, served[nodesResource], s.poke)
	s.watcher.watchEvents(ctx, served[eventsResource])
	s.watcher.start(ctx)
	s.watcher.waitForSync(ctx, s.opts.SyncTimeout)
	s.setKinds(kinds)
	s.update(ctx)
	close(s.ready)

	probe := time.NewTicker(5 * time.Second)
	defer probe.Stop()
	replan := time.NewTicker(s.opts.Replan)
	defer replan.Stop()
	for {
		select {
		case <-replan.C:
			s.replan(ctx)
		case <-ctx.Done():
			return nil
		case <-s.wake:
			select { // gather the changes of a burst into one update
			case <-ctx.Done():
				return nil
			case <-time.After(s.opts.Debounce):
			}
			s.update(ctx)
		case <-probe.C:
			s.probe()
		}
	}
}

// registry is the definitions in effect: the cluster's read again (Definitions), or else
// Registry.
func (s *Server) registry(ctx context.Context) *definitions.Registry {
	if s.opts.Definitions != nil {
		r, err := s.opts.Definitions(ctx)
		if err == nil {
			return r
		}
		s.log.Warn("reading the cluster's definitions; using the others", "error", err)
	}
	return s.opts.Registry
}

// setKinds makes the workload kinds shown kinds, and recomputes every workload.
func (s *Server) setKinds(kinds []kindPlan) {
	s.mu.Lock()
	s.resolver = &resolver{watcher: s.watcher, kinds: kinds, live: &live.Resolver{Client: s.clients.Dynamic, Lister: s.watcher, Options: s.opts.Expand}}
	s.dirty[""] = true
	s.mu.Unlock()
}

// replan reads again what the cluster serves and the definitions in effect; when the workload
// kinds changed (a CRD installed or removed, a WorkloadDefinition applied or deleted), it
// watches what is new and shows the kinds as they are now, without a restart.
func (s *Server) replan(ctx context.Context) {
	served, err := live.ServedResources(s.clients.Discovery)
	if err != nil {
		return // the probe says the cluster cannot be reached
	}
	kinds, resources := plan(s.registry(ctx), served)
	s.mu.Lock()
	same := s.resolver != nil && slices.EqualFunc(s.resolver.kinds, kinds, func(a, b kindPlan) bool {
		return sameDefinition(a.def, b.def) && a.root == b.root && a.served == b.served
	})
	s.mu.Unlock()
	if same {
		return
	}
	s.log.Info("the workload kinds changed: watching them as they are now")
	s.watcher.watch(ctx, resources, served)
	s.watcher.start(ctx)
	s.watcher.waitForSync(ctx, s.opts.SyncTimeout)
	s.setKinds(kinds)
	s.update(ctx)
}

// sameDefinition says whether two compiled definitions are the same version of one definition
// (the cluster's are compiled again each time they are read).
func sameDefinition(a, b *definitions.Definition) bool {
	if a == b {
		return true
	}
	sa, sb := a.Source, b.Source
	return a.GroupKind == b.GroupKind && sa != nil && sb != nil && sa.Name == sb.Name && sa.UID == sb.UID &&
		sa.ResourceVersion == sb.ResourceVersion && sa.Generation == sb.Generation
}

// discover lists the resources the cluster serves, retrying with backoff while it fails; the
// pages say why meanwhile.
func (s *Server) discover(ctx context.Context) (map[schema.GroupVersionResource]bool, error) {
	backoff := time.Second
	for {
		served, err := live.ServedResources(s.clients.Discovery)
		if err == nil {
			s.setProblem("")
			return served, nil
		}
		s.setProblem(explain(s.clients.Host, err))
		s.log.Warn("discovery failed; retrying", "error", err, "in", backoff)
		s.publish()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// probe checks, while the cluster is unreachable, whether it answers again.
func (s *Server) probe() {
	s.mu.Lock()
	problem := s.problem
	s.mu.Unlock()
	if problem == "" {
		return
	}
	if _, err := s.clients.Discovery.ServerVersion(); err == nil {
		s.setProblem("")
		s.markDirty("")
	}
}

// setProblem records the cluster-wide problem ("": the cluster answered).
func (s *Server) setProblem(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problem = p
	s.health.set(p == "", time.Now())
}

func (s *Server) unreachable(err error) {
	s.mu.Lock()
	changed := s.problem == ""
	s.problem = explain(s.clients.Host, err)
	s.health.set(false, time.Now())
	s.mu.Unlock()
	if changed {
		s.publish()
	}
}

// markDirty asks for the workloads of a namespace ("" for all) to be resolved again.
func (s *Server) markDirty(ns string) {
	s.mu.Lock()
	s.dirty[ns] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// poke asks for a new snapshot without resolving any workload again (a node changed).
func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// update resolves the dirty namespaces again and publishes a new snapshot.
func (s *Server) update(ctx context.Context) {
	s.mu.Lock()
	dirty, r := s.dirty, s.resolver
	s.dirty = map[string]bool{}
	s.mu.Unlock()
	if r == nil {
		return
	}
	namespaces := dirty
	if dirty[""] {
		namespaces = r.namespaces()
		s.mu.Lock()
		for ns := range s.byNS {
			namespaces[ns] = true // drop what is gone
		}
		s.mu.Unlock()
	}
	resolved := map[string][]*Entry{}
	for ns := range namespaces {
		if ns != "" {
			resolved[ns] = r.resolveNamespace(ctx, ns)
		}
	}
	s.mu.Lock()
	for ns, entries := range resolved {
		if len(entries) == 0 {
			delete(s.byNS, ns)
		} else {
			s.byNS[ns] = entries
		}
	}
	s.mu.Unlock()
	s.publish()
}

// publish builds a snapshot from the resolved entries and the watch states, and tells the
// open pages.
func (s *Server) publish() {
	s.mu.Lock()
	snap := &Snapshot{Namespace: s.opts.Namespace, Host: s.clients.Host, Problem: s.problem, byKey: map[Key]*Entry{}}
	for _, entries := range s.byNS {
		snap.Entries = append(snap.Entries, entries...)
	}
	r := s.resolver
	s.mu.Unlock()
	sort.Slice(snap.Entries, func(i, j int) bool {
		a, b := snap.Entries[i].Key, snap.Entries[j].Key
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	count := map[schema.GroupKind]int{}
	for _, e := range snap.Entries {
		snap.byKey[e.Key] = e
		count[schema.GroupKind{Group: e.Key.Group, Kind: e.Key.Kind}]++
	}
	snap.Syncing = r == nil
	if r != nil {
		for _, k := range r.kinds {
			ks := KindStatus{Group: k.def.GroupKind.Group, Kind: k.def.GroupKind.Kind, Access: AccessNotInstalled, Workloads: count[k.def.GroupKind]}
			if k.served {
				ks.Resource = k.root
				ks.Access, ks.Message = s.watcher.source(k.root).state()
			}
			snap.Kinds = append(snap.Kinds, ks)
		}
		// The kinds of this cluster first, then those it does not serve; each in the registry's
		// order (group, kind).
		sort.SliceStable(snap.Kinds, func(i, j int) bool {
			return (snap.Kinds[i].Access != AccessNotInstalled) && (snap.Kinds[j].Access == AccessNotInstalled)
		})
		for _, src := range s.watcher.all() {
			a, m := src.state()
			snap.Resources = append(snap.Resources, ResourceStatus{Resource: src.gvr, Access: a, Message: m})
		}
		s.addNodes(snap)
	}
	snap.Version = s.version.Add(1)
	s.snapshot.Store(snap)
	s.events.notify()
}

// addNodes sets the snapshot's nodes, whether they could be read, and the pods on them that no
// workload shown holds.
func (s *Server) addNodes(snap *Snapshot) {
	gpuNames := gpuResources(s.opts.Expand)
	snap.NodeAccess = AccessNotInstalled
	if src := s.watcher.source(nodesResource); src != nil {
		snap.NodeAccess, snap.NodeMessage = src.state()
		if snap.NodeAccess != AccessNotPermitted {
			snap.Nodes = nodesOf(s.watcher.objects(nodesResource), s.opts.TopologyLevels, gpuNames)
		}
	}
	held := map[string]bool{}
	for _, e := range snap.Entries {
		for _, p := range e.PodUses {
			held[p.Namespace+"/"+p.Name] = true
		}
	}
	for _, p := range s.watcher.objects(podsResource) {
		if held[p.GetNamespace()+"/"+p.GetName()] {
			continue
		}
		if node, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName"); node == "" {
			continue
		}
		if u := podUseOf(p, gpuNames); u.Bound() && u.GPUs > 0 {
			snap.OtherPods = append(snap.OtherPods, u)
		}
	}
	sort.Slice(snap.OtherPods, func(i, j int) bool {
		a, b := snap.OtherPods[i], snap.OtherPods[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
}

// Serve runs a server for cfg on the listener until ctx ends: what `workmap serve` does.
func Serve(ctx context.Context, cfg *rest.Config, opts Options, l net.Listener) error {
	clients, err := ClientsFor(cfg)
	if err != nil {
		return err
	}
	s := New(clients, opts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(ctx) }()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", l.Addr(), err)
	}
	cancel()
	if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
