package definitions

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/crdschema"
	"github.com/workmap/workmap/definitions/expr"
	"github.com/workmap/workmap/definitions/paths"
)

// Definition is a validated, compiled WorkloadDefinition, ready to expand workloads. It is
// immutable and safe for concurrent use.
type Definition struct {
	// Source is the definition as loaded.
	Source *v1alpha1.WorkloadDefinition
	// GroupKind is the root kind it describes.
	GroupKind schema.GroupKind

	roles    []*role
	children []Child
	selector *expr.Program
	status   []*statusRule
	groups   []*gangGroup
	versions map[string]bool
	// sharedClaims lists the claims pods share (a list of maps, see SharedClaims).
	sharedClaims *expr.Program
	// placesByMetadata: every pod-side expression reads the pod only through its labels and
	// annotations (see PlacesByLabels).
	placesByMetadata bool
}

// PlacesByLabels reports whether the definition places a pod (its role, replica and group)
// from the pod's labels and annotations alone: then pods of one workload with the same labels
// and annotations have the same placement, and callers may reuse it.
func (d *Definition) PlacesByLabels() bool { return d.placesByMetadata }

func (d *Definition) podPrograms() []*expr.Program {
	var out []*expr.Program
	for _, r := range d.roles {
		out = append(out, r.podInstance, r.podReplica)
	}
	for _, g := range d.groups {
		out = append(out, g.podGroup)
	}
	return out
}

// Child is a kind of child object, with the name it has in the `children` CEL variable.
type Child struct {
	GroupVersionKind schema.GroupVersionKind
	// Resource is the resource to list the objects with.
	Resource schema.GroupVersionResource
	Name     string

	selector *expr.Program
}

type role struct {
	name           string
	index          int
	source         *v1alpha1.Role
	locator        paths.Path // podTemplate, podSpec or podFields.base
	form           podForm
	fields         map[podField]paths.Path // podFields form: relative to locator
	instanceName   *expr.Program
	replicas       *expr.Program
	minReplicas    *expr.Program
	podsPerReplica *expr.Program
	podInstance    *expr.Program
	podReplica     *expr.Program
	resources      *expr.Program
	when           *expr.Program
}

type podForm int

const (
	formTemplate podForm = iota
	formSpec
	formFields
)

type statusRule struct {
	state  v1alpha1.State
	when   *expr.Program
	reason *expr.Program
	live   bool
}

type gangGroup struct {
	name      string
	members   []*role
	scope     v1alpha1.GangScope
	minMember *expr.Program
	when      *expr.Program
	computed  *expr.Program // a list of {name, minMember}
	podGroup  *expr.Program // pod → name of its computed entry
	timeout   *int32
	// leaderFirst says the controller creates the rest of a PodGroup once its first pods bind.
	leaderFirst *expr.Program
	// topologyRequired and topologyPreferred name topology levels (string), evaluated like
	// minMember for each PodGroup.
	topologyRequired  *expr.Program
	topologyPreferred *expr.Program
	// nested place each part of a PodGroup in a narrower domain, and each smaller part of it
	// in a still narrower one: outer first.
	nested []nestedLevel
}

// nestedLevel is one level of a gang group's nested topology: what a part is, and the
// expression naming the level each part's pods share one domain of.
type nestedLevel struct {
	scope    v1alpha1.GangScope
	required *expr.Program
}

// CompileOptions tune Compile.
type CompileOptions struct {
	// CRD, when set, is the target kind's schema: every path must exist in it and every
	// expression is type-checked against it.
	CRD *crdschema.CRD
	// Version is the version of CRD to check against; "" is the first of the definition's
	// versions the CRD serves. CheckAgainstCRD checks every one.
	Version string
}

// Compile validates a definition and compiles its paths and expressions. All problems are
// reported together, each naming its field path.
func Compile(def *v1alpha1.WorkloadDefinition, opts CompileOptions) (*Definition, error) {
	if errs := Validate(def); len(errs) > 0 {
		return nil, definitionError(def, errs)
	}
	c := &compiler{def: def, opts: opts}
	d := c.compile()
	c.finish()
	if len(c.errs) > 0 {
		return nil, definitionError(def, c.errs)
	}
	d.placesByMetadata = true
	for _, p := range d.podPrograms() {
		if p != nil && !p.ReadsOnlyMetadataMaps("pod") {
			d.placesByMetadata = false
		}
	}
	return d, nil
}

