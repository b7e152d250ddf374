package plugin

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
)

// demand is what the first minMember of a group's pods request together, for PodGroups that
// do not state minResources.
func demand(members []*corev1.Pod, minMember int) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i, p := range members {
		if i == minMember {
			break
		}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

// shortfall compares a group's minResources with the free resources of all nodes together
// (allocatable minus requested, assumed pods included) and describes what is missing, "" when
// nothing is. Room in total is necessary, not sufficient: Filter and Permit decide the rest.
func shortfall(need corev1.ResourceList, nodes fwk.SharedLister) string {
	infos, err := nodes.NodeInfos().List()
	if err != nil {
		return ""
	}
	free := map[corev1.ResourceName]int64{}
	for _, n := range infos {
		alloc, used := n.GetAllocatable(), n.GetRequested()
		free[corev1.ResourceCPU] += alloc.GetMilliCPU() - used.GetMilliCPU()
		free[corev1.ResourceMemory] += alloc.GetMemory() - used.GetMemory()
		free[corev1.ResourceEphemeralStorage] += alloc.GetEphemeralStorage() - used.GetEphemeralStorage()
		for name, v := range alloc.GetScalarResources() {
			free[name] += v - used.GetScalarResources()[name]
		}
	}
	var missing []string
	for name, q := range need {
		want := q.Value()
		if name == corev1.ResourceCPU {
			want = q.MilliValue()
		}
		if have := free[name]; have < want {
			missing = append(missing, fmt.Sprintf("%s %s (free %s)", name, q.String(), format(name, have)))
		}
	}
	sort.Strings(missing)
	return strings.Join(missing, ", ")
}

func format(name corev1.ResourceName, v int64) string {
	if name == corev1.ResourceCPU {
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	}
	if name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
		return resource.NewQuantity(v, resource.BinarySI).String()
	}
	return resource.NewQuantity(v, resource.DecimalSI).String()
}
