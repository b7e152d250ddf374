package plugin

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

// room compares what a gang needs together (its minResources, or its pods' requests) with
// the cluster's nodes and says why it cannot be placed now, the zero Cause when nothing is
// short. A gang can never fit when it needs more of a resource than all nodes together have
// (none, for a resource no node has); it waits when it needs more than is free (allocatable
// minus requested, assumed pods included). Room in total is necessary, not sufficient: Filter
// and Permit decide the rest. Each amount is shown beside the one it is compared with, in the
// same unit.
func room(key string, need corev1.ResourceList, nodes fwk.SharedLister) grouper.Cause {
	infos, err := nodes.NodeInfos().List()
	if err != nil {
		return grouper.Cause{}
	}
	free, total := map[corev1.ResourceName]int64{}, map[corev1.ResourceName]int64{}
	add := func(name corev1.ResourceName, alloc, used int64) {
		total[name] += alloc
		free[name] += max(alloc-used, 0)
	}
	for _, n := range infos {
		alloc, used := n.GetAllocatable(), n.GetRequested()
		add(corev1.ResourceCPU, alloc.GetMilliCPU(), used.GetMilliCPU())
		add(corev1.ResourceMemory, alloc.GetMemory(), used.GetMemory())
		add(corev1.ResourceEphemeralStorage, alloc.GetEphemeralStorage(), used.GetEphemeralStorage())
		for name, v := range alloc.GetScalarResources() {
			add(name, v, used.GetScalarResources()[name])
		}
	}
	var never, short []string
	for _, name := range slices.Sorted(maps.Keys(need)) {
		q := need[name]
		want := q.Value()
		if name == corev1.ResourceCPU {
			want = q.MilliValue()
		}
		switch {
		case want <= 0 || want <= free[name]:
		case total[name] == 0:
			never = append(never, fmt.Sprintf("%s %s (no node has any)", name, amounts(name, want)[0]))
		case want > total[name]:
			a := amounts(name, want, total[name])
			all := fmt.Sprintf("all %d nodes together have", len(infos))
			if len(infos) == 1 {
				all = "its one node has"
			}
			never = append(never, fmt.Sprintf("%s %s (%s %s)", name, a[0], all, a[1]))
		default:
			a := amounts(name, want, free[name])
			short = append(short, fmt.Sprintf("%s %s (%s free)", name, a[0], a[1]))
		}
	}
	if len(never) > 0 {
		return grouper.Cause{Never: true, Message: fmt.Sprintf("PodGroup %s can never fit this cluster as it is: it needs %s", key, strings.Join(never, ", "))}
	}
	if len(short) > 0 {
		return grouper.Cause{Message: fmt.Sprintf("PodGroup %s needs more than the cluster has free: %s", key, strings.Join(short, ", "))}
	}
	return grouper.Cause{}
}

// amounts shows amounts of one resource (CPU in millicores, memory and storage in bytes,
// others counted) in one unit, so that they compare at a glance: CPU in cores, memory and
// storage in the largest binary unit (Ki, Mi, Gi, Ti) the smallest of them fills, to one
// decimal.
func amounts(name corev1.ResourceName, vs ...int64) []string {
	out := make([]string, len(vs))
	switch name {
	case corev1.ResourceCPU:
		for i, v := range vs {
			out[i] = strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)
		}
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		smallest := slices.Min(vs)
		unit, suffix := int64(1), ""
		for i, s := range []string{"Ki", "Mi", "Gi", "Ti"} {
			if u := int64(1) << (10 * (i + 1)); smallest >= u || smallest == 0 && slices.Max(vs) >= u {
				unit, suffix = u, s
			}
		}
		for i, v := range vs {
			out[i] = strconv.FormatFloat(math.Round(float64(v)/float64(unit)*10)/10, 'f', -1, 64) + suffix
		}
	default:
		for i, v := range vs {
			out[i] = strconv.FormatInt(v, 10)
		}
	}
	return out
}
