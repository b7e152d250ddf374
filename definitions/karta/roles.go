package karta

import (
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/paths"
)

// component is one input component and what its conversion found out.
type component struct {
	c     *Component
	field *field.Path
	// role is the workmap role, nil when the component has no pods in the output.
	role  *v1alpha1.Role
	scope valueScope
	// instanceKey and replicaKey are the pod-side paths of the instance id and the replica key
	// (the latter maybe inherited from an owner), for classifying gang keys.
	instanceKey, replicaKey *paths.Path // nil when not a simple path
	// replicaUsed is set on a component whose replicaSelector a role uses.
	replicaUsed bool
}

// convertRole makes cp a role when its specDefinition can be converted.
func (cv *converter) convertRole(cp *component) {
	c, f := cp.c, cp.field
	if c.SuspendDefinition != nil {
		cv.is.notConverted(f.Child("suspendDefinition").String(), "workmap does not suspend or resume workloads")
	}
	if c.SpecDefinition == nil {
		cv.notARole(cp)
		return
	}
	r := &v1alpha1.Role{Name: cv.roleName(c.Name)}
	if !cv.location(cp, r) {
		return
	}
	cp.role = r
	if sc := c.ScaleDefinition; sc != nil {
		sf := f.Child("scaleDefinition")
		r.Replicas = cv.value(sf.Child("replicasPath"), sc.ReplicasPath, cp.scope, "1", "replicas default to 1")
		r.MinReplicas = cv.value(sf.Child("minReplicasPath"), sc.MinReplicasPath, cp.scope, "0", "the gang size uses replicas")
		if sc.MaxReplicasPath != nil {
			cv.is.notConverted(sf.Child("maxReplicasPath").String(), "workmap has no maximum replicas (pods and gang sizes come from replicas and minReplicas): `%s` is not converted", *sc.MaxReplicasPath)
		}
	}
	if c.InstanceIDPath != nil {
		cv.instanceName(cp, r, f.Child("instanceIdPath"), *c.InstanceIDPath)
	}
	cv.podSelector(cp, r)
}

// value converts an optional jq path on the root object; on failure it reports and returns "".
func (cv *converter) value(f *field.Path, src *string, sc valueScope, def, otherwise string) string {
	if src == nil {
		return ""
	}
	cel, note, err := objectValue(*src, sc, def, def)
	if err != nil {
		cv.is.notConverted(f.String(), "%v: %s", err, otherwise)
		return ""
	}
	if note != "" {
		cv.is.changed(f.String(), "%s", note)
	}
	return cel
}

// notARole reports what a component without pods carries that has no equivalent.
func (cv *converter) notARole(cp *component) {
	c, f := cp.c, cp.field
	why := "component " + c.Name + " has no specDefinition, so it is no workmap role"
	if c.ScaleDefinition != nil {
		cv.is.notConverted(f.Child("scaleDefinition").String(), "%s: its counts are not converted (a workmap role counts replicas × podsPerReplica; fold this level into its roles by hand)", why)
	}
	if c.InstanceIDPath != nil {
		cv.is.notConverted(f.Child("instanceIdPath").String(), "%s: its instance ids are not converted", why)
	}
	if ps := c.PodSelector; ps != nil {
		if ps.ComponentTypeSelector != nil {
			cv.is.notConverted(f.Child("podSelector", "componentTypeSelector").String(), "%s: its pod selector is not converted", why)
		}
		if ps.ComponentInstanceSelector != nil {
			cv.is.notConverted(f.Child("podSelector", "componentInstanceSelector").String(), "%s: its pod selector is not converted", why)
		}
	}
}

