package grouper

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Options configure a Grouper. In workmap-scheduler, Pods, Kube and Recorder are the
// scheduler's own (its pod informer, clientset and event recorder), so the process has one pod
// cache; left nil, the grouper makes its own (for use outside a scheduler).
type Options struct {
	// SchedulerName selects the pods to group (spec.schedulerName).
	SchedulerName string
	// Builtin are the definitions in effect when the cluster has no WorkloadDefinition for a
	// kind (normally the embedded catalog).
	Builtin []*definitions.Definition
	// Metrics registers the grouper's metrics (nil: not registered).
	Metrics prometheus.Registerer
	// Workers is the number of pods decided in parallel (default 4).
	Workers int
	// Pods is the informer of the pods to group (objects *corev1.Pod); it is started by its
	// owner.
	Pods cache.SharedIndexInformer
	// Kube reads and writes pods, and finds resources through discovery.
	Kube kubernetes.Interface
	// Recorder records events.
	Recorder events.EventRecorder
	// Leader says when this process may write (nil: from the start).
	Leader *Leader
	// Queue is the scheduling queue where pods are woken once grouped, and a gang's pods when
	// its PodGroup appears or changes (nil: none, outside a scheduler).
	Queue Queue
}

// Grouper is the pod-grouper: the definitions source, the hub, the membership view, the
// controller that keeps it and the writer.
type Grouper struct {
	Controller  *Controller
	Definitions *DefinitionSource
	// DefinitionStatus writes the Accepted condition of the cluster's definitions.
	DefinitionStatus *DefinitionStatus
	// PodGroups reads and writes PodGroups.
	PodGroups PodGroupClient

	workers int
	// factory and broadcaster are the grouper's own when the caller gave none.
	factory     informers.SharedInformerFactory
	broadcaster events.EventBroadcaster
}

// New assembles a grouper on cfg; nothing runs until Run. PodGroups are read and written
// through a typed client of their own; the WorkloadDefinitions and top owners of any kind
// through one dynamic and one metadata-only client made from cfg. Every client it
// makes draws from cfg's rate limiter (one is made from cfg's QPS and Burst when cfg has
// none), so the grouper never adds a budget of its own.
func New(ctx context.Context, cfg *rest.Config, opts Options) (*Grouper, error) {
	cfg = OneBudget(cfg)
	if opts.SchedulerName == "" {
		return nil, fmt.Errorf("grouper: a scheduler name is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Leader == nil {
		opts.Leader = NewLeader()
		opts.Leader.Lead()
	}
	g := &Grouper{workers: opts.Workers}
	if opts.Kube == nil {
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		opts.Kube = kube
	}
	if opts.Pods == nil {
		g.factory = informers.NewSharedInformerFactoryWithOptions(opts.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.schedulerName", opts.SchedulerName).String()
		}))
		opts.Pods = g.factory.Core().V1().Pods().Informer()
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if opts.Recorder == nil {
		g.broadcaster = events.NewBroadcaster(&events.EventSinkImpl{Interface: opts.Kube.EventsV1()})
		opts.Recorder = g.broadcaster.NewRecorder(scheme, opts.SchedulerName)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	source := NewDefinitionSource(dyn, opts.Builtin)
	hub, owners, err := NewClusterHub(ctx, cfg, opts.Kube, source)
	if err != nil {
		return nil, err
	}
	metrics := NewMetrics(opts.Metrics)
	owners.WatchErrors = metrics.WatchErrors
	if err := source.CountWatchErrors(metrics.WatchErrors); err != nil {
		return nil, err
	}
	membership := NewMembership(opts.Queue)
	if g.PodGroups, err = NewPodGroupClient(cfg); err != nil {
		return nil, err
	}
	podGroups := NewPodGroupInformer(g.PodGroups)
	if err := metrics.WatchErrors.Watch(podGroups, v1alpha1.Resource.GroupResource(), nil); err != nil {
		return nil, err
	}
	writer := NewWriter(membership, g.PodGroups, podGroups.GetIndexer(), opts.Kube.CoreV1(), opts.Recorder, opts.Leader, metrics)
	controller, err := NewController(hub, membership, writer, opts.Pods, podGroups, opts.Recorder, metrics, opts.SchedulerName)
	if err != nil {
		return nil, err
	}
	controller.staleDefinition = source.Stale
	owners.OnSpecChange(controller.workloadChanged)
	g.Controller, g.Definitions = controller, source
	g.DefinitionStatus = NewDefinitionStatus(dyn, source, opts.Leader)
	source.OnChange(controller.ResyncPending)
	return g, nil
}

// Run watches definitions, groups pods and writes until ctx ends.
func (g *Grouper) Run(ctx context.Context) error {
	if g.broadcaster != nil {
		if err := g.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			return err
		}
		defer g.broadcaster.Shutdown()
	}
	if g.factory != nil {
		g.factory.Start(ctx.Done())
	}
	go g.Definitions.Run(ctx)
	go g.DefinitionStatus.Run(ctx)
	return g.Controller.Run(ctx, g.workers)
}
