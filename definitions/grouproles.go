package definitions

import "slices"

// GroupRoles names the roles of the tree (their Role.Name) whose pods a gang holds, in the
// tree's order. A gang of one role instance (scopes instance and instanceReplica) holds that
// role; any other gang holds each role of its member definition roles that has pods (for
// scope replica, those that have the gang's replica). The pods of a computed gang's roles
// each choose their gang: every role that may join it is named.
func (w *Workload) GroupRoles(g Group) []string {
	if g.Instance != "" && !w.computedGroup(g.Name) {
		return []string{g.Instance}
	}
	var out []string
	for _, r := range w.Roles {
		if r.Pods == 0 || !slices.Contains(g.Members, r.DefinitionRole) {
			continue
		}
		if g.Replica != nil && r.Replicas <= int64(*g.Replica) {
			continue
		}
		out = append(out, r.Name)
	}
	return out
}

// computedGroup says the definition's gang group of that name computes its gangs (each has
// the name of its entry as Instance, not a role's).
func (w *Workload) computedGroup(name string) bool {
	if w.def == nil {
		return false
	}
	for _, g := range w.def.groups {
		if g.name == name {
			return g.computed != nil
		}
	}
	return false
}

// GroupPods are the live pods found of the given roles of a gang (GroupRoles): of its replica,
// for a gang of one replica; pods whose replica is unknown count for every replica.
func (w *Workload) GroupPods(g Group, roles []string) []FoundPod {
	var out []FoundPod
	for _, r := range w.Roles {
		if !slices.Contains(roles, r.Name) {
			continue
		}
		for _, in := range r.Instances {
			if g.Replica == nil || in.Replica == int64(*g.Replica) {
				out = append(out, in.FoundPods...)
			}
		}
		out = append(out, r.FoundPods...)
	}
	return out
}
