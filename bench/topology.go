package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/webhook"
)

// The topology levels of the topology step's nodes, and the node labels that carry them.
const (
	RackLevel         = "rack"
	BlockLevel        = "block"
	DefaultRackLabel  = "bench.workmap.dev/rack"
	DefaultBlockLabel = "bench.workmap.dev/block"
	// TopologyGangLabel names, on every pod of the topology step (A's too), the gang it was
	// made for, so that where each gang landed can be read back whatever the scheduler.
	TopologyGangLabel = "bench.workmap.dev/gang"
)

// TopologySetup is the shape of the topology step: a control plane of its own with Kubernetes'
// own gang and topology gates on, Racks racks of NodesPerRack kwok nodes of GPUsPerNode GPUs
// (RacksPerBlock racks a block); each run has, for one batch size of Batches, that many gangs
// of GangSize pods of GPUsPerPod GPUs, and LargeGangs gangs of LargeGangSize pods of
// LargeGPUsPerPod GPUs, every gang asking for one rack; Pairs pairs of A B (D) per batch,
// backlog mode, every scheduler at QPS / Burst.
type TopologySetup struct {
	Racks, NodesPerRack, RacksPerBlock, GPUsPerNode int
	Batches                                         []int
	GangSize                                        int
	GPUsPerPod                                      int64
	LargeGangs, LargeGangSize                       int
	LargeGPUsPerPod                                 int64
	Pairs                                           int
	RackLabel, BlockLabel                           string
	QPS                                             float32
	Burst                                           int32
	// Native runs D: kube-scheduler with Kubernetes' own gangs and topology.
	Native bool
}

// Nodes is the number of kwok nodes.
func (s TopologySetup) Nodes() int { return s.Racks * s.NodesPerRack }

// Levels are workmap-scheduler's topology levels, broad to narrow: block, rack.
func (s TopologySetup) Levels() []harness.TopologyLevel {
	return []harness.TopologyLevel{{Name: BlockLevel, NodeLabel: s.BlockLabel}, {Name: RackLevel, NodeLabel: s.RackLabel}}
}

// Gates are the --feature-gates of the step's control plane and of D's kube-scheduler.
func (s TopologySetup) Gates() string {
	return harness.NativeGangGates + "," + harness.NativeTopologyGates
}

// RunPods is the number of pods of a run with small gangs of GangSize.
func (s TopologySetup) RunPods(small int) int {
	return small*s.GangSize + s.LargeGangs*s.LargeGangSize
}

// RunGPUs is the number of GPUs the pods of a run with small gangs ask for.
func (s TopologySetup) RunGPUs(small int) int64 {
	return int64(small*s.GangSize)*s.GPUsPerPod + int64(s.LargeGangs*s.LargeGangSize)*s.LargeGPUsPerPod
}

// Check says why the setup cannot run: every gang must fit in one rack, and every pod of the
// largest batch in the cluster at once.
func (s TopologySetup) Check() error {
	switch {
	case s.Racks < 1 || s.NodesPerRack < 1 || s.GPUsPerNode < 1:
		return fmt.Errorf("topology: want at least one rack of one node with a GPU")
	case s.RacksPerBlock < 1 || s.Racks%s.RacksPerBlock != 0:
		return fmt.Errorf("topology: %d racks do not make blocks of %d", s.Racks, s.RacksPerBlock)
	case s.GangSize < 2 || s.GPUsPerPod < 1 || (s.LargeGangs > 0 && (s.LargeGangSize < 2 || s.LargeGPUsPerPod < 1)):
		return fmt.Errorf("topology: gangs need at least 2 pods of at least one GPU")
	case len(s.Batches) == 0 || slices.Min(s.Batches) < 0:
		return fmt.Errorf("topology: want at least one batch size, none negative")
	}
	for _, g := range []struct {
		size int
		gpus int64
	}{{s.GangSize, s.GPUsPerPod}, {s.LargeGangSize, s.LargeGPUsPerPod}} {
		if g.size == 0 {
			continue
		}
		perNode := int64(s.GPUsPerNode) / g.gpus
		if perNode == 0 || int64(g.size) > perNode*int64(s.NodesPerRack) {
			return fmt.Errorf("topology: a gang of %d pods of %d GPUs does not fit in a rack of %d nodes of %d GPUs", g.size, g.gpus, s.NodesPerRack, s.GPUsPerNode)
		}
	}
	most := slices.Max(s.Batches)
	if gpus := s.RunGPUs(most); gpus > int64(s.Nodes()*s.GPUsPerNode) {
		return fmt.Errorf("topology: the %d GPUs of a run of %d gangs do not fit in %d nodes of %d GPUs", gpus, most+s.LargeGangs, s.Nodes(), s.GPUsPerNode)
	}
	return nil
}

