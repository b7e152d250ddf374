package definitions

import "strings"

// foundPod reads what the tree shows of a live pod: its name, phase, readiness, node, the
// controller that made it, when it was created, its restarts and the reason it is not fine.
func foundPod(pod map[string]any) FoundPod {
	f := FoundPod{Name: podName(pod), Phase: "Pending"}
	md, _ := pod["metadata"].(map[string]any)
	f.Created, _ = md["creationTimestamp"].(string)
	f.Owner = controllerOf(md)
	st, _ := pod["status"].(map[string]any)
	if p, ok := st["phase"].(string); ok && p != "" {
		f.Phase = p
	}
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			f.Ready = true
		}
	}
	spec, _ := pod["spec"].(map[string]any)
	f.Node, _ = spec["nodeName"].(string)
	f.Priority = priorityOf(spec)
	inits, _ := st["initContainerStatuses"].([]any)
	containers, _ := st["containerStatuses"].([]any)
	f.Restarts = restarts(inits) + restarts(containers)
	f.Reason, _ = st["reason"].(string)
	if f.Reason == "" {
		if r := containerReason(inits); r != "" {
			f.Reason = "Init:" + r
		} else {
			f.Reason = containerReason(containers)
		}
	}
	return f
}

// controllerOf is Kind/name of the owner reference marked controller, else of the only
// owner; "" when there is neither.
func controllerOf(md map[string]any) string {
	refs, _ := md["ownerReferences"].([]any)
	var only string
	for _, r := range refs {
		m, _ := r.(map[string]any)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		if kind == "" || name == "" {
			continue
		}
		if c, _ := m["controller"].(bool); c {
			return kind + "/" + name
		}
		if len(refs) == 1 {
			only = kind + "/" + name
		}
	}
	return only
}

// restarts adds up the restartCount of container statuses.
func restarts(statuses []any) int64 {
	var n int64
	for _, s := range statuses {
		m, _ := s.(map[string]any)
		switch c := m["restartCount"].(type) {
		case int64:
			n += c
		case float64:
			n += int64(c)
		}
	}
	return n
}

// benignWaiting are waiting reasons of a container that is on its way: they tell nothing the
// phase does not.
var benignWaiting = map[string]bool{"ContainerCreating": true, "PodInitializing": true}

// containerReason is the most telling reason among container statuses: a waiting reason
// (CrashLoopBackOff, ImagePullBackOff) before a terminated one that is not a success
// (Error, OOMKilled); "" when every container is fine.
func containerReason(statuses []any) string {
	var terminated string
	for _, s := range statuses {
		m, _ := s.(map[string]any)
		state, _ := m["state"].(map[string]any)
		if w, ok := state["waiting"].(map[string]any); ok {
			if r, _ := w["reason"].(string); r != "" && !benignWaiting[r] {
				return r
			}
		}
		if t, ok := state["terminated"].(map[string]any); ok && terminated == "" {
			r, _ := t["reason"].(string)
			code, _ := t["exitCode"].(int64)
			if f, ok := t["exitCode"].(float64); ok {
				code = int64(f)
			}
			switch {
			case r != "" && !strings.EqualFold(r, "Completed"):
				terminated = r
			case r == "" && code != 0:
				terminated = "Error"
			}
		}
	}
	return terminated
}

// inNativeGroup reports whether the pod names a native PodGroup (spec.schedulingGroup).
func inNativeGroup(pod map[string]any) bool {
	spec, _ := pod["spec"].(map[string]any)
	group, _ := spec["schedulingGroup"].(map[string]any)
	name, _ := group["podGroupName"].(string)
	return name != ""
}

// priorityOf reads a pod spec's priority (nil when unset or not a number).
func priorityOf(spec map[string]any) *int32 {
	var p int32
	switch v := spec["priority"].(type) {
	case int64:
		p = int32(v)
	case float64:
		p = int32(v)
	case int32:
		p = v
	default:
		return nil
	}
	return &p
}
