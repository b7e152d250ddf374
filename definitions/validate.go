package definitions

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/paths"
)

var validStates = sets.New(
	v1alpha1.StatePending, v1alpha1.StateInitializing, v1alpha1.StateRunning, v1alpha1.StateDegraded,
	v1alpha1.StateSuspended, v1alpha1.StateCompleted, v1alpha1.StateFailed, v1alpha1.StateUnknown,
)

// Validate checks the structure of a definition without compiling its expressions: required
// fields, unique names, members that exist, sane numbers. Errors name the field path.
func Validate(def *v1alpha1.WorkloadDefinition) field.ErrorList {
	var errs field.ErrorList
	if def.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), ""))
	}
	spec := &def.Spec
	sp := field.NewPath("spec")
	wp := sp.Child("workload")
	if spec.Workload.Kind == "" {
		errs = append(errs, field.Required(wp.Child("kind"), ""))
	}
	if len(spec.Workload.Versions) == 0 {
		errs = append(errs, field.Required(wp.Child("versions"), "list the versions the definition was tested with"))
	}
	if len(spec.Roles) == 0 {
		errs = append(errs, field.Required(sp.Child("roles"), "a workload needs at least one role"))
	}
	roleNames := map[string]int{}
	for i, r := range spec.Roles {
		p := sp.Child("roles").Index(i)
		if r.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if j, dup := roleNames[r.Name]; dup {
			errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (also spec.roles[%d])", r.Name, j)))
		} else {
			roleNames[r.Name] = i
			if len(r.Name) > 63 || !roleName.MatchString(r.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), r.Name, "must start with a lowercase letter or digit, then letters, digits or '-', at most 63 characters (e.g. replicatedJob, workers)"))
			}
		}
		set := 0
		for _, s := range []bool{r.PodTemplate != "", r.PodSpec != "", r.PodFields != nil} {
			if s {
				set++
			}
		}
		if set != 1 {
			errs = append(errs, field.Invalid(p, r.Name, "exactly one of podTemplate, podSpec and podFields must be set"))
		}
		if r.PodFields != nil {
			for _, f := range podFieldList {
				if rel := f.get(r.PodFields); rel != "" {
					if parsed, err := paths.Parse(rel); err == nil && parsed.Wildcards() > 0 {
						errs = append(errs, field.Invalid(p.Child("podFields", string(f.name)), rel, "must not contain [*]: put the [*] in podFields.base"))
					}
				}
			}
		}
	}
	childNames := map[string]int{}
	for i, c := range spec.Children {
		p := sp.Child("children").Index(i)
		if c.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), ""))
		}
		if c.Version == "" {
			errs = append(errs, field.Required(p.Child("version"), ""))
		}
		name := c.Name
		if name == "" {
			name = lowerCamelPlural(c.Kind)
		}
		if j, dup := childNames[name]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (also spec.children[%d]); set name to tell them apart", name, j)))
		}
		childNames[name] = i
	}
	if spec.Pods != nil && spec.Pods.Selector == "" {
		errs = append(errs, field.Required(sp.Child("pods", "selector"), ""))
	}
	for i, r := range spec.Status {
		p := sp.Child("status").Index(i)
		if !validStates.Has(r.State) {
			errs = append(errs, field.NotSupported(p.Child("state"), r.State, sets.List(validStates)))
		}
		if r.When == "" {
			errs = append(errs, field.Required(p.Child("when"), ""))
		}
	}
	if spec.Gang != nil {
		errs = append(errs, validateGang(spec.Gang, roleNames, spec.Roles, sp.Child("gang"))...)
	}
	return errs
}

