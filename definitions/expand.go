package definitions

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/expr"
	"github.com/workmap/workmap/definitions/paths"
)

// Expand builds the workload model of obj offline: from the object alone. Rules that need
// live data are skipped and the status says so.
func (d *Definition) Expand(obj *unstructured.Unstructured) (*Workload, error) {
	return d.expand(obj, nil, ExpandOptions{})
}

// ExpandLive builds the workload model of obj with its child objects and pods: it also
// assigns every pod to its role and replica and evaluates every status rule.
func (d *Definition) ExpandLive(obj *unstructured.Unstructured, live *LiveData) (*Workload, error) {
	if live == nil {
		live = &LiveData{}
	}
	return d.expand(obj, live, ExpandOptions{})
}

// ExpandWith is Expand (live nil) or ExpandLive with options: what counts as a GPU, and where
// the claim templates pods name are found.
func (d *Definition) ExpandWith(obj *unstructured.Unstructured, live *LiveData, opts ExpandOptions) (*Workload, error) {
	return d.expand(obj, live, opts)
}

func (d *Definition) expand(obj *unstructured.Unstructured, live *LiveData, opts ExpandOptions) (*Workload, error) {
	if obj == nil || obj.Object == nil {
		return nil, fmt.Errorf("no object to expand")
	}
	gvk := obj.GroupVersionKind()
	if gvk.GroupKind() != d.GroupKind {
		return nil, fmt.Errorf("%s %q: definition %q describes %s", gvk.Kind, obj.GetName(), d.Source.Name, d.GroupKind)
	}
	w := &Workload{
		Workload:   ObjectRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), GenerateName: obj.GetGenerateName(), UID: string(obj.GetUID())},
		Definition: d.Source.Name,
		Totals:     Totals{Resources: corev1.ResourceList{}},
		Roles:      []Role{},
		Groups:     []Group{},
		def:        d,
		self:       obj.Object,
		roleIndex:  make([]map[string]int, len(d.roles)),
	}
	if !d.versions[gvk.Version] {
		w.Warnings = append(w.Warnings, fmt.Sprintf("version %s is not among the versions definition %q was tested with %v", gvk.Version, d.Source.Name, d.Source.Spec.Workload.Versions))
	}
	if err := checkCollections(obj.Object); err != nil {
		// Nothing is evaluated: no role, no gang, and the reason says why.
		w.Warnings = append(w.Warnings, err.Error())
		w.Errors = append(w.Errors, fieldErrorOf(err))
		w.Status = Status{State: v1alpha1.StateUnknown, Reason: "cannot read the workload: " + err.Error()}
		if live != nil {
			w.assignPods(live)
		}
		return w, nil
	}
	act := d.activation(obj.Object, live)
	var expandErrs []error
	podsLeft := int64(maxWorkloadPods)
	for i, r := range d.roles {
		roles, errs := r.expand(act, &podsLeft)
		expandErrs = append(expandErrs, errs...)
		w.roleIndex[i] = make(map[string]int, len(roles))
		for _, role := range roles {
			w.countGPUs(&role, opts)
			w.roleIndex[i][role.Name] = len(w.Roles)
			w.Roles = append(w.Roles, role)
			w.Totals.Pods += role.Pods
			addResources(w.Totals.Resources, role.PodResources, role.Pods)
		}
	}
	for _, err := range expandErrs {
		w.Warnings = append(w.Warnings, err.Error())
		w.Errors = append(w.Errors, fieldErrorOf(err))
	}
	w.countSharedClaims(act, opts)
	w.Status = d.evalStatus(act, live != nil)
	if len(expandErrs) > 0 {
		w.Status = Status{State: v1alpha1.StateUnknown, Reason: "cannot read the workload: " + expandErrs[0].Error()}
	}
	w.Groups, expandErrs = d.gangs(w, act)
	for _, err := range expandErrs {
		w.Warnings = append(w.Warnings, err.Error())
		w.Errors = append(w.Errors, fieldErrorOf(err))
	}
	if live != nil {
		w.assignPods(live)
	}
	return w, nil
}

