package bench

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// PreemptionSetup is the shape of the preemption step: Nodes kwok nodes of GPUsPerNode GPUs,
// filled by as many low-priority gangs of LowGangSize pods (each pod GPUsPerNode/LowGangSize
// GPUs: together a node's worth); then HighGangs high-priority gangs of HighGangSize pods of a
// whole node each, which can only fit by preempting.
type PreemptionSetup struct {
	Nodes, GPUsPerNode, LowGangSize, HighGangs, HighGangSize int
	QPS                                                      float32
	Burst                                                    int32
}

// PreemptionResult is what the preemption step measured of one scheduler.
type PreemptionResult struct {
	PreemptionSetup
	// FillSeconds is how long the low-priority gangs took to bind; BoundSeconds, from the
	// high-priority gangs' creation to their last pod bound.
	FillSeconds, BoundSeconds float64
	// Attempts are the looks for victims while the high-priority gangs were placed, each up
	// to the victims' choice (their deletion left out); AttemptP50Ms and AttemptP99Ms their
	// duration: workmap-scheduler's workmap_preemption_evaluation_duration_seconds, Kubernetes'
	// own scheduler_preemption_evaluation_duration_seconds{preemptor="podgroup"} (the same
	// buckets).
	Attempts                                  float64
	AttemptMeanMs, AttemptP50Ms, AttemptP99Ms float64
	// PostFilterCycles are the scheduling cycles that ran PostFilter (workmap-scheduler's
	// looks for victims, their deletion, and the cycles that waited for victims to go), and
	// PostFilterMeanMs, PostFilterP99Ms their duration (scheduler_framework_extension_point_
	// duration_seconds); PostFilterP99Beyond: past its last bound, 204.8 ms.
	PostFilterCycles, PostFilterMeanMs, PostFilterP99Ms float64
	PostFilterP99Beyond                                 bool
	// AttemptP99Beyond: the p99 is beyond the histogram's last bound (AttemptP99Ms is that
	// bound).
	AttemptP99Beyond bool
	// Preemptions counts the Preempting events (one per preemption); VictimPods and
	// VictimGangs what they took; VictimsPerGang is VictimPods per high-priority gang.
	Preemptions, VictimPods, VictimGangs int
	VictimsPerGang                       float64
	// Futile are preemptions whose preemptor gang did not end with every pod bound;
	// PartialVictimGangs low-priority gangs left with some but not all of their pods;
	// PartialPreemptorGangs high-priority gangs with some but not all of theirs bound.
	Futile, PartialVictimGangs, PartialPreemptorGangs int
	// SchedulerRSSBytes is the scheduler's resident memory at the end.
	SchedulerRSSBytes float64
}

// PreemptionOptions say how to measure the preemption step.
type PreemptionOptions struct {
	PreemptionSetup
	Namespace string
	// Kube and PodGroups are the bench's clients.
	Kube      kubernetes.Interface
	PodGroups dynamic.Interface
	// Metrics reads the scheduler's /metrics.
	Metrics func(context.Context) (map[string]*dto.MetricFamily, error)
	// Timeout bounds each wait: for the low gangs to bind, for the high gangs to bind.
	Timeout time.Duration
	// Profile, when set, records the scheduler's CPU profile while the high-priority gangs
	// preempt and bind.
	Profile *Profile
	// Native, when set, is the native PodGroup resource: the gangs are Kubernetes' own
	// PodGroups (with the PriorityClass), their pods ask for the default scheduler and name
	// them in spec.schedulingGroup (row D). Unset, they are workmap-scheduler's (row B).
	Native schema.GroupVersionResource
}

// The PriorityClasses of the preemption step.
const (
	PreemptionLowClass  = "bench-low"
	PreemptionHighClass = "bench-high"
)

// postFilterMetric is kube-scheduler's histogram of extension point durations;
// nativeEvaluationMetric its histogram of workload-aware preemption's evaluations.
const (
	postFilterMetric       = "scheduler_framework_extension_point_duration_seconds"
	nativeEvaluationMetric = "scheduler_preemption_evaluation_duration_seconds"
	evaluationMetric       = "workmap_preemption_evaluation_duration_seconds"
)

