package definitions

import (
	"fmt"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/expr"
)

// Placement says where one live pod belongs in a workload.
type Placement struct {
	// Role is the name of the role (as shown), e.g. "workers".
	Role string
	// Replica is the pod's replica index within the role, -1 when the definition gives no
	// podReplica.
	Replica int64
	// Group is the gang the pod joins, nil when its role has no gang or the gang was not
	// emitted (minMember ≤ 1).
	Group *Group

	index int // into Workload.Roles
}

// Place decides which role, replica and gang a live pod (unstructured) belongs to. It
// returns false when the pod belongs to no role of the workload.
func (w *Workload) Place(pod map[string]any) (Placement, bool, error) {
	act := expr.Activation{Self: w.self, Pod: pod}
	var lastErr error
	for di, r := range w.def.roles {
		var idx int
		var ok bool
		if r.podInstance == nil {
			// Without podInstance only a definition with one role of one instance can place pods.
			if len(w.def.roles) == 1 && len(w.Roles) == 1 {
				idx, ok = 0, true
			}
		} else {
			name, err := r.podInstance.EvalString(&act)
			if err != nil {
				lastErr = err
				continue
			}
			idx, ok = w.roleIndex[di][name]
		}
		if ok {
			return w.placement(idx, &act)
		}
	}
	return Placement{}, false, lastErr
}

func (w *Workload) placement(idx int, act *expr.Activation) (Placement, bool, error) {
	role := &w.Roles[idx]
	p := Placement{Role: role.Name, Replica: -1, index: idx}
	if role.def.podReplica != nil {
		r, err := role.def.podReplica.EvalInt(act)
		if err != nil {
			return p, true, fmt.Errorf("pod %s: %w", podName(act.Pod), err)
		}
		p.Replica = r
	}
	for _, g := range w.groupOf[role.def.index] {
		want := groupMatch{instance: p.Role, replica: p.Replica}
		if g.podGroup != nil {
			name, err := g.podGroup.EvalString(act)
			if err != nil {
				return p, true, fmt.Errorf("pod %s: %w", podName(act.Pod), err)
			}
			if name == "" {
				continue // not in this computed group: the role's next group decides
			}
			want = groupMatch{instance: name, replica: -1}
			if g.scope == v1alpha1.ScopeReplica {
				want.replica = p.Replica
			}
		}
		if grp := w.findGroup(g, want); grp != nil {
			p.Group = grp
			return p, true, nil
		}
	}
	return p, true, nil
}

type groupMatch struct {
	instance string
	replica  int64
}

// findGroup returns the emitted Group of a gang group that a pod with the given role
// (or computed entry) and replica falls in.
func (w *Workload) findGroup(g *gangGroup, m groupMatch) *Group {
	for i := range w.Groups {
		grp := &w.Groups[i]
		if grp.Name != g.name {
			continue
		}
		if grp.Replica != nil && int64(*grp.Replica) != m.replica {
			continue
		}
		if grp.Instance != "" && grp.Instance != m.instance {
			continue
		}
		return grp
	}
	return nil
}

func podName(pod map[string]any) string {
	md, _ := pod["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}

// assignPods places every live pod and records what was found per role and replica.
func (w *Workload) assignPods(live *LiveData) {
	w.Live = &Live{Children: map[string]int{}, Phases: map[string]int{}, Pods: len(live.Pods)}
	for _, c := range w.def.children {
		w.Live.Children[c.Name] = len(live.Children[c.Name])
	}
	for ri := range w.Roles {
		w.Roles[ri].PodsFound = new(int64)
		w.Roles[ri].Phases = map[string]int{}
		if w.Roles[ri].def.podReplica == nil {
			continue // pods cannot be told apart by replica: counted for the role only
		}
		for ii := range w.Roles[ri].Instances {
			w.Roles[ri].Instances[ii].PodsFound = new(int64)
			w.Roles[ri].Instances[ii].Phases = map[string]int{}
		}
	}
	unknownReplica := map[int]bool{} // by role index
	for _, pod := range live.Pods {
		found := foundPod(pod)
		w.Live.Phases[found.Phase]++
		if inNativeGroup(pod) {
			w.Live.InNativeGroups++
		}
		if found.Ready {
			w.Live.Ready++
		}
		p, ok, _ := w.Place(pod)
		if !ok {
			w.Live.Unassigned++
			continue
		}
		role := &w.Roles[p.index]
		*role.PodsFound++
		role.Phases[found.Phase]++
		if p.Replica >= 0 && p.Replica < int64(len(role.Instances)) {
			in := &role.Instances[p.Replica]
			*in.PodsFound++
			in.Phases[found.Phase]++
			in.FoundPods = append(in.FoundPods, found)
		} else {
			role.FoundPods = append(role.FoundPods, found)
			unknownReplica[p.index] = unknownReplica[p.index] || p.Replica < 0
		}
	}
	// A role some of whose pods tell no replica (KubeRay's workers without the multi-host
	// index) cannot be counted per replica: its count stands for the role alone.
	for ri := range w.Roles {
		if !unknownReplica[ri] {
			continue
		}
		for ii := range w.Roles[ri].Instances {
			w.Roles[ri].Instances[ii].PodsFound, w.Roles[ri].Instances[ii].Phases = nil, nil
		}
	}
}