// countGPUs sets a role's GPUs and adds them to the totals; claims whose GPUs cannot be
// counted are warnings. A ResourceClaim the pods share counts once in the role and once in
// the workload, however many pods (and roles) name it.
func (w *Workload) countGPUs(role *Role, opts ExpandOptions) {
	if role.Pods == 0 || role.Template == nil {
		return
	}
	perPod, shared, notes := opts.podGPUs(role.PodResources, role.Template, role.claimsInPlace)
	for _, note := range notes {
		w.Warnings = append(w.Warnings, fmt.Sprintf("role %s: %s", role.Name, note))
	}
	sources := map[string]float64{}
	addGPUs(sources, perPod, float64(role.Pods))
	inRole := map[string]bool{}
	for _, s := range shared {
		if inRole[s.key] {
			continue
		}
		inRole[s.key] = true
		addGPUs(sources, s.gpus, 1)
		if w.sharedCounted[s.key] {
			continue
		}
		if w.sharedCounted == nil {
			w.sharedCounted = map[string]bool{}
		}
		w.sharedCounted[s.key] = true
		w.addTotalGPUs(s.gpus, 1)
	}
	w.addTotalGPUs(perPod, float64(role.Pods))
	w.addRoleGPUs(role, sources)
}

// addRoleGPUs adds GPUs by source to a role's.
func (w *Workload) addRoleGPUs(role *Role, sources map[string]float64) {
	if len(sources) == 0 {
		return
	}
	if role.GPUSources == nil {
		role.GPUSources = map[string]float64{}
	}
	addGPUs(role.GPUSources, sources, 1)
	role.GPUs = sumGPUs(role.GPUSources)
}

// addTotalGPUs adds GPUs by source, times n, to the workload's totals.
func (w *Workload) addTotalGPUs(sources map[string]float64, n float64) {
	if len(sources) == 0 {
		return
	}
	if w.Totals.GPUSources == nil {
		w.Totals.GPUSources = map[string]float64{}
	}
	addGPUs(w.Totals.GPUSources, sources, n)
	w.Totals.GPUs = sumGPUs(w.Totals.GPUSources)
}

// activation binds self and, in live mode, children and pods.
func (d *Definition) activation(self map[string]any, live *LiveData) *expr.Activation {
	act := &expr.Activation{Self: self}
	if live != nil {
		act.Children = make(map[string][]any, len(d.children))
		for _, c := range d.children {
			act.Children[c.Name] = toAnyList(live.Children[c.Name])
		}
		act.Pods = toAnyList(live.Pods)
	}
	return act
}

func toAnyList(objs []map[string]any) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// expand finds the roles a definition role stands for (one per [*] match) and computes their
// replicas, pods and resources. A role that cannot be read, or whose pods would exceed the
// podsLeft of the workload, is returned with zero pods along with the error.
func (r *role) expand(self *expr.Activation, podsLeft *int64) ([]Role, []error) {
	if r.when != nil {
		ok, err := r.when.EvalBool(self)
		if err != nil {
			return nil, []error{fmt.Errorf("role %s: %w", r.name, err)}
		}
		if !ok {
			return nil, nil
		}
	}
	matches, err := r.locator.Get(self.Self)
	if err != nil {
		err := fmt.Errorf("role %s: %w", r.name, err)
		var te *paths.TypeError
		if errors.As(err, &te) {
			return nil, []error{&roleError{err: err, field: FieldError{Path: te.Location, Message: typeErrorMessage(te)}}}
		}
		return nil, []error{err}
	}
	var out []Role
	var errs []error
	for _, m := range matches {
		role := Role{Name: r.name, DefinitionRole: r.name, Location: m.Location, Instances: []Instance{}, def: r}
		act := *self
		if n := len(m.Bindings); n > 0 {
			b := m.Bindings[n-1]
			role.item, role.hasItem, role.key = b.Value, true, b.Key
			act.Item, act.HasItem, act.Key = b.Value, true, b.Key
			role.Name = defaultInstanceName(b.Value, b.Key)
		}
		err := r.fill(&role, &act, m.Value)
		if err == nil && role.Pods > *podsLeft {
			err = fmt.Errorf("its %d pods would take the workload past the %d pods one workload may have", role.Pods, maxWorkloadPods)
		}
		if err != nil {
			field := r.fieldError(err, &role, m)
			errs = append(errs, &roleError{
				err:   fmt.Errorf("role %s%s: %w", role.Name, locationNote(role.Location), err),
				field: field,
			})
			role.Pods, role.unread = 0, &field
		}
		*podsLeft -= role.Pods
		for i := int64(0); i < role.Replicas && role.Pods > 0; i++ {
			role.Instances = append(role.Instances, Instance{Name: role.Name + "-" + strconv.FormatInt(i, 10), Replica: i, Pods: role.PodsPerReplica})
		}
		out = append(out, role)
	}
	return out, errs
}