// location sets the role's podTemplate, podSpec or podFields; false when there is none.
func (cv *converter) location(cp *component, r *v1alpha1.Role) bool {
	sd, sf := cp.c.SpecDefinition, cp.field.Child("specDefinition")
	var set []string
	if sd.PodTemplateSpecPath != nil {
		set = append(set, "podTemplateSpecPath")
	}
	if sd.PodSpecPath != nil {
		set = append(set, "podSpecPath")
	}
	if sd.FragmentedPodSpecDefinition != nil {
		set = append(set, "fragmentedPodSpecDefinition")
	}
	if len(set) == 0 {
		cv.is.notConverted(sf.String(), "no podTemplateSpecPath, podSpecPath or fragmentedPodSpecDefinition: component %s is not converted", cp.c.Name)
		return false
	}
	for _, extra := range set[1:] {
		cv.is.notConverted(sf.Child(extra).String(), "only one spec definition is allowed: %s is used", set[0])
	}
	if sd.MetadataPath != nil {
		if set[0] == "podSpecPath" {
			cv.is.notConverted(sf.Child("metadataPath").String(), "workmap's podSpec form has no metadata path: the pod labels and annotations at `%s` are not read", *sd.MetadataPath)
		} else {
			cv.is.notConverted(sf.Child("metadataPath").String(), "metadataPath is only used with podSpecPath")
		}
	}
	notRole := "component " + cp.c.Name + " is not converted (a role needs the location of its pods)"
	switch set[0] {
	case "podTemplateSpecPath", "podSpecPath":
		src := sd.PodTemplateSpecPath
		if set[0] == "podSpecPath" {
			src = sd.PodSpecPath
		}
		p, err := parsePath(*src)
		if err != nil {
			cv.is.notConverted(sf.Child(set[0]).String(), "%v: %s", err, notRole)
			return false
		}
		if set[0] == "podSpecPath" {
			r.PodSpec = workmapPath(p)
		} else {
			r.PodTemplate = workmapPath(p)
		}
		cp.scope.prefix, _ = p.SplitAtLastWildcard()
		return true
	}
	r.PodFields, cp.scope.prefix = cv.podFields(sd.FragmentedPodSpecDefinition, sf.Child("fragmentedPodSpecDefinition"))
	return true
}

// fragField maps one fragmentedPodSpecDefinition path to a podFields field; set is nil for
// paths workmap has no field for, and why says so.
type fragField struct {
	name string
	get  func(*FragmentedPodSpecDefinition) *string
	set  func(*v1alpha1.PodFields, string)
	why  string
}

var fragFields = []fragField{
	{"schedulerNamePath", func(f *FragmentedPodSpecDefinition) *string { return f.SchedulerNamePath }, func(p *v1alpha1.PodFields, v string) { p.SchedulerName = v }, ""},
	{"labelsPath", func(f *FragmentedPodSpecDefinition) *string { return f.LabelsPath }, func(p *v1alpha1.PodFields, v string) { p.Labels = v }, ""},
	{"annotationsPath", func(f *FragmentedPodSpecDefinition) *string { return f.AnnotationsPath }, func(p *v1alpha1.PodFields, v string) { p.Annotations = v }, ""},
	{"resourcesPath", func(f *FragmentedPodSpecDefinition) *string { return f.ResourcesPath }, func(p *v1alpha1.PodFields, v string) { p.Resources = v }, ""},
	{"resourceClaimsPath", func(f *FragmentedPodSpecDefinition) *string { return f.ResourceClaimsPath }, func(p *v1alpha1.PodFields, v string) { p.ResourceClaims = v }, ""},
	{"podAffinityPath", func(f *FragmentedPodSpecDefinition) *string { return f.PodAffinityPath }, nil, "workmap's podFields.affinity is a whole Affinity, not its podAffinity part"},
	{"nodeAffinityPath", func(f *FragmentedPodSpecDefinition) *string { return f.NodeAffinityPath }, nil, "workmap's podFields.affinity is a whole Affinity, not its nodeAffinity part"},
	{"containersPath", func(f *FragmentedPodSpecDefinition) *string { return f.ContainersPath }, func(p *v1alpha1.PodFields, v string) { p.Containers = v }, ""},
	{"containerPath", func(f *FragmentedPodSpecDefinition) *string { return f.ContainerPath }, nil, "workmap's podFields has no single-container path (use containers, or resources for the main container)"},
	{"priorityClassNamePath", func(f *FragmentedPodSpecDefinition) *string { return f.PriorityClassNamePath }, func(p *v1alpha1.PodFields, v string) { p.PriorityClassName = v }, ""},
	{"imagePath", func(f *FragmentedPodSpecDefinition) *string { return f.ImagePath }, nil, "workmap's podFields has no image path"},
}