// NodeList names the step's kwok nodes, each labelled with its rack and block:
// topo-r<rack>-n<i>, rack r<rack>, block b<rack ÷ RacksPerBlock>.
func (s TopologySetup) NodeList() []harness.Node {
	nodes := make([]harness.Node, 0, s.Nodes())
	for r := range s.Racks {
		for n := range s.NodesPerRack {
			nodes = append(nodes, harness.Node{Name: fmt.Sprintf("topo-r%d-n%d", r, n), GPUs: int64(s.GPUsPerNode),
				Labels: map[string]string{s.RackLabel: fmt.Sprintf("r%d", r), s.BlockLabel: fmt.Sprintf("b%d", r/s.RacksPerBlock)}})
		}
	}
	return nodes
}

// Domains maps each node to its rack and its block, from the nodes' labels.
func (s TopologySetup) Domains(nodes []harness.Node) (rackOf, blockOf map[string]string) {
	rackOf, blockOf = make(map[string]string, len(nodes)), make(map[string]string, len(nodes))
	for _, n := range nodes {
		rackOf[n.Name], blockOf[n.Name] = n.Labels[s.RackLabel], n.Labels[s.BlockLabel]
	}
	return rackOf, blockOf
}

// GangForm is how a run's gangs are declared.
type GangForm int

// The forms: none (A), scheduling.x-k8s.io PodGroups as an operator makes them (B), native
// PodGroups (D).
const (
	NoGang GangForm = iota
	OperatorGang
	NativeGang
)

// FormOf is the form of s's gangs in the topology step.
func FormOf(s Scheduler) GangForm {
	switch s {
	case Gang, GangWebhook:
		return OperatorGang
	case Native:
		return NativeGang
	}
	return NoGang
}

// TopologyRun is what the throughput runs need to run the topology step: the setup, the batch
// of this run, the clients of the PodGroups and where each node is.
type TopologyRun struct {
	Setup TopologySetup
	// Small is the number of small gangs of the run (one of Setup.Batches).
	Small int
	// PodGroups creates both kinds of PodGroup; Native is the native PodGroup resource served.
	PodGroups dynamic.Interface
	Native    schema.GroupVersionResource
	// RackOf and BlockOf map each node to its rack and block.
	RackOf, BlockOf map[string]string
}

// TopologyGangs are the pods of one run of the topology step.
type TopologyGangs struct {
	Setup         TopologySetup
	Namespace     string
	Small         int
	SchedulerName string
	Form          GangForm
	PodGroups     dynamic.Interface
	Native        schema.GroupVersionResource
}

// gangs returns the workload of a run of s in ns.
func (t *TopologyRun) gangs(ns string, s Scheduler, schedulerName string) TopologyGangs {
	return TopologyGangs{Setup: t.Setup, Namespace: ns, Small: t.Small, SchedulerName: schedulerName, Form: FormOf(s), PodGroups: t.PodGroups, Native: t.Native}
}

// TopologyGang is one gang of a run.
type TopologyGang struct {
	Name string
	Size int
	GPUs int64
}

// Gangs lists the run's gangs: the large ones first (large-<i>), then the small (small-<i>).
// Their pods are named after them, so the pods of the large gangs also come first in a list
// of the namespace's pods, and the schedulers, started on the backlog, queue them first.
func (g TopologyGangs) Gangs() []TopologyGang {
	out := make([]TopologyGang, 0, g.Setup.LargeGangs+g.Small)
	for i := range g.Setup.LargeGangs {
		out = append(out, TopologyGang{Name: fmt.Sprintf("large-%d", i), Size: g.Setup.LargeGangSize, GPUs: g.Setup.LargeGPUsPerPod})
	}
	for i := range g.Small {
		out = append(out, TopologyGang{Name: fmt.Sprintf("small-%d", i), Size: g.Setup.GangSize, GPUs: g.Setup.GPUsPerPod})
	}
	return out
}

// Pods is the number of pods of the run.
func (g TopologyGangs) Pods() int { return g.Setup.RunPods(g.Small) }

