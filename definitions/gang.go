package definitions

import (
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/expr"
)

// AnnotationMinMember on a workload's root object overrides the minMember of its groups.
const AnnotationMinMember = "workmap.dev/min-member"

// gangs computes one Group per PodGroup that would be created. Groups whose minMember is ≤ 1
// are left out: a single pod needs no gang.
func (d *Definition) gangs(w *Workload, act *expr.Activation) ([]Group, []error) {
	var errs []error
	override, hasOverride := minMemberAnnotation(act.Self)
	if hasOverride && override < 1 {
		errs = append(errs, fmt.Errorf("annotation %s ignored: want a positive integer", AnnotationMinMember))
		hasOverride = false
	}
	out := []Group{}
	w.groupOf = make([]*gangGroup, len(d.roles))
	var active []*gangGroup
	for _, g := range d.groups {
		if g.when != nil {
			ok, err := g.when.EvalBool(act)
			if err != nil {
				errs = append(errs, fmt.Errorf("gang group %s: %w", g.name, err))
				continue
			}
			if !ok {
				continue
			}
		}
		claimed := false
		for _, m := range g.members {
			if other := w.groupOf[m.index]; other != nil {
				errs = append(errs, fmt.Errorf("gang group %s ignored: role %s is already in group %s (their when conditions overlap)", g.name, m.name, other.name))
				claimed = true
			}
		}
		if claimed {
			continue
		}
		for _, m := range g.members {
			w.groupOf[m.index] = g
		}
		active = append(active, g)
	}
	for _, g := range active {
		var members []*Role
		for i := range w.Roles {
			// Roles without pods (none expected, or not readable) have nothing to gang.
			if w.Roles[i].def != nil && w.groupOf[w.Roles[i].def.index] == g && w.Roles[i].Pods > 0 {
				members = append(members, &w.Roles[i])
			}
		}
		base := Group{Name: g.name, Scope: g.scope, Members: memberNames(g), TimeoutSeconds: g.timeout}
		emit := func(grp Group, size int64, pods []podSet, err error) {
			if err != nil {
				errs = append(errs, fmt.Errorf("gang group %s: %w", g.name, err))
				return
			}
			if hasOverride {
				size = override
			}
			if size <= 1 {
				return
			}
			grp.MinMember = int32(min(size, math.MaxInt32))
			grp.MinResources = firstPodsResources(pods, size)
			out = append(out, grp)
		}
		switch g.scope {
		case v1alpha1.ScopeInstance:
			for _, role := range members {
				grp := base
				grp.Instance = role.Name
				a := *act
				a.Item, a.HasItem, a.Key = role.item, role.hasItem, role.key
				n, err := evalIntOr(g.minMember, &a, startPods(role))
				emit(grp, n, []podSet{{role.Pods, role.PodResources}}, err)
			}
		case v1alpha1.ScopeReplica:
			replicas := int64(0)
			for _, role := range members {
				replicas = max(replicas, role.Replicas)
			}
			for r := int64(0); r < replicas && r < math.MaxInt32; r++ {
				grp := base
				rr := int32(r)
				grp.Replica = &rr
				var pods []podSet
				def := int64(0)
				for _, role := range members {
					if role.Replicas > r {
						pods = append(pods, podSet{role.PodsPerReplica, role.PodResources})
						def += role.PodsPerReplica
					}
				}
				a := *act
				a.Replica, a.HasReplica = r, true
				n, err := evalIntOr(g.minMember, &a, def)
				emit(grp, n, pods, err)
			}
		default:
			def := int64(0)
			// The pods each role must start with come first, then the rest: MinResources
			// of the default minMember are those of the required pods.
			var pods, extra []podSet
			for _, role := range members {
				start := startPods(role)
				def += start
				pods = append(pods, podSet{start, role.PodResources})
				extra = append(extra, podSet{role.Pods - start, role.PodResources})
			}
			pods = append(pods, extra...)
			n, err := evalIntOr(g.minMember, act, def)
			emit(base, n, pods, err)
		}
	}
	return out, errs
}

// minMemberAnnotation reads the override annotation; found with n < 1 means malformed.
func minMemberAnnotation(self map[string]any) (int64, bool) {
	md, _ := self["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	v, ok := ann[AnnotationMinMember].(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, true
	}
	return n, true
}

// startPods is how many pods of a role must start together: minReplicas when the role
// declares one > 0, else replicas, times podsPerReplica.
func startPods(r *Role) int64 {
	if r.MinReplicas > 0 {
		return min(r.MinReplicas, r.Replicas) * r.PodsPerReplica
	}
	return r.Pods
}

type podSet struct {
	pods      int64
	resources corev1.ResourceList
}

// firstPodsResources sums the requests of the first n pods, taking sets in order.
func firstPodsResources(sets []podSet, n int64) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, s := range sets {
		if n <= 0 {
			break
		}
		take := min(n, s.pods)
		addResources(out, s.resources, take)
		n -= take
	}
	return out
}

func memberNames(g *gangGroup) []string {
	out := make([]string, len(g.members))
	for i, m := range g.members {
		out[i] = m.name
	}
	return out
}