// joinLocation appends a rendered relative path to a rendered location.
func joinLocation(base, rel string) string {
	switch {
	case base == "":
		return rel
	case rel == "" || strings.HasPrefix(rel, "["):
		return base + rel
	}
	return base + "." + rel
}

// locationNote is " (location)" for messages about a role, or nothing when the role stands on
// the object itself (a podFields base of "."): "role x ()" would say nothing.
func locationNote(location string) string {
	if location == "" {
		return ""
	}
	return " (" + location + ")"
}

func defaultInstanceName(item any, key string) string {
	if m, ok := item.(map[string]any); ok {
		if n, ok := m["name"].(string); ok && n != "" {
			if _, err := strconv.Atoi(key); err == nil { // a list of named items
				return n
			}
		}
	}
	return key
}

func (r *role) fill(out *Role, act *expr.Activation, value any) error {
	var err error
	if r.instanceName != nil {
		// Evaluated aside: on error the default name still names the role in the message.
		name, err := r.instanceName.EvalString(act)
		if err != nil {
			return err
		}
		out.Name = name
	}
	if out.Replicas, err = evalIntOr(r.replicas, act, 1); err != nil {
		return err
	}
	if out.MinReplicas, err = evalIntOr(r.minReplicas, act, 0); err != nil {
		return err
	}
	if out.PodsPerReplica, err = evalIntOr(r.podsPerReplica, act, 1); err != nil {
		return err
	}
	if out.Replicas < 0 || out.PodsPerReplica < 0 || out.MinReplicas < 0 {
		return fmt.Errorf("replicas (%d), minReplicas (%d) and podsPerReplica (%d) must not be negative", out.Replicas, out.MinReplicas, out.PodsPerReplica)
	}
	// Checked before multiplying, so the product cannot overflow.
	if max(out.Replicas, out.MinReplicas, out.PodsPerReplica) > maxRolePods || out.Replicas*out.PodsPerReplica > maxRolePods {
		return fmt.Errorf("replicas (%d), minReplicas (%d) and podsPerReplica (%d) exceed the %d pods one role may have", out.Replicas, out.MinReplicas, out.PodsPerReplica, maxRolePods)
	}
	out.Pods = out.Replicas * out.PodsPerReplica
	out.countsRead = true
	var inPlace map[string]claimInPlace
	if out.Template, inPlace, err = r.template(value); err != nil {
		// A podFields path is relative to the role's location: "<root>: expected object"
		// would not say where.
		var te *paths.TypeError
		if errors.As(err, &te) {
			te.Location = joinLocation(out.Location, te.Location)
		}
		return err
	}
	for name, c := range inPlace {
		c.Location = joinLocation(out.Location, c.Location)
		inPlace[name] = c
	}
	out.claimsInPlace = inPlace
	if r.resources != nil {
		res, err := r.resources.EvalStringMap(act)
		if err != nil {
			return err
		}
		if err := r.applyResources(&out.Template.Spec, res); err != nil {
			return err
		}
	}
	if err := negativeResources(&out.Template.Spec); err != nil {
		return err
	}
	out.PodResources = PodRequests(&out.Template.Spec)
	return nil
}

// maxRolePods bounds the replicas, minReplicas, podsPerReplica and pods of one role: the model
// lists every replica, so an absurd count in an object must not exhaust memory.
const maxRolePods = 1_000_000