// Pod is pod i of a gang: the same for every scheduler but for its schedulerName and how it
// names its gang (the PodGroup label for B, spec.schedulingGroup for D, nothing for A).
func (g TopologyGangs) Pod(gang TopologyGang, i int) *corev1.Pod {
	labels := map[string]string{TopologyGangLabel: gang.Name}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", gang.Name, i), Namespace: g.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			SchedulerName: g.SchedulerName, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "trainer", Image: "registry.example.com/trainer:1.0", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gang.GPUs, resource.DecimalSI)},
			}}},
		},
	}
	switch g.Form {
	case OperatorGang:
		labels[v1alpha1.PodGroupLabel] = gang.Name
	case NativeGang:
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(gang.Name)}
	}
	return pod
}

// OperatorPodGroup is the scheduling.x-k8s.io PodGroup of a gang, as an operator makes it:
// minMember the gang's size, the rack required by workmap's annotation.
func (g TopologyGangs) OperatorPodGroup(gang TopologyGang) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: gang.Name, Namespace: g.Namespace, Annotations: map[string]string{grouper.TopologyRequiredAnnotation: RackLevel}},
		Spec:       v1alpha1.PodGroupSpec{MinMember: int32(gang.Size)},
	}
}

// PodGroup is the object made for a gang before its pods, and its resource: for B the
// operator's PodGroup, for D the native PodGroup workmap-webhook writes for that PodGroup when
// told the rack's node label (--topology-levels): gang minCount the gang's size,
// schedulingConstraints.topology [{key: the rack label}]. Nil for A.
func (g TopologyGangs) PodGroup(gang TopologyGang) (*unstructured.Unstructured, schema.GroupVersionResource, error) {
	pg := g.OperatorPodGroup(gang)
	switch g.Form {
	case OperatorGang:
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": PodGroupResource.GroupVersion().String(), "kind": "PodGroup",
			"metadata": map[string]any{"name": pg.Name, "namespace": pg.Namespace, "annotations": map[string]any{grouper.TopologyRequiredAnnotation: RackLevel}},
			"spec":     map[string]any{"minMember": int64(gang.Size)},
		}}, PodGroupResource, nil
	case NativeGang:
		levels := map[string]string{}
		for _, l := range g.Setup.Levels() {
			levels[l.Name] = l.NodeLabel
		}
		native, err := webhook.NativePodGroup(g.Native.GroupVersion(), pg, levels)
		return native, g.Native, err
	}
	return nil, schema.GroupVersionResource{}, nil
}

// Create creates every gang, workers at a time: its PodGroup, then its pods.
func (g TopologyGangs) Create(ctx context.Context, kube kubernetes.Interface, workers int) error {
	return forEach(g.Gangs(), workers, func(gang TopologyGang) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		pg, res, err := g.PodGroup(gang)
		if err != nil {
			return err
		}
		if pg != nil {
			if g.PodGroups == nil {
				return fmt.Errorf("no client makes the PodGroups")
			}
			if _, err := g.PodGroups.Resource(res).Namespace(g.Namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating PodGroup %s: %w", gang.Name, err)
			}
		}
		for i := range gang.Size {
			if _, err := kube.CoreV1().Pods(g.Namespace).Create(ctx, g.Pod(gang, i), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating a pod of gang %s: %w", gang.Name, err)
			}
		}
		return nil
	})
}

// Clear deletes a run's pods, events and PodGroups, workers at a time, before its namespace is
// deleted (DeleteGangs), so that the cleanup takes seconds rather than a minute: the API
// server deletes a collection one object at a time (--delete-collection-workers=1), and a
// native PodGroup's finalizer is lifted by kube-controller-manager's PodGroup protection
// controller at its client's 20 qps once no pod names it. The bench lifts it itself, as that
// controller would, after the pods are gone.
func (t *TopologyRun) Clear(ctx context.Context, kube kubernetes.Interface, ns string, workers int) error {
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	ignore := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if err := forEach(pods.Items, workers, func(p corev1.Pod) error {
		return ignore(kube.CoreV1().Pods(ns).Delete(ctx, p.Name, now))
	}); err != nil {
		return fmt.Errorf("deleting the pods of %s: %w", ns, err)
	}
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if err := forEach(events.Items, workers, func(e corev1.Event) error {
		return ignore(kube.CoreV1().Events(ns).Delete(ctx, e.Name, metav1.DeleteOptions{}))
	}); err != nil {
		return fmt.Errorf("deleting the events of %s: %w", ns, err)
	}
	resources := []schema.GroupVersionResource{PodGroupResource}
	if !t.Native.Empty() {
		resources = append(resources, t.Native)
	}
	unfinalize := []byte(`{"metadata":{"finalizers":null}}`)
	for _, res := range resources {
		client := t.PodGroups.Resource(res).Namespace(ns)
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return ignore(err)
		}
		if err := forEach(list.Items, workers, func(pg unstructured.Unstructured) error {
			if err := ignore(client.Delete(ctx, pg.GetName(), metav1.DeleteOptions{})); err != nil || len(pg.GetFinalizers()) == 0 {
				return err
			}
			_, err := client.Patch(ctx, pg.GetName(), types.MergePatchType, unfinalize, metav1.PatchOptions{})
			return ignore(err)
		}); err != nil {
			return fmt.Errorf("deleting the PodGroups of %s: %w", ns, err)
		}
	}
	return nil
}

