package webview

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/live"
)

// gangs are the workload's gangs with the state of their PodGroups, read as tree and get read
// them (live.GangStates, here from the watcher's caches): a gang whose pods ask for a
// scheduler that does not gang them is not in effect. Each also gets its topology (from its
// PodGroup), its size, how it ended, and why its pods wait.
func (r *resolver) gangs(ctx context.Context, res *live.Result) []Gang {
	w := res.Workload
	note := ""
	if err := r.live.GangStates(ctx, w, live.GangOptions{}); err != nil {
		note = "cannot read PodGroups: " + err.Error()
	}
	waitingFor := schedulingMessages(res.Pods)
	out := make([]Gang, 0, len(w.Groups))
	for _, g := range w.Groups {
		gang := Gang{Group: g, PodGroup: g.PodGroupName(w.Workload.Name), Note: note}
		if s := g.State; s != nil {
			gang.Found, gang.Phase, gang.Scheduled, gang.Priority, gang.MadeBy = s.Found, s.Phase, s.Scheduled, s.Priority, s.MadeBy
			switch {
			case s.NotInEffect != "":
				gang.Note = "not in effect: " + s.NotInEffect
			case s.Note != "":
				gang.Note = s.Note
			}
		}
		if g.Topology != nil {
			gang.Required, gang.Preferred = g.Topology.Required, g.Topology.Preferred
		}
		if pg, ok := r.watcher.get(podGroupsResource, w.Workload.Namespace, gang.PodGroup); ok && gang.Found {
			a := pg.GetAnnotations()
			gang.Required, gang.Preferred, gang.Domain = a[grouper.TopologyRequiredAnnotation], a[grouper.TopologyPreferredAnnotation], a[grouper.TopologyDomainAnnotation]
		}
		if gang.Found {
			gang.LastPreemption = r.watcher.lastPreemption(w.Workload.Namespace, gang.PodGroup)
		}
		roles := w.GroupRoles(g)
		gang.Size, gang.GPUs = gangSize(w, g, roles)
		pods := w.GroupPods(g, roles)
		gang.Done = gangDone(w.Status.State, pods)
		var messages []string
		for _, p := range pods {
			if p.Phase == string(corev1.PodPending) && p.Node == "" {
				gang.Pending++
				if m := waitingFor[p.Name]; m != "" {
					messages = append(messages, m)
				}
			}
		}
		gang.Reasons = slices.Compact(slices.Sorted(slices.Values(messages))) // a gang's pods say the same while its cause stands
		out = append(out, gang)
	}
	return out
}

// gangDone says how a gang ended: as its workload did (Completed, Failed), or Completed when
// every pod of it found succeeded; "" while it has not.
func gangDone(state v1alpha1.State, pods []definitions.FoundPod) string {
	if state == v1alpha1.StateCompleted || state == v1alpha1.StateFailed {
		return string(state)
	}
	if len(pods) == 0 {
		return ""
	}
	for _, p := range pods {
		if p.Phase != string(corev1.PodSucceeded) {
			return ""
		}
	}
	return string(v1alpha1.StateCompleted)
}

// gangSize is the pods a gang holds when complete and the GPUs they ask for.
func gangSize(w *definitions.Workload, g definitions.Group, roles []string) (int64, float64) {
	var pods int64
	var gpus float64
	for _, role := range w.Roles {
		if !slices.Contains(roles, role.Name) {
			continue
		}
		n := role.Pods
		if g.Replica != nil {
			n = role.PodsPerReplica
		}
		pods += n
		gpus += float64(n) * perPodGPUs(role)
	}
	if pods == 0 {
		pods = int64(g.MinMember)
	}
	return pods, gpus
}

// perPodGPUs are the GPUs of one pod of a role, as the engine counts them.
func perPodGPUs(role definitions.Role) float64 {
	if role.Pods == 0 {
		return 0
	}
	return role.GPUs / float64(role.Pods)
}

// schedulingMessages are, by pod name, what the scheduler said of each pod it could not place
// yet: its PodScheduled condition when false (kube-scheduler writes there the message of its
// FailedScheduling event).
func schedulingMessages(pods []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == string(corev1.PodScheduled) && m["status"] == string(corev1.ConditionFalse) {
				if msg, _ := m["message"].(string); strings.TrimSpace(msg) != "" {
					out[p.GetName()] = strings.TrimSpace(msg)
				}
			}
		}
	}
	return out
}
