package definitions

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/expr"
)

// AnnotationMinMember on a workload's root object overrides the minMember of its groups.
const AnnotationMinMember = "workmap.dev/min-member"

// AnnotationTopologyRequired and AnnotationTopologyPreferred on a workload's root object
// override the required and the preferred topology level of every gang of the workload, each
// on its own: a level name the scheduler knows (rack) or a node label key
// (topology.kubernetes.io/zone). An empty value removes the definition's level.
const (
	AnnotationTopologyRequired  = "workmap.dev/topology-required"
	AnnotationTopologyPreferred = "workmap.dev/topology-preferred"
)

// gangs computes one Group per PodGroup that would be created. Groups whose minMember is ≤ 1
// are left out: a single pod needs no gang.
func (d *Definition) gangs(w *Workload, act *expr.Activation) ([]Group, []error) {
	var errs []error
	override, hasOverride := minMemberAnnotation(act.Self)
	if hasOverride && override < 1 {
		errs = append(errs, fmt.Errorf("annotation %s ignored: want a positive integer", AnnotationMinMember))
		hasOverride = false
	}
	topoOverride, annErrs := topologyAnnotations(act.Self)
	errs = append(errs, annErrs...)
	out := []Group{}
	w.groupOf = make([][]*gangGroup, len(d.roles))
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
		// A role belongs to one plain group, and to any computed groups (where each pod
		// chooses); computed groups come first in groupOf, so pods try them first.
		claimed := false
		for _, m := range g.members {
			if gs := w.groupOf[m.index]; g.computed == nil && len(gs) > 0 && gs[len(gs)-1].computed == nil {
				errs = append(errs, fmt.Errorf("gang group %s ignored: role %s is already in group %s (their when conditions overlap)", g.name, m.name, gs[len(gs)-1].name))
				claimed = true
			}
		}
		if claimed {
			continue
		}
		for _, m := range g.members {
			if g.computed != nil {
				w.groupOf[m.index] = append([]*gangGroup{g}, w.groupOf[m.index]...)
			} else {
				w.groupOf[m.index] = append(w.groupOf[m.index], g)
			}
		}
		active = append(active, g)
	}
	for _, g := range active {
		var members []*Role
		for i := range w.Roles {
			// Roles without pods (none expected, or not readable) have nothing to gang.
			if w.Roles[i].def != nil && slices.Contains(w.groupOf[w.Roles[i].def.index], g) && w.Roles[i].Pods > 0 {
				members = append(members, &w.Roles[i])
			}
		}
		base := Group{Name: g.name, Scope: g.scope, Members: memberNames(g), TimeoutSeconds: g.timeout}
		if g.leaderFirst != nil {
			lf, err := g.leaderFirst.EvalBool(act)
			if err != nil {
				errs = append(errs, fmt.Errorf("gang group %s: leaderFirst: %w", g.name, err))
			}
			base.LeaderFirst = lf
		}
		// The same topology error in every replica is reported once.
		var topoReported map[string]bool
		// emit adds one PodGroup; a is the activation its minMember was evaluated in, which
		// its topology is evaluated in too.
		emit := func(grp Group, a *expr.Activation, size int64, pods []podSet, err error) {
			if err != nil {
				errs = append(errs, fmt.Errorf("gang group %s: %w", g.name, err))
				return
			}
			if hasOverride {
				size = override
			} else if have := podsIn(pods); g.computed == nil && size > have {
				// More than its members will ever have (a count read from a broken role, or
				// roles without pods): such a PodGroup would hold its pods forever. Without
				// any pods (a suspended workload) there is simply nothing to gang.
				if have > 0 {
					errs = append(errs, fmt.Errorf("gang group %s: minMember %d is more than the %d pods of its members: no gang", g.name, size, have))
				}
				return
			}
			if size <= 1 {
				return
			}
			grp.MinMember = int32(min(size, math.MaxInt32))
			grp.MinResources = firstPodsResources(pods, size)
			var topoErr error
			grp.Topology, topoErr = g.topology(a, topoOverride)
			if topoErr != nil {
				if msg := topoErr.Error(); !topoReported[msg] {
					if topoReported == nil {
						topoReported = map[string]bool{}
					}
					topoReported[msg] = true
					errs = append(errs, fmt.Errorf("gang group %s: %w", g.name, topoErr))
				}
			}
			out = append(out, grp)
		}
		switch {
		case g.computed != nil:
			// Once, or per replica with `replica` bound when the group has scope replica.
			replicas, perReplica := int64(1), g.scope == v1alpha1.ScopeReplica
			if perReplica {
				replicas = 0
				for _, role := range members {
					replicas = max(replicas, role.Replicas)
				}
			}
			// PodGroups hold the workload's pods: far more groups than pods means a count read
			// from a malformed object, which must not make millions of groups. The slack
			// allows for entries without pods, as many as a list holds (expr.MaxCollection).
			groupsLeft := w.Totals.Pods + expr.MaxCollection
			for r := int64(0); r < replicas && r < math.MaxInt32; r++ {
				a := *act
				a.Replica, a.HasReplica = r, perReplica
				entries, err := computedGroups(g, &a, groupsLeft)
				if err != nil {
					errs = append(errs, fmt.Errorf("gang group %s: %w", g.name, err))
					break
				}
				groupsLeft -= int64(len(entries))
				for _, e := range entries {
					grp := base
					grp.Instance = e.name
					if perReplica {
						rr := int32(r)
						grp.Replica = &rr
					}
					emit(grp, &a, e.minMember, nil, nil)
				}
			}
		case g.scope == v1alpha1.ScopeInstanceReplica:
			for _, role := range members {
				a := *act
				a.Item, a.HasItem, a.Key = role.item, role.hasItem, role.key
				for r := int64(0); r < role.Replicas && r < math.MaxInt32; r++ {
					grp := base
					rr := int32(r)
					grp.Instance, grp.Replica = role.Name, &rr
					a.Replica, a.HasReplica = r, true
					n, err := evalIntOr(g.minMember, &a, role.PodsPerReplica)
					emit(grp, &a, n, []podSet{{role.PodsPerReplica, role.PodResources}}, err)
				}
			}
		case g.scope == v1alpha1.ScopeInstance:
			for _, role := range members {
				grp := base
				grp.Instance = role.Name
				a := *act
				a.Item, a.HasItem, a.Key = role.item, role.hasItem, role.key
				n, err := evalIntOr(g.minMember, &a, startPods(role))
				emit(grp, &a, n, []podSet{{role.Pods, role.PodResources}}, err)
			}
		case g.scope == v1alpha1.ScopeReplica:
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
				emit(grp, &a, n, pods, err)
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
			emit(base, act, n, pods, err)
		}
	}
	return out, errs
}