func definitionError(def *v1alpha1.WorkloadDefinition, errs field.ErrorList) error {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	return &DefinitionError{Name: def.Name, Errors: errs, msg: strings.Join(msgs, "\n  ")}
}

// DefinitionError lists everything wrong with one definition.
type DefinitionError struct {
	Name   string
	Errors field.ErrorList
	msg    string
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("definition %q is invalid:\n  %s", e.Name, e.msg)
}

type compiler struct {
	def  *v1alpha1.WorkloadDefinition
	opts CompileOptions
	// steps are the problems and expressions in the order the walk meets them (compilejobs.go);
	// failures counts the problems; errs lists every problem once finish has run.
	steps    []compileStep
	failures int
	errs     field.ErrorList
	// schema state, when a CRD is given
	root     *structuralschema.Structural
	rootType *apiservercel.DeclType
	selfEnv  *expr.Env // self, children, pods, pod, replica: no item
	itemEnv  *expr.Env // plus an untyped item and key
}

func (c *compiler) compile() *Definition {
	spec := &c.def.Spec
	d := &Definition{
		Source:    c.def,
		GroupKind: schema.GroupKind{Group: spec.Workload.Group, Kind: spec.Workload.Kind},
		versions:  map[string]bool{},
	}
	for _, v := range spec.Workload.Versions {
		d.versions[v] = true
	}
	specPath := field.NewPath("spec")
	c.setupSchema(specPath.Child("workload"))
	var err error
	if c.itemEnv, err = expr.NewEnv(expr.Types{Self: c.rootType}); err != nil {
		c.fail(field.InternalError(specPath, err))
		return d
	}
	if c.selfEnv, err = expr.NewEnv(expr.Types{Self: c.rootType, NoItem: true}); err != nil {
		c.fail(field.InternalError(specPath, err))
		return d
	}
	byName := map[string]*role{}
	for i := range spec.Roles {
		r := c.compileRole(i, &spec.Roles[i], specPath.Child("roles").Index(i))
		d.roles = append(d.roles, r)
		byName[r.name] = r
	}
	c.expr(&d.sharedClaims, c.selfEnv, specPath.Child("sharedClaims"), spec.SharedClaims, expr.List)
	c.afterCompile(func() field.ErrorList {
		if d.sharedClaims != nil && d.sharedClaims.Live {
			return field.ErrorList{field.Invalid(specPath.Child("sharedClaims"), spec.SharedClaims, "must not use children or pods: the workload's GPUs come from its spec")}
		}
		return nil
	})
	if len(spec.Children) > 0 {
		d.children = make([]Child, len(spec.Children))
	}
	for i, ch := range spec.Children {
		name := ch.Name
		if name == "" {
			name = lowerCamelPlural(ch.Kind)
		}
		gvk := schema.GroupVersionKind{Group: ch.Group, Version: ch.Version, Kind: ch.Kind}
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		if ch.Resource != "" {
			gvr.Resource = ch.Resource
		}
		d.children[i] = Child{GroupVersionKind: gvk, Resource: gvr, Name: name}
		c.expr(&d.children[i].selector, c.selfEnv, specPath.Child("children").Index(i).Child("selector"), ch.Selector, expr.StringMap)
	}
	if spec.Pods != nil {
		c.expr(&d.selector, c.selfEnv, specPath.Child("pods", "selector"), spec.Pods.Selector, expr.StringMap)
	}
	for i, r := range spec.Status {
		p := specPath.Child("status").Index(i)
		rule := &statusRule{state: r.State}
		c.expr(&rule.when, c.selfEnv, p.Child("when"), r.When, expr.Bool)
		c.expr(&rule.reason, c.selfEnv, p.Child("reason"), r.Reason, expr.String)
		c.afterCompile(func() field.ErrorList {
			rule.live = (rule.when != nil && rule.when.Live) || (rule.reason != nil && rule.reason.Live)
			return nil
		})
		d.status = append(d.status, rule)
	}
	if spec.Gang != nil {
		for i, g := range spec.Gang.Groups {
			p := specPath.Child("gang", "groups").Index(i)
			gg := &gangGroup{name: g.Name, scope: g.Scope, timeout: g.TimeoutSeconds}
			if gg.scope == "" {
				gg.scope = v1alpha1.ScopeWorkload
			}
			for _, m := range g.Members {
				gg.members = append(gg.members, byName[m])
			}
			env := c.selfEnv
			if (gg.scope == v1alpha1.ScopeInstance || gg.scope == v1alpha1.ScopeInstanceReplica) && len(gg.members) == 1 {
				env = c.roleEnv(gg.members[0], p)
			}
			c.expr(&gg.computed, c.selfEnv, p.Child("computed"), g.Computed, expr.List)
			c.expr(&gg.podGroup, c.selfEnv, p.Child("podGroup"), g.PodGroup, expr.String)
			c.expr(&gg.minMember, env, p.Child("minMember"), g.MinMember, expr.Int)
			c.expr(&gg.when, c.selfEnv, p.Child("when"), g.When, expr.Bool)
			c.expr(&gg.leaderFirst, c.selfEnv, p.Child("leaderFirst"), g.LeaderFirst, expr.Bool)
			if g.Topology != nil {
				c.expr(&gg.topologyRequired, env, p.Child("topology", "required"), g.Topology.Required, expr.String)
				c.expr(&gg.topologyPreferred, env, p.Child("topology", "preferred"), g.Topology.Preferred, expr.String)
				if n := g.Topology.Nested; n != nil {
					np := p.Child("topology", "nested")
					type level struct {
						scope    v1alpha1.GangScope
						required string
						at       *field.Path
					}
					levels := []level{{n.Scope, n.Required, np.Child("required")}}
					if inner := n.Nested; inner != nil {
						levels = append(levels, level{inner.Scope, inner.Required, np.Child("nested", "required")})
					}
					gg.nested = make([]nestedLevel, len(levels)) // sized first: each program is compiled into its level
					for i, l := range levels {
						gg.nested[i].scope = l.scope
						c.expr(&gg.nested[i].required, c.selfEnv, l.at, l.required, expr.String)
					}
				}
			}
			c.afterCompile(func() field.ErrorList {
				progs := []*expr.Program{gg.minMember, gg.when, gg.computed, gg.topologyRequired, gg.topologyPreferred, gg.leaderFirst}
				for _, n := range gg.nested {
					progs = append(progs, n.required)
				}
				return liveProblems(progs, "must not use children or pods: gangs are decided before pods exist")
			})
			d.groups = append(d.groups, gg)
		}
	}
	return d
}