// MeasurePreemption runs the preemption step on a cluster with Nodes nodes and
// workmap-scheduler running.
func MeasurePreemption(ctx context.Context, o PreemptionOptions) (*PreemptionResult, error) {
	ns := o.Namespace
	if err := CreateNamespace(ctx, o.Kube, ns, nil); err != nil {
		return nil, err
	}
	for name, value := range map[string]int32{PreemptionLowClass: 10, PreemptionHighClass: 1000} {
		_, err := o.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) { // made by the other scheduler's run
			return nil, fmt.Errorf("PriorityClass %s: %w", name, err)
		}
	}
	res := &PreemptionResult{PreemptionSetup: o.PreemptionSetup}
	start := time.Now()
	lowGPUs := o.GPUsPerNode / o.LowGangSize
	for i := range o.Nodes {
		if err := o.createGang(ctx, fmt.Sprintf("low-%d", i), PreemptionLowClass, o.LowGangSize, lowGPUs); err != nil {
			return nil, err
		}
	}
	if err := o.waitBound(ctx, "low", o.Nodes*o.LowGangSize); err != nil {
		return nil, err
	}
	res.FillSeconds = round(time.Since(start).Seconds(), 1)

	before, err := o.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	profiled := o.Profile.start(ctx)
	start = time.Now()
	for i := range o.HighGangs {
		if err := o.createGang(ctx, fmt.Sprintf("high-%d", i), PreemptionHighClass, o.HighGangSize, o.GPUsPerNode); err != nil {
			return nil, err
		}
	}
	boundErr := o.waitBound(ctx, "high", o.HighGangs*o.HighGangSize)
	res.BoundSeconds = round(time.Since(start).Seconds(), 1)
	if err := profiled(); err != nil {
		return nil, err
	}
	after, err := o.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	attempts := histogramDelta(before[evaluationMetric], after[evaluationMetric], "", "")
	if !o.Native.Empty() {
		attempts = histogramDelta(before[nativeEvaluationMetric], after[nativeEvaluationMetric], "preemptor", "podgroup")
	}
	postFilter := histogramDelta(before[postFilterMetric], after[postFilterMetric], "extension_point", "PostFilter")
	res.PostFilterCycles, res.PostFilterP99Ms = postFilter.count, round(1000*postFilter.quantile(0.99), 2)
	res.PostFilterP99Beyond = postFilter.beyond(0.99)
	if postFilter.count > 0 {
		res.PostFilterMeanMs = round(1000*postFilter.sum/postFilter.count, 2)
	}
	res.Attempts = attempts.count
	res.AttemptP50Ms, res.AttemptP99Ms = round(1000*attempts.quantile(0.5), 2), round(1000*attempts.quantile(0.99), 2)
	res.AttemptP99Beyond = attempts.beyond(0.99)
	if attempts.count > 0 {
		res.AttemptMeanMs = round(1000*attempts.sum/attempts.count, 2)
	}
	for _, m := range after["process_resident_memory_bytes"].GetMetric() {
		res.SchedulerRSSBytes = value(m)
	}
	if err := o.count(ctx, res); err != nil {
		return nil, err
	}
	if boundErr != nil {
		return res, boundErr
	}
	return res, nil
}