// podFields converts a fragmentedPodSpecDefinition. Paths through a `[]` share one base (the
// part through their last `[]`) and become relative to it; it is returned as the role's scope.
func (cv *converter) podFields(fd *FragmentedPodSpecDefinition, f *field.Path) (*v1alpha1.PodFields, paths.Path) {
	parsed := map[string]paths.Path{}
	var base paths.Path
	for _, ff := range fragFields {
		src := ff.get(fd)
		if src == nil {
			continue
		}
		if ff.set == nil {
			cv.is.notConverted(f.Child(ff.name).String(), "%s: `%s` is not converted", ff.why, *src)
			continue
		}
		p, err := parsePath(*src)
		if err != nil {
			cv.is.notConverted(f.Child(ff.name).String(), "%v: the field is not read or written", err)
			continue
		}
		parsed[ff.name] = p
		if pre, _ := p.SplitAtLastWildcard(); base.IsEmpty() {
			base = pre
		}
	}
	pf := &v1alpha1.PodFields{}
	if !base.IsEmpty() {
		pf.Base = workmapPath(base)
	}
	for _, ff := range fragFields {
		p, ok := parsed[ff.name]
		if !ok {
			continue
		}
		pre, _ := p.SplitAtLastWildcard()
		switch {
		case !base.IsEmpty() && !pre.Equal(base):
			cv.is.notConverted(f.Child(ff.name).String(), "`%s` is not under `%s`, the per-instance base of the other fields (podFields.base): the field is not read or written", p.JQ(), base.JQ())
			continue
		case !base.IsEmpty():
			p, _ = p.CutPrefix(base)
		}
		ff.set(pf, workmapPath(p))
	}
	return pf, base
}

// mapKeys matches instance ids that are the keys of the map the pod template iterates, e.g.
// `.spec.replicaSpecs | keys[]` or `.spec.replicaSpecs | to_entries[] | .key`.
var mapKeys = regexp.MustCompile(`^(.*?)\s*\|\s*(?:keys\[\]|keys_unsorted\[\]|to_entries\[\]\s*(?:\|\s*)?\.key)$`)

// iterate is the path `[]`.
var iterate = paths.FromSteps([]paths.Step{{Kind: paths.Wildcard}})

// instanceName converts instanceIdPath into the role's instanceName.
func (cv *converter) instanceName(cp *component, r *v1alpha1.Role, f *field.Path, src string) {
	keep := "instances keep their default names (the map key, or the item's name in a list of named items, else the list index)"
	if m := mapKeys.FindStringSubmatch(strings.TrimSpace(src)); m != nil && !cp.scope.prefix.IsEmpty() {
		if p, err := parsePath(m[1]); err == nil && p.Join(iterate).Equal(cp.scope.prefix) {
			r.InstanceName = "key"
			return
		}
	}
	cel, note, err := objectValue(src, cp.scope, "''", "key")
	switch {
	case err != nil:
		cv.is.notConverted(f.String(), "%v: %s", err, keep)
		return
	case !cp.scope.prefix.IsEmpty() && !strings.HasPrefix(cel, "item"):
		cv.is.notConverted(f.String(), "`%s` does not go through the pod template's `%s`, so every instance would get the same name: %s", src, cp.scope.prefix.JQ(), keep)
		return
	}
	if note != "" {
		cv.is.changed(f.String(), "%s", note)
	}
	r.InstanceName = cel
}