// Placement reads back where the run's pods landed.
func (t *TopologyRun) Placement(ctx context.Context, kube kubernetes.Interface, ns string) (Placement, error) {
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: TopologyGangLabel})
	if err != nil {
		return Placement{}, fmt.Errorf("listing the pods of %s: %w", ns, err)
	}
	pods := make([]PodPlacement, 0, len(list.Items))
	for _, p := range list.Items {
		pods = append(pods, PodPlacement{Gang: p.Labels[TopologyGangLabel], Node: p.Spec.NodeName})
	}
	return PlacementOf(pods, t.RackOf, t.BlockOf), nil
}

// PodPlacement is a pod's gang and node ("" when unbound).
type PodPlacement struct{ Gang, Node string }

// Placement says how a run's gangs were placed: how many had all their pods in one rack, in
// one block; how many racks the most spread gang spanned; and the gangs split across racks, by
// size. Only gangs whose pods are all bound count.
type Placement struct {
	Gangs    int `json:"gangs"`
	OneRack  int `json:"one_rack"`
	OneBlock int `json:"one_block"`
	MaxRacks int `json:"max_racks"`
	// Unbound are gangs with a pod not bound (left out of the counts above).
	Unbound int `json:"unbound,omitempty"`
	// SplitBySize counts the gangs spread over more than one rack, by gang size.
	SplitBySize map[int]int `json:"split_by_size,omitempty"`
}

// SingleDomainFraction is the share of the placed gangs whose pods all share one rack.
func (p Placement) SingleDomainFraction() float64 {
	if p.Gangs == 0 {
		return 0
	}
	return float64(p.OneRack) / float64(p.Gangs)
}

// PlacementOf counts, from each pod's gang and node, how the gangs were placed. A node in
// neither map is a domain of its own.
func PlacementOf(pods []PodPlacement, rackOf, blockOf map[string]string) Placement {
	byGang := map[string][]string{}
	for _, p := range pods {
		byGang[p.Gang] = append(byGang[p.Gang], p.Node)
	}
	var out Placement
	domain := func(m map[string]string, node string) string {
		if d, ok := m[node]; ok {
			return d
		}
		return "node/" + node
	}
	for _, nodes := range byGang {
		if slices.Contains(nodes, "") {
			out.Unbound++
			continue
		}
		racks, blocks := map[string]bool{}, map[string]bool{}
		for _, n := range nodes {
			racks[domain(rackOf, n)], blocks[domain(blockOf, n)] = true, true
		}
		out.Gangs++
		out.MaxRacks = max(out.MaxRacks, len(racks))
		if len(racks) == 1 {
			out.OneRack++
		} else {
			if out.SplitBySize == nil {
				out.SplitBySize = map[int]int{}
			}
			out.SplitBySize[len(nodes)]++
		}
		if len(blocks) == 1 {
			out.OneBlock++
		}
	}
	return out
}

// Add sums two placements (the runs of one scheduler).
func (p Placement) Add(q Placement) Placement {
	out := Placement{Gangs: p.Gangs + q.Gangs, OneRack: p.OneRack + q.OneRack, OneBlock: p.OneBlock + q.OneBlock,
		MaxRacks: max(p.MaxRacks, q.MaxRacks), Unbound: p.Unbound + q.Unbound}
	for _, m := range []map[int]int{p.SplitBySize, q.SplitBySize} {
		for size, n := range m {
			if out.SplitBySize == nil {
				out.SplitBySize = map[int]int{}
			}
			out.SplitBySize[size] += n
		}
	}
	return out
}

// Split says which gangs were split across racks ("none").
func (p Placement) Split() string {
	if len(p.SplitBySize) == 0 {
		return "none"
	}
	sizes := make([]int, 0, len(p.SplitBySize))
	for s := range p.SplitBySize {
		sizes = append(sizes, s)
	}
	sort.Ints(sizes)
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = strconv.Itoa(p.SplitBySize[s]) + " of " + strconv.Itoa(s) + " pods"
	}
	return strings.Join(parts, ", ")
}
