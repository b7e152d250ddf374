package karta

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// stateOrder is the precedence the converted rules get: the first match wins.
var stateOrder = []struct {
	key   string
	state v1alpha1.State
	get   func(*StatusMappings) []StatusMatcher
}{
	{"failed", v1alpha1.StateFailed, func(m *StatusMappings) []StatusMatcher { return m.Failed }},
	{"completed", v1alpha1.StateCompleted, func(m *StatusMappings) []StatusMatcher { return m.Completed }},
	{"degraded", v1alpha1.StateDegraded, func(m *StatusMappings) []StatusMatcher { return m.Degraded }},
	{"running", v1alpha1.StateRunning, func(m *StatusMappings) []StatusMatcher { return m.Running }},
	{"initializing", v1alpha1.StateInitializing, func(m *StatusMappings) []StatusMatcher { return m.Initializing }},
	{"suspended", v1alpha1.StateSuspended, func(m *StatusMappings) []StatusMatcher { return m.Suspended }},
}

// The CRD's length limits of a status rule's when and reason.
const maxWhen, maxReason = 2048, 1024

// statusConverter converts the root's statusDefinition into ordered rules.
type statusConverter struct {
	is                      *issues
	conditions, phase       string // CEL of the conditions list and the phase; "" when unavailable
	conditionsWhy, phaseWhy string // why they are unavailable
	typeF, statusF, reasonF string
	messageF                string
}