// createGang makes a PodGroup of size and its pods, each asking for gpus GPUs at a priority:
// workmap-scheduler's, or with Native a native PodGroup of that priority and pods of the
// default scheduler that name it.
func (o PreemptionOptions) createGang(ctx context.Context, name, priorityClass string, size, gpus int) error {
	podGroups, scheduler := PodGroupResource, harness.SchedulerName
	spec := map[string]any{"minMember": int64(size)}
	if !o.Native.Empty() {
		podGroups, scheduler = o.Native, corev1.DefaultSchedulerName
		// disruptionMode all: a victim gang goes whole, as workmap-scheduler's do (the
		// default, single, takes pods one by one), so that the victims compare like with like.
		spec = map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(size)}}, "priorityClassName": priorityClass,
			"disruptionMode": map[string]any{"all": map[string]any{}}}
	}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": podGroups.GroupVersion().String(), "kind": "PodGroup",
		"metadata": map[string]any{"name": name, "namespace": o.Namespace}, "spec": spec,
	}}
	if _, err := o.PodGroups.Resource(podGroups).Namespace(o.Namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PodGroup %s: %w", name, err)
	}
	q := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	tier, _, _ := strings.Cut(name, "-")
	for j := range size {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, j), Namespace: o.Namespace, Labels: map[string]string{v1alpha1.PodGroupLabel: name, "tier": tier}},
			Spec: corev1.PodSpec{
				SchedulerName: scheduler, PriorityClassName: priorityClass, TerminationGracePeriodSeconds: new(int64),
				Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{Requests: q, Limits: q}}},
			},
		}
		if !o.Native.Empty() {
			pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
		}
		if _, err := o.Kube.CoreV1().Pods(o.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// waitBound waits until want pods of a tier are bound.
func (o PreemptionOptions) waitBound(ctx context.Context, tier string, want int) error {
	bound := 0
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := o.Kube.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "tier=" + tier})
		if err != nil {
			return false, nil
		}
		bound = 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				bound++
			}
		}
		return bound == want, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the %s-priority gangs to bind (%d of %d pods bound): %w", tier, bound, want, err)
	}
	return nil
}

// count reads, at the end, what the preemptions took and left: the pods of each gang that are
// still there and bound, and the Preempting events.
func (o PreemptionOptions) count(ctx context.Context, res *PreemptionResult) error {
	pods, err := o.Kube.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "tier"})
	if err != nil {
		return err
	}
	left, bound := map[string]int{}, map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			left[p.Labels[v1alpha1.PodGroupLabel]]++
			if p.Spec.NodeName != "" {
				bound[p.Labels[v1alpha1.PodGroupLabel]]++
			}
		}
	}
	preempting, err := o.preemptions(ctx)
	if err != nil {
		return err
	}
	c := PreemptionCounts(o.PreemptionSetup, left, bound, preempting)
	res.Preemptions, res.VictimPods, res.VictimGangs, res.Futile = c.Preemptions, c.VictimPods, c.VictimGangs, c.Futile
	res.PartialVictimGangs, res.PartialPreemptorGangs = c.PartialVictimGangs, c.PartialPreemptorGangs
	if o.HighGangs > 0 {
		res.VictimsPerGang = round(float64(c.VictimPods)/float64(o.HighGangs), 2)
	}
	return nil
}