// applyResources sets the main container's requests and limits from a role's resources map.
func (r *role) applyResources(spec *corev1.PodSpec, res map[string]string) error {
	name := "main"
	if r.source.PodFields != nil && r.source.PodFields.ContainerName != "" {
		name = r.source.PodFields.ContainerName
	}
	idx := -1
	for i, c := range spec.Containers {
		if c.Name == name {
			idx = i
		}
	}
	if idx < 0 && len(spec.Containers) > 0 {
		idx = 0
	}
	if idx < 0 {
		spec.Containers = append(spec.Containers, corev1.Container{Name: name})
		idx = 0
	}
	c := &spec.Containers[idx]
	for k, v := range res {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("resources: %s=%q: %w", k, v, err)
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Requests[corev1.ResourceName(k)] = q
		c.Resources.Limits[corev1.ResourceName(k)] = q
	}
	return nil
}

func evalIntOr(p *expr.Program, act *expr.Activation, def int64) (int64, error) {
	if p == nil {
		return def, nil
	}
	return p.EvalInt(act)
}

// template decodes the pod template of one role from the value its locator found, with the
// claims its podFields describe in place.
func (r *role) template(value any) (*corev1.PodTemplateSpec, map[string]claimInPlace, error) {
	var raw map[string]any
	var inPlace map[string]claimInPlace
	switch r.form {
	case formTemplate:
		m, ok := value.(map[string]any)
		if !ok {
			return nil, nil, &templateFieldError{err: fmt.Errorf("pod template is not an object"), msg: "expected an object, got " + showValue(value)}
		}
		raw = m
	case formSpec:
		m, ok := value.(map[string]any)
		if !ok {
			return nil, nil, &templateFieldError{err: fmt.Errorf("pod spec is not an object"), msg: "expected an object, got " + showValue(value)}
		}
		raw = map[string]any{"spec": m}
	default:
		var err error
		if raw, inPlace, err = r.assembleTemplate(value); err != nil {
			return nil, nil, err
		}
	}
	t, err := decodeTemplate(raw)
	return t, inPlace, err
}

// decodeTemplate decodes an unstructured pod template. The converter's errors do not say
// where they happened ("unrecognized type: string"), so on failure the field is found by
// decoding parts of the template alone: the reason must name what to fix.
func decodeTemplate(raw map[string]any) (*corev1.PodTemplateSpec, error) {
	var t corev1.PodTemplateSpec
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &t)
	if err == nil {
		return &t, nil
	}
	if loc, value, cause := locateDecodeError(raw); len(loc) > 0 {
		return nil, &templateFieldError{loc: loc, value: value, err: fmt.Errorf("decoding pod template: %s: %w", paths.FromSteps(loc), cause), msg: decodeMessage(value, cause)}
	}
	return nil, fmt.Errorf("decoding pod template: %w", err)
}

// locateDecodeError returns the innermost field of a pod template that fails to decode on
// its own (the first in document order), with its error. Each step keeps only the path to
// one child and tries it; an object or list that fails even when empty (an object where a
// list belongs), or a value none of whose children fails alone, is the culprit.
func locateDecodeError(raw map[string]any) ([]paths.Step, any, error) {
	var loc []paths.Step
	var cur any = raw
	var cause error
	for {
		var empty any
		switch cur.(type) {
		case map[string]any:
			empty = map[string]any{}
		case []any:
			empty = []any{}
		}
		if empty != nil && len(loc) > 0 {
			if err := decodesAlone(loc, empty); err != nil {
				return loc, cur, err
			}
		}
		var found bool
		switch c := cur.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(c)) {
				step := paths.Step{Kind: paths.Field, Name: k}
				if err := decodesAlone(append(loc, step), c[k]); err != nil {
					loc, cur, cause, found = append(loc, step), c[k], err, true
					break
				}
			}
		case []any:
			for i, e := range c {
				step := paths.Step{Kind: paths.Index, Index: i}
				if err := decodesAlone(append(loc, step), e); err != nil {
					loc, cur, cause, found = append(loc, step), e, err, true
					break
				}
			}
		}
		if !found {
			return loc, cur, cause
		}
	}
}

// decodesAlone decodes a pod template that holds only value, at loc (list items at index 0:
// their position does not change how they decode).
func decodesAlone(loc []paths.Step, value any) error {
	for i := len(loc) - 1; i >= 0; i-- {
		if loc[i].Kind == paths.Index {
			value = []any{value}
		} else {
			value = map[string]any{loc[i].Name: value}
		}
	}
	m, ok := value.(map[string]any)
	if !ok {
		return nil // a template is an object: the first step is always a field
	}
	var t corev1.PodTemplateSpec
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t)
}