type computedGroup struct {
	name      string
	minMember int64
}

// computedGroups evaluates a group's computed list: maps with a unique name and a minMember,
// at most max of them.
func computedGroups(g *gangGroup, act *expr.Activation, max int64) ([]computedGroup, error) {
	list, err := g.computed.EvalList(act)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := make([]computedGroup, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		name, nameOK := m["name"].(string)
		min, minOK := m["minMember"].(float64)
		count, hasCount := m["count"].(float64)
		if !ok || !nameOK || name == "" || !minOK || min != float64(int64(min)) || (hasCount && (count != float64(int64(count)) || count < 0 || count > maxRolePods)) {
			return nil, fmt.Errorf("computed[%d]: want {name: string, minMember: int[, count: int]}, got %v", i, e)
		}
		n := int64(1)
		if hasCount {
			n = int64(count)
		}
		if int64(len(out))+n > max {
			return nil, fmt.Errorf("computed[%d]: more groups than the workload has pods", i)
		}
		names := []string{name}
		if hasCount {
			names = names[:0]
			for k := 0; k < int(count); k++ {
				names = append(names, name+"-"+strconv.Itoa(k))
			}
		}
		for _, n := range names {
			if seen[n] {
				return nil, fmt.Errorf("computed[%d]: duplicate name %q", i, n)
			}
			seen[n] = true
			out = append(out, computedGroup{name: n, minMember: int64(min)})
		}
	}
	return out, nil
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

// topologyOverride is what the workload's topology annotations say; has* tells an annotation
// that is set (even to "", which removes the definition's level) from one that is not.
type topologyOverride struct {
	required, preferred       string
	hasRequired, hasPreferred bool
}

// topologyAnnotations reads the topology annotations of a root object. A value that is not a
// topology level is ignored, with an error.
func topologyAnnotations(self map[string]any) (topologyOverride, []error) {
	var o topologyOverride
	var errs []error
	md, _ := self["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	read := func(key string, level *string, has *bool) {
		raw, ok := ann[key]
		if !ok {
			return
		}
		v, ok := raw.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("annotation %s ignored: want a string", key))
			return
		}
		v = strings.TrimSpace(v)
		if err := checkTopologyLevel(v); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s ignored: %w", key, err))
			return
		}
		*level, *has = v, true
	}
	read(AnnotationTopologyRequired, &o.required, &o.hasRequired)
	read(AnnotationTopologyPreferred, &o.preferred, &o.hasPreferred)
	return o, errs
}