// podSelector converts the pod-side selectors into podInstance and podReplica.
func (cv *converter) podSelector(cp *component, r *v1alpha1.Role) {
	ps := cp.c.PodSelector
	if ps == nil {
		return
	}
	pf := cp.field.Child("podSelector")
	var typeCond, instance string
	if ci := ps.ComponentInstanceSelector; ci != nil {
		f := pf.Child("componentInstanceSelector", "idPath")
		cel, note, err := podValue(ci.IDPath, "''")
		if err != nil {
			cv.is.notConverted(f.String(), "%v: live pods cannot be assigned to the instances of role %s", err, r.Name)
		} else {
			instance = cel
			cp.instanceKey = keyPath(ci.IDPath)
			if note != "" {
				cv.is.changed(f.String(), "%s", note)
			}
		}
	}
	if ts := ps.ComponentTypeSelector; ts != nil {
		f := pf.Child("componentTypeSelector")
		cond, err := typeCondition(ts)
		switch {
		case err != nil && instance != "":
			cv.is.notConverted(f.String(), "%v: pods of role %s are recognized by their instance id only", err, r.Name)
		case err != nil:
			cv.is.notConverted(f.String(), "%v: live pods cannot be assigned to role %s", err, r.Name)
		default:
			typeCond = cond
		}
	}
	switch {
	case instance != "" && typeCond != "":
		r.PodInstance = typeCond + " ? " + instance + " : ''"
	case instance != "":
		r.PodInstance = instance
	case typeCond != "" && cp.scope.prefix.IsEmpty():
		name := celString(r.Name)
		if r.InstanceName != "" {
			name = "(" + r.InstanceName + ")"
		}
		r.PodInstance = typeCond + " ? " + name + " : ''"
	case typeCond != "":
		cv.is.notConverted(pf.Child("componentTypeSelector").String(), "role %s has one instance per `%s` item but no componentInstanceSelector: live pods cannot be assigned to an instance", r.Name, cp.scope.prefix.JQ())
	}
	if rs := ps.ReplicaSelector; rs != nil {
		cp.replicaUsed = true
		cv.podReplica(cp, r, cp, pf.Child("replicaSelector", "keyPath"))
	}
}

// typeCondition renders a componentTypeSelector as a CEL condition on `pod`.
func typeCondition(ts *ComponentTypeSelector) (string, error) {
	if ts.Value != nil {
		v, _, err := podValue(ts.KeyPath, "''")
		if err != nil {
			return "", err
		}
		return v + " == " + celString(*ts.Value), nil
	}
	p, err := parsePath(ts.KeyPath)
	if err == nil && p.Wildcards() > 0 {
		_, _, err = podValue(ts.KeyPath, "''")
	}
	if err != nil {
		return "", err
	}
	chain, opt := celChain("pod", p, plainSteps("pod", p))
	if !opt {
		return "true", nil
	}
	return chain + ".hasValue()", nil
}

// podReplica sets the role's podReplica from the replicaSelector of from (the role's own
// component or an owner).
func (cv *converter) podReplica(cp *component, r *v1alpha1.Role, from *component, f *field.Path) {
	src := from.c.PodSelector.ReplicaSelector.KeyPath
	cel, note, err := podValue(src, "'-1'")
	if err != nil {
		cv.is.notConverted(f.String(), "%v: role %s has no podReplica (needed for gangs per replica)", err, r.Name)
		return
	}
	if note != "" && from == cp {
		cv.is.changed(f.String(), "%s", note)
	}
	r.PodReplica = cel
	cp.replicaKey = keyPath(src)
}

// keyPath parses a pod-side key expression that converted, for comparing keys.
func keyPath(src string) *paths.Path {
	p, _, err := parseDefaulted(src)
	if err != nil {
		return nil
	}
	return &p
}

// roleName makes a valid, unique role name from a component name: first letter lowercased,
// other characters outside [-a-zA-Z0-9] replaced by '-'.
func (cv *converter) roleName(component string) string {
	b := []byte(component)
	for i, c := range b {
		if !isIdentByte(c, false) || c == '_' {
			b[i] = '-'
		}
	}
	name := strings.Trim(string(b), "-")
	if name == "" {
		name = "role"
	}
	name = strings.ToLower(name[:1]) + name[1:]
	if len(name) > 60 {
		name = strings.TrimRight(name[:60], "-")
	}
	unique := name
	for i := 2; cv.roleNames[unique]; i++ {
		unique = name + "-" + strconv.Itoa(i)
	}
	cv.roleNames[unique] = true
	return unique
}