// convertStatus turns statusMappings into rules ordered Failed, Completed, Degraded, Running,
// Initializing, Suspended, then `Pending when true`.
func (cv *converter) convertStatus(sd *StatusDefinition, f *field.Path) []v1alpha1.StatusRule {
	if sd == nil {
		return nil
	}
	sc := &statusConverter{is: cv.is, phaseWhy: "no phaseDefinition", conditionsWhy: "no conditionsDefinition"}
	if cd := sd.ConditionsDefinition; cd != nil {
		sc.typeF, sc.statusF = or(cd.TypeFieldName, "type"), or(cd.StatusFieldName, "status")
		sc.reasonF, sc.messageF = or(deref(cd.ReasonFieldName), "reason"), or(deref(cd.MessageFieldName), "message")
		p := f.Child("conditionsDefinition", "path")
		cel, note, err := objectValue(cd.Path, valueScope{}, "[]", "[]")
		if err != nil {
			cv.is.notConverted(p.String(), "%v: matchers byConditions are not converted", err)
			sc.conditionsWhy = "conditionsDefinition.path is not converted"
		} else {
			sc.conditions = cel
			if note != "" {
				cv.is.changed(p.String(), "%s", note)
			}
		}
	}
	if pd := sd.PhaseDefinition; pd != nil {
		p := f.Child("phaseDefinition", "path")
		cel, note, err := objectValue(pd.Path, valueScope{}, "''", "''")
		if err != nil {
			cv.is.notConverted(p.String(), "%v: matchers byPhase are not converted", err)
			sc.phaseWhy = "phaseDefinition.path is not converted"
		} else {
			sc.phase = cel
			if note != "" {
				cv.is.changed(p.String(), "%s", note)
			}
		}
	}
	mf := f.Child("statusMappings")
	var rules []v1alpha1.StatusRule
	var order []string
	for _, st := range stateOrder {
		items := st.get(&sd.StatusMappings)
		if len(items) == 0 {
			continue
		}
		if rule, ok := sc.rule(st.state, items, mf.Child(st.key)); ok {
			rules = append(rules, rule)
			order = append(order, fmt.Sprintf("%s → %s", st.key, st.state))
		}
	}
	for _, u := range []struct {
		key   string
		items []StatusMatcher
	}{{"suspending", sd.StatusMappings.Suspending}, {"resuming", sd.StatusMappings.Resuming}} {
		if len(u.items) > 0 {
			cv.is.notConverted(mf.Child(u.key).String(), "workmap has no state %s (its states are Pending, Initializing, Running, Degraded, Suspended, Completed, Failed): not converted", u.key)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	rules = append(rules, v1alpha1.StatusRule{State: v1alpha1.StatePending, When: "true", Reason: "'no status mapping matched'"})
	order = append(order, "anything else → Pending")
	cv.is.changed(mf.String(), "status mappings are now ordered first-match rules: %s. Karta evaluates its lists without precedence (one object can match several states, an empty matcher matches every object) and reports Undefined when none matches", strings.Join(order, ", "))
	return rules
}

// rule converts the ORed matchers of one state; a matcher with any part that cannot be
// converted is left out whole (leaving out only that part would widen it).
func (sc *statusConverter) rule(state v1alpha1.State, items []StatusMatcher, f *field.Path) (v1alpha1.StatusRule, bool) {
	var ors, descs []string
	single := ""
	for i := range items {
		when, desc, reason, ok := sc.matcher(&items[i], f.Index(i))
		if !ok {
			continue
		}
		ors, descs, single = append(ors, when), append(descs, desc), reason
	}
	if len(ors) == 0 {
		return v1alpha1.StatusRule{}, false
	}
	rule := v1alpha1.StatusRule{State: state, When: ors[0], Reason: celString(strings.Join(descs, ", or "))}
	if len(ors) > 1 {
		for i, o := range ors {
			if strings.Contains(o, " && ") {
				ors[i] = "(" + o + ")"
			}
		}
		rule.When = strings.Join(ors, " || ")
	} else if single != "" && len(single) <= maxReason {
		rule.Reason = single
	}
	if len(rule.Reason) > maxReason {
		rule.Reason = ""
	}
	if len(rule.When) > maxWhen {
		sc.is.changed(f.String(), "the rule for %s is %d characters long, more than the %d the WorkloadDefinition CRD allows: shorten it before applying the definition to a cluster", state, len(rule.When), maxWhen)
	}
	return rule, true
}

// matcher converts one matcher (its parts ANDed). reason is set when the matcher is a single
// condition, whose message then explains the state.
func (sc *statusConverter) matcher(m *StatusMatcher, f *field.Path) (when, desc, reason string, ok bool) {
	if m.ByPhase == "" && len(m.ByConditions) == 0 && m.ByExpression == nil {
		sc.is.notConverted(f.String(), "empty matcher: Karta matches every object with it; skipped")
		return "", "", "", false
	}
	var parts, descs []string
	fail := func(field, format string, args ...any) (string, string, string, bool) {
		sc.is.notConverted(field, format+"; the matcher is skipped", args...)
		return "", "", "", false
	}
	if m.ByPhase != "" {
		if sc.phase == "" {
			return fail(f.Child("byPhase").String(), "%s", sc.phaseWhy)
		}
		parts = append(parts, sc.phase+" == "+celString(m.ByPhase))
		descs = append(descs, "phase is "+m.ByPhase)
	}
	for i, c := range m.ByConditions {
		if sc.conditions == "" {
			return fail(f.Child("byConditions").Index(i).String(), "%s", sc.conditionsWhy)
		}
		test, d := sc.condition(c)
		parts = append(parts, sc.conditions+".exists(c, "+test+")")
		descs = append(descs, d)
	}
	if e := m.ByExpression; e != nil {
		cel, note, err := objectValue(e.Expression, valueScope{}, "null", "null")
		if err != nil {
			return fail(f.Child("byExpression", "expression").String(), "%v", err)
		}
		if note != "" {
			sc.is.changed(f.Child("byExpression", "expression").String(), "%s", note)
		}
		parts = append(parts, cel+" == "+expectedLiteral(e.ExpectedResult))
		descs = append(descs, fmt.Sprintf("%s is %s", strings.TrimSpace(e.Expression), e.ExpectedResult))
	}
	desc = strings.Join(descs, " and ")
	if len(m.ByConditions) == 1 && len(parts) == 1 {
		test, _ := sc.condition(m.ByConditions[0])
		msg, _ := celChain("", fieldPath(sc.messageF), 0)
		reason = fmt.Sprintf("%s.filter(c, %s)[0]%s.orValue(%s)", sc.conditions, test, msg, celString(desc))
	}
	return strings.Join(parts, " && "), desc, reason, true
}

// condition renders one expected condition as a test on `c`.
func (sc *statusConverter) condition(c ExpectedCondition) (test, desc string) {
	field := func(name string) string {
		s, _ := celChain("c", fieldPath(name), 1)
		return s
	}
	tests := []string{field(sc.typeF) + " == " + celString(c.Type)}
	desc = "condition " + c.Type
	if c.Status != nil {
		tests = append(tests, field(sc.statusF)+" == "+celString(*c.Status))
		desc += " is " + *c.Status
	}
	if c.Reason != nil {
		r, _ := celChain("c", fieldPath(sc.reasonF), 0)
		tests = append(tests, r+".orValue('') == "+celString(*c.Reason))
		desc += " with reason " + *c.Reason
	}
	return strings.Join(tests, " && "), desc
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