// AnnotationTopology is the topology the workmap.dev/topology-required and -preferred
// annotations of a workload ask of a gang that has no topology of its own (the gang of a Job
// or of a bare pod, which the scheduler forms without a definition): nil when neither is set.
// An annotation whose value is not a topology level is ignored, and returned as an error.
func AnnotationTopology(annotations map[string]string) (*GroupTopology, []error) {
	ann := map[string]any{}
	for _, k := range []string{AnnotationTopologyRequired, AnnotationTopologyPreferred} {
		if v, ok := annotations[k]; ok {
			ann[k] = v
		}
	}
	if len(ann) == 0 {
		return nil, nil
	}
	o, errs := topologyAnnotations(map[string]any{"metadata": map[string]any{"annotations": ann}})
	t, _ := (&gangGroup{}).topology(nil, o)
	return t, errs
}

// topology is the topology intent of one PodGroup of the group: the definition's levels,
// evaluated in act, each replaced by its annotation when the workload has one. An expression
// that fails, or yields something that is not a level, leaves the definition's levels out
// (the PodGroup is unconstrained unless an annotation says otherwise) and is returned as the
// error. Nil when neither gives a level.
func (g *gangGroup) topology(act *expr.Activation, o topologyOverride) (*GroupTopology, error) {
	var required, preferred string
	var err error
	if !o.hasRequired {
		required, err = evalTopologyLevel(g.topologyRequired, act)
	}
	if err == nil && !o.hasPreferred {
		preferred, err = evalTopologyLevel(g.topologyPreferred, act)
	}
	var nested *NestedGroupTopology
	if err == nil {
		nested, err = g.nestedTopology(act)
	}
	if err != nil {
		required, preferred, nested = "", "", nil
	}
	source := TopologySourceDefinition
	if o.hasRequired {
		required, source = o.required, TopologySourceAnnotation
	}
	if o.hasPreferred {
		preferred, source = o.preferred, TopologySourceAnnotation
	}
	if required == "" && preferred == "" && nested == nil {
		return nil, err
	}
	return &GroupTopology{Required: required, Preferred: preferred, Nested: nested, Source: source}, err
}

// nestedTopology evaluates the group's nested levels, outer first. A level whose expression
// yields "" is left out: its parts are unconstrained, and the level inside it, if any, is the
// outermost that is not.
func (g *gangGroup) nestedTopology(act *expr.Activation) (*NestedGroupTopology, error) {
	var out *NestedGroupTopology
	last := &out
	for _, n := range g.nested {
		level, err := evalTopologyLevel(n.required, act)
		if err != nil {
			return nil, err
		}
		if level != "" {
			*last = &NestedGroupTopology{Scope: n.scope, Required: level}
			last = &(*last).Nested
		}
	}
	return out, nil
}

// evalTopologyLevel evaluates a topology expression: "" when there is none.
func evalTopologyLevel(p *expr.Program, act *expr.Activation) (string, error) {
	if p == nil {
		return "", nil
	}
	v, err := p.EvalString(act)
	if err != nil {
		return "", err
	}
	v = strings.TrimSpace(v)
	if err := checkTopologyLevel(v); err != nil {
		return "", fmt.Errorf("%s: %w", p.Field, err)
	}
	return v, nil
}

// checkTopologyLevel accepts "" (no constraint) and what can name a topology level: a level
// name or a node label key, both qualified names (rack, topology.kubernetes.io/zone).
func checkTopologyLevel(v string) error {
	if v == "" {
		return nil
	}
	if msgs := validation.IsQualifiedName(v); len(msgs) > 0 {
		return fmt.Errorf("%q is neither a topology level name nor a node label key: %s", v, strings.Join(msgs, "; "))
	}
	return nil
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

// podsIn counts the pods of pod sets.
func podsIn(sets []podSet) int64 {
	var n int64
	for _, s := range sets {
		n += s.pods
	}
	return n
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
