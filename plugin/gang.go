package plugin

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/grouper"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "WorkmapGang"

// Gang is the WorkmapGang plugin. Which pod is in which gang, and how many of a gang's pods
// hold a node, it reads from the grouper's Membership: one view, kept by the pod and PodGroup
// event handlers, O(1) per question.
type Gang struct {
	handle  fwk.Handle
	args    *GangArgs
	clock   clock.WithDelayedExecution
	members *grouper.Membership
	held    *heldPods
	// claims tells of pods that wait for a device claim that cannot be made.
	claims *missingClaims
	// retrier retries backed-off gangs when room may have appeared for them.
	retrier *retrier
	// levels are the cluster's topology levels; placer places a gang that asks for one.
	levels *currentLevels
	placer placer
	// preemptions are the victims of the gangs' preemptions still on their way out.
	preemptions preemptions
	// pods preempts for the pods that do not preempt as a gang (nil: it could not be built,
	// preemptionProblem says why).
	pods              *podPreemption
	preemptionProblem error
	// metrics are the gangs' preemption metrics (registered by Factory).
	metrics *preemptionMetrics
}

var (
	_ fwk.PreEnqueuePlugin  = &Gang{}
	_ fwk.QueueSortPlugin   = &Gang{}
	_ fwk.PreFilterPlugin   = &Gang{}
	_ fwk.FilterPlugin      = &Gang{}
	_ fwk.PostFilterPlugin  = &Gang{}
	_ fwk.ReservePlugin     = &Gang{}
	_ fwk.PermitPlugin      = &Gang{}
	_ fwk.BindPlugin        = &Gang{}
	_ fwk.SignPlugin        = &Gang{}
	_ fwk.EnqueueExtensions = &Gang{}
)

// Factory returns the plugin's factory. The in-process grouper runs on the framework handle's
// pod informer, clientset and event recorder; it writes only while leader leads. Its metrics
// are registered with metrics (nil: not registered), labelled with the scheduler profile.
func Factory(metrics prometheus.Registerer, leader *grouper.Leader) func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		args, err := DecodeArgs(obj)
		if err != nil {
			return nil, err
		}
		builtin, err := catalog.Definitions()
		if err != nil {
			return nil, fmt.Errorf("%s: the embedded catalog: %w", Name, err)
		}
		if metrics != nil {
			metrics = prometheus.WrapRegistererWith(prometheus.Labels{"profile": h.ProfileName()}, metrics)
		}
		// The grouper's clients share the scheduler client's token bucket: PodGroup writes and
		// owner reads come out of the same clientConnection budget as bindings.
		cfg := grouper.WithBudget(h.KubeConfig(), h.ClientSet().CoreV1().RESTClient().GetRateLimiter())
		g, err := grouper.New(ctx, cfg, grouper.Options{
			SchedulerName: h.ProfileName(), Builtin: builtin, Metrics: metrics, Workers: int(*args.GrouperWorkers),
			Pods: h.SharedInformerFactory().Core().V1().Pods().Informer(), Kube: h.ClientSet(), Recorder: h.EventRecorder(),
			Leader: leader, Queue: h,
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		pl := New(h, args, g.Controller.Membership(), clock.RealClock{})
		pl.metrics = newPreemptionMetrics(metrics)
		go func() {
			if err := g.Run(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "workmap grouper stopped")
			}
		}()
		go pl.held.run(ctx, leader)
		go wait.UntilWithContext(ctx, pl.admitShrunk, admitShrunkEvery)
		if err := pl.claims.watch(); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		go pl.claims.run(ctx, leader)
		if ref := args.TopologyFrom; ref != nil {
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", Name, err)
			}
			go followTopology(ctx, h.ClientSet().Discovery(), dyn, ref, pl.levels)
		}
		return pl, nil
	}
}

// New builds the plugin on a handle and the grouper's membership view, which wakes a gang's
// pods in the handle's queue as they are grouped.
func New(h fwk.Handle, args *GangArgs, members *grouper.Membership, clk clock.WithDelayedExecution) *Gang {
	runner, _ := h.(simulationRunner)
	levels := &currentLevels{}
	levels.set(newTopologyLevels(args.TopologyLevels))
	if ref := args.TopologyFrom; ref != nil {
		levels.set(topologyLevels{problem: fmt.Sprintf("the %s Topology %s is not read yet", ref.Kind, ref.Name)})
	}
	g := &Gang{
		handle: h, args: args, clock: clk, members: members, held: newHeldPods(h, members, clk), retrier: newRetrier(members, clk),
		claims: newMissingClaims(h, members, clk),
		levels: levels, placer: placer{handle: h, runner: runner},
	}
	g.pods, g.preemptionProblem = newPodPreemption(context.Background(), h, g)
	g.metrics = newPreemptionMetrics(nil)
	return g
}

// Name returns the plugin's name.
func (g *Gang) Name() string { return Name }

// SignPod lets the scheduler batch the pods it places (opportunistic batching): the plugin
// filters no node for a pod whose gang asks for no topology, so it adds nothing to such a
// pod's signature. Its PreFilter, which holds a gang back as a whole, runs for every pod
// before any cached placement is reused. A pod whose gang asks for a topology is kept to its
// gang's domain and planned node, which no signature says: it is not signed, so never batched.
func (g *Gang) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if group, ok := g.members.GroupOf(pod.UID); ok && group.Topology.Constrained() {
		return nil, fwk.NewStatus(fwk.Unschedulable, "placed by its gang's topology")
	}
	return nil, nil
}
