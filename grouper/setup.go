package grouper

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Options configure a Grouper.
type Options struct {
	// SchedulerName selects the pods to group (spec.schedulerName).
	SchedulerName string
	// Builtin are the definitions in effect when the cluster has no WorkloadDefinition for a
	// kind (normally the embedded catalog).
	Builtin []*definitions.Definition
	// Metrics registers the grouper's metrics (nil: not registered).
	Metrics prometheus.Registerer
	// Workers is the number of pods grouped in parallel (default 4).
	Workers int
}

// Grouper is the pod-grouper assembled from a client configuration: the definitions source,
// the hub and the controller.
type Grouper struct {
	Controller  *Controller
	Definitions *DefinitionSource
	// Client reads and writes PodGroups.
	Client client.Client

	workers     int
	broadcaster record.EventBroadcaster
}

// New assembles a grouper; nothing runs until Run.
func New(ctx context.Context, cfg *rest.Config, opts Options) (*Grouper, error) {
	if opts.SchedulerName == "" {
		return nil, fmt.Errorf("grouper: a scheduler name is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// PodGroups are custom resources: JSON, whatever the caller's content type (kube-scheduler
	// asks for protobuf).
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	groups, err := client.New(jsonCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	source := NewDefinitionSource(dyn, opts.Builtin)
	hub := &Hub{
		Owners:      NewOwnerResolver(meta, mapper, ctx.Done()),
		Natives:     DefaultNatives(),
		Definitions: source.Registry,
		Object:      ObjectReader(dyn, mapper),
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: opts.SchedulerName})
	g := &Grouper{
		Controller:  NewController(hub, kube, dyn, groups, recorder, NewMetrics(opts.Metrics), opts.SchedulerName),
		Definitions: source,
		Client:      groups,
		workers:     opts.Workers,
		broadcaster: broadcaster,
	}
	source.OnChange(g.Controller.ResyncPending)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return g, nil
}

// Run watches definitions and groups pods until ctx ends.
func (g *Grouper) Run(ctx context.Context) error {
	defer g.broadcaster.Shutdown()
	go g.Definitions.Run(ctx)
	return g.Controller.Run(ctx, g.workers)
}
