package definitions

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workmap/workmap/definitions/paths"
)

// SetPodTemplateField writes value at a path relative to a PodTemplateSpec — e.g.
// `metadata.labels["team"]`, `spec.schedulerName`, `spec.containers[*].resources` — in the pod
// template of every instance of every role, and returns how many locations were written.
// Roles with a bare podSpec take only `spec.…` paths; podFields roles take the fields they
// declare, and only when they run pods (their fields may name blocks the object does not have
// yet) from a template the object holds (not one the operator generates). The change is all-or-nothing: on error obj is left unchanged.
func (d *Definition) SetPodTemplateField(obj *unstructured.Unstructured, field string, value any) (int, error) {
	rel, err := paths.Parse(field)
	if err != nil {
		return 0, err
	}
	if rel.IsEmpty() {
		return 0, fmt.Errorf("field path is empty: name a field of the pod template")
	}
	work := runtime.DeepCopyJSON(obj.Object)
	running, err := d.rolesWithPods(obj)
	if err != nil {
		return 0, err
	}
	// Roles that share their pod template (a LeaderWorkerSet's leader without a template of
	// its own, built from the workers') write it once: templates are counted by path.
	total, counted := 0, map[string]bool{}
	for _, r := range d.roles {
		// Only write into instances that exist: a role whose path finds nothing is skipped.
		instances, err := r.locator.Get(work)
		if err != nil {
			return 0, fmt.Errorf("role %s: %w", r.name, err)
		}
		if len(instances) == 0 {
			continue
		}
		// A podFields role names fields of a block the object may not have yet (a Milvus
		// component left to its defaults); writing would create the block, and its mere
		// presence can change what the operator deploys. Such a role is written only when it
		// runs pods.
		if r.form == formFields && (!running[r.index] || r.generatesTemplate(work)) {
			continue
		}
		target, err := r.targetPath(rel)
		if err != nil {
			return 0, fmt.Errorf("role %s: %w", r.name, err)
		}
		n, err := target.Set(work, value)
		if err != nil {
			return 0, fmt.Errorf("role %s: %w", r.name, err)
		}
		if key := target.String(); !counted[key] {
			counted[key] = true
			total += n
		}
	}
	obj.Object = work
	return total, nil
}

// generatesTemplate says whether a podFields role that declares its containers lacks, in the
// object, the pod spec that would hold them: the operator then builds the pod itself
// (KubeRay's default submitter), and a write would create a partial pod template without
// containers, which its API rejects. A pod spec that is there without containers (a KServe
// predictor served by a runtime) takes the write.
func (r *role) generatesTemplate(obj map[string]any) bool {
	p, ok := r.fields["containers"]
	if !ok {
		return false
	}
	steps := r.locator.Join(p).Steps()
	found, err := paths.FromSteps(steps[:len(steps)-1]).Get(obj)
	return err == nil && len(found) == 0
}

// rolesWithPods tells, per definition role (by index), whether the workload as written runs
// pods of it.
func (d *Definition) rolesWithPods(obj *unstructured.Unstructured) (map[int]bool, error) {
	w, err := d.Expand(obj)
	if err != nil {
		return nil, err
	}
	out := map[int]bool{}
	for _, r := range w.Roles {
		if r.Pods > 0 {
			out[r.def.index] = true
		}
	}
	return out, nil
}

// targetPath maps a pod-template-relative path to a path in the workload object.
func (r *role) targetPath(rel paths.Path) (paths.Path, error) {
	switch r.form {
	case formTemplate:
		return r.locator.Join(rel), nil
	case formSpec:
		steps := rel.Steps()
		if steps[0].Kind != paths.Field || steps[0].Name != "spec" || len(steps) == 1 {
			return paths.Path{}, fmt.Errorf("%s: this role embeds a bare pod spec, only spec.<field> can be set", rel)
		}
		return r.locator.Join(paths.FromSteps(steps[1:])), nil
	}
	if rest, ok := rel.CutPrefix(mainContainerResources); ok {
		if p, ok := r.fields["resources"]; ok {
			return r.locator.Join(p).Join(rest), nil
		}
	}
	for _, f := range podFieldList {
		p, declared := r.fields[f.name]
		if !declared || f.template.IsEmpty() {
			continue
		}
		if rest, ok := rel.CutPrefix(f.template); ok {
			if f.name == "resourceClaims" {
				// The operator converts the list into the pod's claims (a claimCreationSpec
				// becomes a ResourceClaimTemplate): a pod's claims are not its items.
				return paths.Path{}, fmt.Errorf("%s: this role's claims are the operator's own list at %s, which it converts: change them there", rel, r.locator.Join(p))
			}
			return r.locator.Join(p).Join(rest), nil
		}
	}
	return paths.Path{}, fmt.Errorf("%s: no podFields entry of this role holds it", rel)
}
