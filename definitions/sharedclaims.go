package definitions

import (
	"fmt"
	"slices"
	"strings"

	"github.com/workmap/workmap/definitions/expr"
)

// sharedClaimSet is one entry of a definition's sharedClaims: alike ResourceClaims the
// operator creates and gives to the pods of some roles.
type sharedClaimSet struct {
	name  string
	roles []string
	// claims is how many ResourceClaims of the set the operator creates.
	claims int64
	// spec is the claims' spec when the workload describes it in place; else template (and
	// namespace) names the ResourceClaimTemplate they are made from.
	spec                []any // spec.devices.requests
	inPlace             bool
	template, namespace string
	uncounted           string
}

// countSharedClaims adds the GPUs of the claims the definition's sharedClaims lists: each
// ResourceClaim once in the totals, and in every role whose pods use it. What cannot be
// counted is a warning.
func (w *Workload) countSharedClaims(act *expr.Activation, opts ExpandOptions) {
	if w.def.sharedClaims == nil {
		return
	}
	list, err := w.def.sharedClaims.EvalList(act)
	if err != nil {
		w.Warnings = append(w.Warnings, fmt.Sprintf("sharedClaims: %v: the GPUs of claims its pods share are not counted", err))
		return
	}
	var otherDevices []string
	for i, e := range list {
		set, err := parseSharedClaimSet(e)
		if err != nil {
			w.Warnings = append(w.Warnings, fmt.Sprintf("sharedClaims[%d]: %v", i, err))
			continue
		}
		if set.uncounted != "" {
			w.Warnings = append(w.Warnings, fmt.Sprintf("%s: %s: its GPUs are not counted", set.name, set.uncounted))
			continue
		}
		var roles []int
		withPods := false
		for j := range w.Roles {
			if slices.Contains(set.roles, w.Roles[j].Name) {
				roles = append(roles, j)
				withPods = withPods || w.Roles[j].Pods > 0
			}
		}
		if len(roles) == 0 {
			w.Warnings = append(w.Warnings, fmt.Sprintf("%s: no role of the workload uses these claims (roles: %s): their GPUs are not counted", set.name, orNone(set.roles)))
			continue
		}
		if !withPods || set.claims == 0 {
			continue // no pod uses them: they hold no devices
		}
		var c claimCount
		if set.inPlace {
			c = opts.countRequests(set.name, set.spec)
		} else {
			c = opts.claimGPUs("ResourceClaimTemplate", set.namespace, set.template)
			c.what = set.name + " (" + c.what + ")"
			if c.note != "" {
				c.note = set.name + ": " + c.note
			}
		}
		if c.note != "" {
			w.Warnings = append(w.Warnings, c.note)
		}
		if len(c.gpus) == 0 {
			if len(c.otherClasses) > 0 {
				otherDevices = append(otherDevices, c.otherDevicesNote(opts.GPUs.deviceClasses()))
			}
			continue
		}
		gpus := map[string]float64{}
		for class, n := range c.gpus {
			gpus[gpuSourceDRA+class] = n
		}
		for _, j := range roles {
			if w.Roles[j].Pods > 0 {
				w.addRoleGPUs(&w.Roles[j], scaled(gpus, float64(set.claims)))
			}
		}
		w.addTotalGPUs(gpus, float64(set.claims))
	}
	if w.Totals.GPUs == 0 {
		w.Warnings = append(w.Warnings, otherDevices...)
	}
}

// scaled is a breakdown times n.
func scaled(sources map[string]float64, n float64) map[string]float64 {
	out := make(map[string]float64, len(sources))
	addGPUs(out, sources, n)
	return out
}

// parseSharedClaimSet reads one entry of sharedClaims.
func parseSharedClaimSet(e any) (sharedClaimSet, error) {
	const want = "want {name: string or path list, roles: [string], claims: int, spec: {devices: {requests: [...]}} or resourceClaimTemplateName: string[, namespace: string][, uncounted: string]}"
	m, ok := e.(map[string]any)
	if !ok {
		return sharedClaimSet{}, fmt.Errorf("%s, got %v", want, e)
	}
	bad := func(field string) (sharedClaimSet, error) {
		return sharedClaimSet{}, fmt.Errorf("%s: %s, got %v", field, want, e)
	}
	var set sharedClaimSet
	if set.name = locationName(m["name"]); set.name == "" {
		return bad("name")
	}
	if u, has := m["uncounted"]; has {
		if set.uncounted, ok = u.(string); !ok {
			return bad("uncounted")
		}
	}
	roles, ok := m["roles"].([]any)
	if !ok {
		return bad("roles")
	}
	for _, r := range roles {
		s, ok := r.(string)
		if !ok {
			return bad("roles")
		}
		set.roles = append(set.roles, s)
	}
	set.claims = 1
	if n, has := m["claims"]; has {
		f, ok := n.(float64)
		if !ok || f != float64(int64(f)) || f < 0 || f > maxRolePods {
			return bad("claims")
		}
		set.claims = int64(f)
	}
	if set.uncounted != "" {
		return set, nil
	}
	if spec, has := m["spec"]; has {
		sm, ok := spec.(map[string]any)
		if !ok {
			return bad("spec")
		}
		set.inPlace = true
		devices, _ := sm["devices"].(map[string]any)
		if set.spec, ok = devices["requests"].([]any); !ok && devices["requests"] != nil {
			return bad("spec.devices.requests")
		}
		return set, nil
	}
	if set.template, ok = m["resourceClaimTemplateName"].(string); !ok || set.template == "" {
		return bad("resourceClaimTemplateName")
	}
	if ns, has := m["namespace"]; has {
		if set.namespace, ok = ns.(string); !ok {
			return bad("namespace")
		}
	}
	return set, nil
}

// locationName renders the name of a set of claims: a string, or a path given as a list of
// field names (strings) and list indices (ints), e.g. [spec.template.cliques, 0, claims, 1]
// for spec.template.cliques[0].claims[1] (an expression can build that list cheaply, where
// building strings in nested loops is estimated over the cost limit). "" when it is neither.
func locationName(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, part := range v {
			switch p := part.(type) {
			case string:
				if p == "" {
					return ""
				}
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(p)
			case float64:
				if p != float64(int64(p)) || p < 0 || b.Len() == 0 {
					return ""
				}
				fmt.Fprintf(&b, "[%d]", int64(p))
			default:
				return ""
			}
		}
		return b.String()
	}
	return ""
}

// orNone joins names, or says there are none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