// setupSchema finds the root version schema in the CRD, when one is given.
func (c *compiler) setupSchema(p *field.Path) {
	crd := c.opts.CRD
	if crd == nil {
		return
	}
	w := c.def.Spec.Workload
	if crd.Group != w.Group || crd.Kind != w.Kind {
		c.fail(field.Invalid(p, w.Group+"/"+w.Kind, fmt.Sprintf("the CRD given describes %s/%s", crd.Group, crd.Kind)))
		return
	}
	if v := c.opts.Version; v != "" {
		if !slices.Contains(w.Versions, v) {
			c.fail(field.Invalid(p.Child("versions"), w.Versions, fmt.Sprintf("version %s to check against is not among them", v)))
			return
		}
		s, ok := crd.Root(v)
		if !ok {
			c.fail(field.Invalid(p.Child("versions"), w.Versions, fmt.Sprintf("the CRD does not serve version %s", v)))
			return
		}
		c.root, c.rootType = s, crdschema.DeclType(s)
		return
	}
	for _, v := range w.Versions {
		if s, ok := crd.Root(v); ok {
			c.root, c.rootType = s, crdschema.DeclType(s)
			return
		}
	}
	c.fail(field.Invalid(p.Child("versions"), w.Versions, "none of these versions is served by the CRD"))
}

