package karta

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/paths"
)

// gangConverter converts gang scheduling instructions into gang groups.
type gangConverter struct {
	cv       *converter
	groups   []v1alpha1.GangGroup
	memberOf map[string]string // role → group
	// nameLabel is the pod label carrying the workload's name, found in groupByKeyPaths.
	nameLabel      string
	nameLabelField string
}

// scope ranks: a member's keys select the finest of these.
var scopeRank = map[v1alpha1.GangScope]int{v1alpha1.ScopeWorkload: 0, v1alpha1.ScopeInstance: 1, v1alpha1.ScopeReplica: 2}

func (cv *converter) convertGang(gs *GangScheduling, f *field.Path) *gangConverter {
	g := &gangConverter{cv: cv, memberOf: map[string]string{}}
	if gs == nil {
		return g
	}
	for i := range gs.PodGroups {
		g.podGroup(&gs.PodGroups[i], f.Child("podGroups").Index(i))
	}
	if pg := gs.PodGroup; pg != nil {
		pf := f.Child("podGroup")
		if pg.Topology != nil {
			cv.is.notConverted(pf.Child("topology").String(), "workmap gangs have no topology constraints")
		}
		members := make([]PodGroupMemberDefinition, len(pg.SubGroups))
		for i, sg := range pg.SubGroups {
			members[i] = PodGroupMemberDefinition{ComponentName: sg.ComponentName}
			if sg.Topology != nil {
				cv.is.notConverted(pf.Child("subGroups").Index(i).Child("topology").String(), "workmap gangs have no topology constraints")
			}
		}
		if len(pg.SubGroups) > 1 {
			cv.is.changed(pf.Child("subGroups").String(), "sub-groups become members of one group: their separate minimums are not kept")
		}
		g.group(pg.Name, members, pf, pf.Child("subGroups"))
	}
	return g
}

func (g *gangConverter) podGroup(pg *PodGroupDefinition, f *field.Path) {
	g.group(pg.Name, pg.Members, f, f.Child("members"))
}

// group converts one gang; mf is the field of its members list.
func (g *gangConverter) group(name string, members []PodGroupMemberDefinition, f, mf *field.Path) {
	is := g.cv.is
	grp := v1alpha1.GangGroup{Name: g.groupName(name)}
	var scopes []string
	for i, m := range members {
		p := mf.Index(i)
		cp := g.cv.byName[m.ComponentName]
		switch {
		case cp == nil:
			is.notConverted(p.Child("componentName").String(), "no component named %q", m.ComponentName)
			continue
		case cp.role == nil:
			is.notConverted(p.Child("componentName").String(), "component %s has no pods in the converted definition (no converted specDefinition): not a member", m.ComponentName)
			continue
		}
		if other, ok := g.memberOf[cp.role.Name]; ok {
			is.notConverted(p.String(), "role %s is already a member of group %s: a pod joins one gang", cp.role.Name, other)
			continue
		}
		scope := v1alpha1.ScopeWorkload
		for k, key := range m.GroupByKeyPaths {
			if s, ok := g.keyScope(cp, key, p.Child("groupByKeyPaths").Index(k)); ok && scopeRank[s] > scopeRank[scope] {
				scope = s
			}
		}
		for k, filter := range m.Filters {
			is.notConverted(p.Child("filters").Index(k).String(), "filters are not converted (`%s`): every pod of role %s joins the group", filter, cp.role.Name)
		}
		if len(grp.Members) > 0 && scope != grp.Scope {
			is.notConverted(p.Child("groupByKeyPaths").String(), "member %s groups its pods per %s, the group's earlier members per %s: converted as scope %s", m.ComponentName, scope, grp.Scope, grp.Scope)
		} else {
			grp.Scope = scope
		}
		grp.Members = append(grp.Members, cp.role.Name)
		g.memberOf[cp.role.Name] = grp.Name
		scopes = append(scopes, m.ComponentName)
	}
	if len(grp.Members) == 0 {
		is.notConverted(f.String(), "no member of group %q could be converted: group omitted", name)
		return
	}
	if grp.Scope == v1alpha1.ScopeWorkload {
		grp.Scope = "" // the default
	}
	g.groups = append(g.groups, grp)
	is.changed(f.String(), "minMember is now computed once for group %s (the sum over its member instances of minReplicas when > 0, else replicas, times podsPerReplica, per %s); Karta computed it per member (%s) from that member's scale paths, so pods of one group could get different sizes", grp.Name, orScope(grp.Scope), strings.Join(scopes, ", "))
}