// preemptions counts the preemptions of each high-priority gang: workmap-scheduler's Preempting
// events on its pods (one per preemption); Kubernetes' own preemption records none, so for it
// each preemptor its victims' Preempted events name (the gang's PodGroup, or a pod of it)
// counts one: a gang that preempted twice counts once.
func (o PreemptionOptions) preemptions(ctx context.Context) (map[string]int, error) {
	gangOf := func(pod string) string { // pod high-3-0 of gang high-3
		if i := strings.LastIndex(pod, "-"); i > 0 {
			return pod[:i]
		}
		return ""
	}
	out := map[string]int{}
	if o.Native.Empty() {
		events, err := o.Kube.CoreV1().Events(o.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=Preempting"})
		if err != nil {
			return nil, err
		}
		for _, e := range events.Items {
			out[gangOf(e.InvolvedObject.Name)] += max(int(e.Count), 1)
		}
		return out, nil
	}
	events, err := o.Kube.EventsV1().Events(o.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=Preempted"})
	if err != nil {
		return nil, err
	}
	preemptors := map[string]bool{}
	for _, e := range events.Items {
		if e.Related == nil || preemptors[e.Related.Kind+"/"+e.Related.Name] {
			continue
		}
		preemptors[e.Related.Kind+"/"+e.Related.Name] = true
		switch e.Related.Kind {
		case "PodGroup":
			out[e.Related.Name]++
		case "Pod":
			out[gangOf(e.Related.Name)]++
		}
	}
	return out, nil
}

// PreemptionTally is what the preemptions of a run took and left.
type PreemptionTally struct {
	Preemptions, VictimPods, VictimGangs, Futile, PartialVictimGangs, PartialPreemptorGangs int
}

// PreemptionCounts tallies a run from the pods left of each gang (by PodGroup name, low-N and
// high-N), those of them bound, and the preemptions each high-priority gang made.
func PreemptionCounts(s PreemptionSetup, left, bound, preempting map[string]int) PreemptionTally {
	var t PreemptionTally
	for i := range s.Nodes {
		gang := fmt.Sprintf("low-%d", i)
		switch n := left[gang]; {
		case n == 0:
			t.VictimGangs++
			t.VictimPods += s.LowGangSize
		case n < s.LowGangSize || bound[gang] < n:
			t.PartialVictimGangs++
			t.VictimPods += s.LowGangSize - n
		}
	}
	for i := range s.HighGangs {
		gang := fmt.Sprintf("high-%d", i)
		t.Preemptions += preempting[gang]
		if b := bound[gang]; b > 0 && b < s.HighGangSize {
			t.PartialPreemptorGangs++
		}
		if bound[gang] < s.HighGangSize {
			t.Futile += preempting[gang]
		}
	}
	return t
}

// histogram is the buckets of one histogram's samples over a window.
type histogram struct {
	count, sum float64
	buckets    []bucket // cumulative, by upper bound
}

type bucket struct{ upper, count float64 }

// histogramDelta is what a histogram family gained between two readings, over its samples
// whose label name has that value (every other label: every profile and status; name ""
// takes every sample).
func histogramDelta(before, after *dto.MetricFamily, name, value string) histogram {
	sum := func(f *dto.MetricFamily) (map[float64]float64, float64) {
		out, seconds := map[float64]float64{}, 0.0
		for _, m := range f.GetMetric() {
			if label(m, name) != value {
				continue
			}
			h := m.GetHistogram()
			out[math.Inf(1)] += float64(h.GetSampleCount()) // the text format may list a +Inf bucket too: not added twice
			seconds += h.GetSampleSum()
			for _, b := range h.GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) {
					out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
				}
			}
		}
		return out, seconds
	}
	b, bs := sum(before)
	a, as := sum(after)
	h := histogram{sum: as - bs}
	for upper, n := range a {
		h.buckets = append(h.buckets, bucket{upper, n - b[upper]})
	}
	sort.Slice(h.buckets, func(i, j int) bool { return h.buckets[i].upper < h.buckets[j].upper })
	h.count = a[math.Inf(1)] - b[math.Inf(1)]
	return h
}

// beyond says whether a quantile falls beyond the last finite bound.
func (h histogram) beyond(q float64) bool {
	for i := len(h.buckets) - 1; i >= 0; i-- {
		if !math.IsInf(h.buckets[i].upper, 1) {
			return h.count > 0 && h.buckets[i].count < q*h.count
		}
	}
	return false
}

// quantile estimates a quantile (0..1) as Prometheus' histogram_quantile does: linearly within
// the bucket it falls in; the highest finite bound when it falls in the last one. 0 without
// samples.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 || len(h.buckets) == 0 {
		return 0
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for _, b := range h.buckets {
		if b.count >= rank {
			if math.IsInf(b.upper, 1) {
				return lower
			}
			if b.count == below {
				return b.upper
			}
			return lower + (b.upper-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.upper, b.count
	}
	return lower
}

// Profile records a scheduler's CPU profile over a phase of a step into a file.
type Profile struct {
	Path   string
	Record func(ctx context.Context, d time.Duration) ([]byte, error)
	// Seconds is how long it records (0: 30 s, as long as the preemption phase takes); a
	// profile that outlasts the phase only adds an idle scheduler's samples.
	Seconds time.Duration
}

// start begins recording (nothing when p is nil); the function it returns waits for the
// profile and writes it.
func (p *Profile) start(ctx context.Context) func() error {
	if p == nil {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		data, err := p.Record(ctx, cmp.Or(p.Seconds, 30*time.Second))
		if err == nil {
			err = os.WriteFile(p.Path, data, 0o644)
		}
		done <- err
	}()
	return func() error {
		if err := <-done; err != nil {
			return fmt.Errorf("the scheduler's CPU profile: %w", err)
		}
		return nil
	}
}