func validateGang(g *v1alpha1.Gang, roles map[string]int, defRoles []v1alpha1.Role, gp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(g.Groups) == 0 {
		errs = append(errs, field.Required(gp.Child("groups"), ""))
	}
	groupNames := sets.New[string]()
	memberOf := map[string]string{}
	conditional := map[string]bool{}
	for i, grp := range g.Groups {
		p := gp.Child("groups").Index(i)
		if grp.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if groupNames.Has(grp.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), grp.Name))
		} else {
			for _, msg := range validation.IsDNS1123Label(grp.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), grp.Name, msg))
			}
		}
		groupNames.Insert(grp.Name)
		if len(grp.Members) == 0 {
			errs = append(errs, field.Required(p.Child("members"), "name the roles whose pods join the group"))
		}
		for j, m := range grp.Members {
			mp := p.Child("members").Index(j)
			if _, ok := roles[m]; !ok {
				errs = append(errs, field.NotFound(mp, m))
				continue
			}
			// Computed groups let each pod choose; of the other groups a role is in, all must
			// be conditional (when), so that at most one applies.
			if other, ok := memberOf[m]; ok && grp.Computed == "" && (grp.When == "" || !conditional[other]) {
				errs = append(errs, field.Invalid(mp, m, fmt.Sprintf("role is already a member of group %q: a pod belongs to one gang (unless every group it is in has a when, or all but one are computed)", other)))
				continue
			}
			if grp.Computed == "" {
				memberOf[m] = grp.Name
				conditional[grp.Name] = grp.When != ""
			}
		}
		if (grp.Computed == "") != (grp.PodGroup == "") {
			errs = append(errs, field.Required(p.Child("podGroup"), "computed and podGroup go together: the group lists its PodGroups and each pod names its own"))
		}
		switch grp.Scope {
		case "", v1alpha1.ScopeWorkload, v1alpha1.ScopeInstance:
		case v1alpha1.ScopeReplica, v1alpha1.ScopeInstanceReplica:
			for _, m := range grp.Members {
				if i, ok := roles[m]; ok && defRoles[i].PodReplica == "" {
					errs = append(errs, field.Required(field.NewPath("spec", "roles").Index(i).Child("podReplica"), fmt.Sprintf("role %s is in gang group %s of scope replica, which needs the replica index of a pod", m, grp.Name)))
				}
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("scope"), grp.Scope, []v1alpha1.GangScope{v1alpha1.ScopeWorkload, v1alpha1.ScopeInstance, v1alpha1.ScopeReplica, v1alpha1.ScopeInstanceReplica}))
		}
		if t := grp.Topology; t != nil && t.Required == "" && t.Preferred == "" && t.Nested == nil {
			errs = append(errs, field.Required(p.Child("topology"), "topology needs required, preferred or nested"))
		}
		if t := grp.Topology; t != nil && t.Nested != nil {
			np := p.Child("topology", "nested")
			switch t.Nested.Scope {
			case v1alpha1.ScopeInstance, v1alpha1.ScopeReplica, v1alpha1.ScopeInstanceReplica:
			default:
				errs = append(errs, field.NotSupported(np.Child("scope"), t.Nested.Scope, []v1alpha1.GangScope{v1alpha1.ScopeInstance, v1alpha1.ScopeReplica, v1alpha1.ScopeInstanceReplica}))
			}
			if t.Nested.Required == "" {
				errs = append(errs, field.Required(np.Child("required"), "the level each part shares one domain of"))
			}
			if inner := t.Nested.Nested; inner != nil {
				if t.Nested.Scope == v1alpha1.ScopeInstanceReplica {
					errs = append(errs, field.Invalid(np.Child("scope"), t.Nested.Scope, "parts of scope instanceReplica have no smaller parts: nested inside them needs parts of scope instance or replica"))
				}
				if inner.Scope != v1alpha1.ScopeInstanceReplica {
					errs = append(errs, field.NotSupported(np.Child("nested", "scope"), inner.Scope, []v1alpha1.GangScope{v1alpha1.ScopeInstanceReplica}))
				}
				if inner.Required == "" {
					errs = append(errs, field.Required(np.Child("nested", "required"), "the level each smaller part shares one domain of"))
				}
			}
		}
		if t := grp.TimeoutSeconds; t != nil && (*t < 1 || *t > 86400) {
			errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "must be between 1 and 86400"))
		}
	}
	return errs
}

// ValidateSet checks a set of definitions that will be used together: no two may describe the
// same group/kind.
func ValidateSet(defs []*v1alpha1.WorkloadDefinition) error {
	seen := map[schema.GroupKind]string{}
	for _, d := range defs {
		gk := schema.GroupKind{Group: d.Spec.Workload.Group, Kind: d.Spec.Workload.Kind}
		if other, ok := seen[gk]; ok {
			return fmt.Errorf("definitions %q and %q both describe %s: keep one", other, d.Name, gk)
		}
		seen[gk] = d.Name
	}
	return nil
}

// roleName is the pattern of role names (the CRD enforces the same).
var roleName = regexp.MustCompile(`^[a-z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$`)