func orScope(s v1alpha1.GangScope) v1alpha1.GangScope {
	if s == "" {
		return v1alpha1.ScopeWorkload
	}
	return s
}

// keyScope classifies one groupByKeyPath of a member: the workload's name label (scope
// workload), the member's instance id (instance) or its replica key (replica).
func (g *gangConverter) keyScope(cp *component, src string, f *field.Path) (v1alpha1.GangScope, bool) {
	is := g.cv.is
	p, _, err := parseDefaulted(src)
	if err == nil && p.Wildcards() > 0 {
		err = fmt.Errorf("`%s` iterates (`[]`): a grouping key must give one value", src)
	}
	if err != nil {
		is.notConverted(f.String(), "%v: the group is converted without this key", err)
		return "", false
	}
	switch {
	case cp.replicaKey != nil && p.Equal(*cp.replicaKey):
		return v1alpha1.ScopeReplica, true
	case cp.instanceKey != nil && p.Equal(*cp.instanceKey):
		return v1alpha1.ScopeInstance, true
	}
	if label, ok := g.cv.workloadNameLabel(p); ok {
		if g.nameLabel == "" {
			g.nameLabel, g.nameLabelField = label, f.String()
		}
		return v1alpha1.ScopeWorkload, true
	}
	is.notConverted(f.String(), "cannot tell whether grouping by `%s` separates workloads, instances or replicas (it is neither role %s's componentInstanceSelector nor its replicaSelector, nor a label naming the workload): the group is converted without this key", src, cp.role.Name)
	return "", false
}

// groupName makes a unique DNS label from a pod group name.
func (g *gangConverter) groupName(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	n := strings.Trim(string(b), "-")
	if len(n) > 60 {
		n = strings.TrimRight(n[:60], "-")
	}
	if n == "" {
		n = "gang"
	}
	unique := n
	for i := 2; g.hasGroup(unique); i++ {
		unique = fmt.Sprintf("%s-%d", n, i)
	}
	return unique
}

func (g *gangConverter) hasGroup(name string) bool {
	for _, grp := range g.groups {
		if grp.Name == name {
			return true
		}
	}
	return false
}

// workloadNameLabel recognizes `.metadata.labels["<domain>/<x>-name"]` where x names the root
// kind (jobset-name for JobSet, job-name for PyTorchJob) and no child kind, or
// `<domain>/name` where the domain names the root kind (leaderworkerset.sigs.k8s.io/name).
func (cv *converter) workloadNameLabel(p paths.Path) (string, bool) {
	s := p.Steps()
	if len(s) != 3 || s[0].Name != "metadata" || s[1].Name != "labels" || s[2].Kind != paths.Field {
		return "", false
	}
	key := s[2].Name
	domain, name, _ := strings.Cut(key, "/")
	if name == "" {
		domain, name = "", key
	}
	kind := strings.ToLower(cv.rootKind)
	if name == "name" {
		if domain == "" || !strings.Contains(strings.ToLower(domain), kind) {
			return "", false
		}
		return key, true
	}
	stem, ok := strings.CutSuffix(name, "-name")
	if !ok || stem == "" || !(strings.HasSuffix(kind, stem) || stem == strings.ToLower(cv.rootName)) {
		return "", false
	}
	for _, k := range cv.childKinds {
		if strings.ToLower(k) == stem {
			return "", false
		}
	}
	return key, true
}
