package definitions

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/workmap/workmap/definitions/paths"
)

// maxWorkloadPods bounds the pods of one workload, all roles together: each role is bounded
// by maxRolePods, but a workload of many roles at that bound (ten replicatedJobs of a million
// replicas each) would still list millions of replicas and exhaust memory.
const maxWorkloadPods = maxRolePods

// MaxObjectCollection bounds the entries of any list or map in a workload's root object.
// Definitions are checked for cost assuming lists of at most expr.MaxCollection items (and
// 10,000 pods or children), and evaluation tracks its actual cost; but cel-go's cost tracking
// slows down quadratically with the iterations of one comprehension, so a status list of
// 100,000 entries (which fits in an object the API server accepts) would take minutes to
// evaluate. Far above what any workload holds, this bounds one expansion to a second or two
// (a catalog definition's status rules over 10,000 conditions, on one core).
const MaxObjectCollection = 10_000

// checkCollections reports the first list or map (in document order) of obj with more than
// MaxObjectCollection entries, naming its location.
func checkCollections(obj map[string]any) error {
	if !tooLarge(obj) {
		return nil
	}
	loc, n := firstTooLarge(obj, nil)
	where := paths.FromSteps(loc).String()
	if where == "" {
		where = "the object"
	}
	return fmt.Errorf("%s has %d entries, more than the %d a list or map of a workload may have", where, n, MaxObjectCollection)
}

// tooLarge is the fast check: no sorting, no locations.
func tooLarge(v any) bool {
	switch c := v.(type) {
	case map[string]any:
		if len(c) > MaxObjectCollection {
			return true
		}
		for _, e := range c {
			if tooLarge(e) {
				return true
			}
		}
	case []any:
		if len(c) > MaxObjectCollection {
			return true
		}
		for _, e := range c {
			if tooLarge(e) {
				return true
			}
		}
	}
	return false
}

// firstTooLarge finds the first oversized collection in document order (map keys sorted), so
// that the reason does not change between evaluations of the same object.
func firstTooLarge(v any, loc []paths.Step) ([]paths.Step, int) {
	switch c := v.(type) {
	case map[string]any:
		if len(c) > MaxObjectCollection {
			return loc, len(c)
		}
		for _, k := range slices.Sorted(maps.Keys(c)) {
			if l, n := firstTooLarge(c[k], append(loc, paths.Step{Kind: paths.Field, Name: k})); l != nil {
				return l, n
			}
		}
	case []any:
		if len(c) > MaxObjectCollection {
			return loc, len(c)
		}
		for i, e := range c {
			if l, n := firstTooLarge(e, append(loc, paths.Step{Kind: paths.Index, Index: i})); l != nil {
				return l, n
			}
		}
	}
	return nil, 0
}

// negativeResources reports a negative request or limit in a pod spec. Kubernetes rejects such
// pods, so the controller never creates them; summed into the totals they would hide GPUs the
// other roles use and make a gang's minResources negative.
func negativeResources(spec *corev1.PodSpec) error {
	for i := range spec.InitContainers {
		if err := negativeIn(spec.InitContainers[i].Resources, "initContainers", i); err != nil {
			return err
		}
	}
	for i := range spec.Containers {
		if err := negativeIn(spec.Containers[i].Resources, "containers", i); err != nil {
			return err
		}
	}
	if spec.Resources != nil {
		return negativeIn(*spec.Resources, "", 0)
	}
	return nil
}

// negativeIn checks one container's resources (the pod's when containers is ""). It allocates
// nothing unless it finds a negative quantity: it runs for every role of every expansion.
func negativeIn(r corev1.ResourceRequirements, containers string, index int) error {
	for _, l := range [...]struct {
		kind string
		list corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		if !hasNegative(l.list) {
			continue
		}
		// The first negative by name, so that the reason is the same every time.
		for _, name := range slices.Sorted(maps.Keys(l.list)) {
			if q := l.list[name]; q.Sign() < 0 {
				loc := []paths.Step{{Kind: paths.Field, Name: "spec"}}
				if containers != "" {
					loc = append(loc, paths.Step{Kind: paths.Field, Name: containers}, paths.Step{Kind: paths.Index, Index: index})
				}
				loc = append(loc, paths.Step{Kind: paths.Field, Name: "resources"}, paths.Step{Kind: paths.Field, Name: l.kind}, paths.Step{Kind: paths.Field, Name: string(name)})
				return &templateFieldError{loc: loc, value: q.String(),
					err: fmt.Errorf("pod template: %s is negative (%s)", paths.FromSteps(loc), q.String()),
					msg: fmt.Sprintf("must not be negative, got %s", q.String())}
			}
		}
	}
	return nil
}

func hasNegative(l corev1.ResourceList) bool {
	for _, q := range l {
		if q.Sign() < 0 {
			return true
		}
	}
	return false
}