func (c *compiler) compileRole(i int, src *v1alpha1.Role, p *field.Path) *role {
	r := &role{name: src.Name, index: i, source: src}
	failuresBefore := c.failures
	switch {
	case src.PodTemplate != "":
		r.form, r.locator = formTemplate, c.path(p.Child("podTemplate"), src.PodTemplate)
	case src.PodSpec != "":
		r.form, r.locator = formSpec, c.path(p.Child("podSpec"), src.PodSpec)
	default:
		r.form, r.locator = formFields, c.path(p.Child("podFields", "base"), src.PodFields.Base)
		r.fields = map[podField]paths.Path{}
		for _, f := range podFieldList {
			rel := f.get(src.PodFields)
			if rel == "" {
				continue
			}
			fp := p.Child("podFields", string(f.name))
			rp, err := paths.Parse(rel)
			if err != nil {
				c.fail(field.Invalid(fp, rel, err.Error()))
				continue
			}
			c.checkPath(fp, rel, r.locator.Join(rp))
			r.fields[f.name] = rp
		}
	}
	env := c.roleEnv(r, p)
	if c.failures > failuresBefore && c.itemEnv != nil {
		env = c.itemEnv // the path did not parse: check the expressions with an untyped item
	}
	c.expr(&r.when, c.selfEnv, p.Child("when"), src.When, expr.Bool)
	c.expr(&r.instanceName, env, p.Child("instanceName"), src.InstanceName, expr.String)
	c.expr(&r.replicas, env, p.Child("replicas"), src.Replicas, expr.Int)
	c.expr(&r.minReplicas, env, p.Child("minReplicas"), src.MinReplicas, expr.Int)
	c.expr(&r.podsPerReplica, env, p.Child("podsPerReplica"), src.PodsPerReplica, expr.Int)
	c.expr(&r.resources, env, p.Child("resources"), src.Resources, expr.StringMap)
	c.expr(&r.podInstance, c.selfEnv, p.Child("podInstance"), src.PodInstance, expr.String)
	c.expr(&r.podReplica, c.selfEnv, p.Child("podReplica"), src.PodReplica, expr.IntOrString)
	c.afterCompile(func() field.ErrorList {
		return liveProblems([]*expr.Program{r.instanceName, r.replicas, r.minReplicas, r.podsPerReplica, r.resources, r.when},
			"must not use children or pods: the workload's shape comes from its spec")
	})
	return r
}

// roleEnv returns the environment for a role's item expressions; `item` is typed from the
// schema at the role's last [*] when a CRD is known.
func (c *compiler) roleEnv(r *role, p *field.Path) *expr.Env {
	if r.locator.Wildcards() == 0 {
		return c.selfEnv
	}
	var itemType *apiservercel.DeclType
	if c.rootType == nil {
		return c.itemEnv
	}
	{
		prefix, _ := r.locator.SplitAtLastWildcard()
		// Path errors are reported by checkPath; an item the schema leaves open stays dyn.
		if itemSchema, err := crdschema.Lookup(c.root, prefix); err == nil && itemSchema != nil {
			itemType = crdschema.DeclType(itemSchema)
		}
	}
	if itemType == nil {
		return c.itemEnv
	}
	env, err := expr.NewEnv(expr.Types{Self: c.rootType, Item: itemType})
	if err != nil {
		c.fail(field.InternalError(p, err))
		return c.selfEnv
	}
	return env
}

func (c *compiler) path(p *field.Path, src string) paths.Path {
	parsed, err := paths.Parse(src)
	if err != nil {
		c.fail(field.Invalid(p, src, err.Error()))
		return paths.Path{}
	}
	c.checkPath(p, src, parsed)
	return parsed
}

func (c *compiler) checkPath(p *field.Path, src string, parsed paths.Path) {
	if c.root == nil {
		return
	}
	if _, err := crdschema.Lookup(c.root, parsed); err != nil {
		c.fail(field.Invalid(p, src, "not in the CRD schema: "+err.Error()))
	}
}

// liveProblems are the programs of progs (nil: none) that read children or pods, where why
// says they must not.
func liveProblems(progs []*expr.Program, why string) field.ErrorList {
	var errs field.ErrorList
	for _, prog := range progs {
		if prog != nil && prog.Live {
			errs = append(errs, field.Invalid(field.NewPath(prog.Field), prog.Source, why))
		}
	}
	return errs
}

// lowerCamelPlural turns a kind into the key of its objects in `children`: Job → jobs,
// PodClique → podCliques, Service → services, Policy → policies.
func lowerCamelPlural(kind string) string {
	if kind == "" {
		return ""
	}
	r := []rune(kind)
	r[0] = unicode.ToLower(r[0])
	s := string(r)
	switch {
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}

// CompileLastValid compiles the last valid generation def's status records (status.lastValid),
// for use while def's own spec does not compile. It returns nil when there is none, when it
// is not older than def, or when it does not compile either (the catalog or options changed).
func CompileLastValid(def *v1alpha1.WorkloadDefinition, opts CompileOptions) *Definition {
	if def.Status == nil || def.Status.LastValid == nil {
		return nil
	}
	lv := def.Status.LastValid
	if def.Generation != 0 && lv.Generation >= def.Generation {
		return nil
	}
	earlier := &v1alpha1.WorkloadDefinition{TypeMeta: def.TypeMeta, ObjectMeta: *def.ObjectMeta.DeepCopy(), Spec: *lv.Spec.DeepCopy()}
	earlier.Generation, earlier.Status = lv.Generation, nil
	d, err := Compile(earlier, opts)
	if err != nil {
		return nil
	}
	return d
}
