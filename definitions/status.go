package definitions

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/expr"
)

// evalStatus applies the status rules in order; the first that matches wins. Offline, rules
// that need children or pods are skipped and listed. An expression that fails makes the state
// Unknown with the error as reason.
func (d *Definition) evalStatus(act *expr.Activation, live bool) Status {
	var skipped []v1alpha1.State
	for _, r := range d.status {
		if r.live && !live {
			if !slices.Contains(skipped, r.state) { // a state may have several rules
				skipped = append(skipped, r.state)
			}
			continue
		}
		ok, err := r.when.EvalBool(act)
		if err != nil {
			return Status{State: v1alpha1.StateUnknown, Reason: err.Error(), Skipped: skipped}
		}
		if !ok {
			continue
		}
		reason := "matched " + r.when.Source
		if r.reason != nil {
			if reason, err = r.reason.EvalString(act); err != nil {
				reason = "reason unavailable: " + err.Error()
			}
		}
		return Status{State: r.state, Reason: truncateReason(reason) + skippedNote(skipped), Skipped: skipped}
	}
	return Status{State: v1alpha1.StateUnknown, Reason: "no rule matched" + skippedNote(skipped), Skipped: skipped}
}

// maxReason bounds the reason a status rule computes: a reason built from the object (the
// messages of all its conditions, say) must not grow with it, since it is shown in one line
// and may become an event message.
const maxReason = 1024

// truncateReason cuts a reason to maxReason bytes, at a character boundary.
func truncateReason(s string) string {
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func skippedNote(skipped []v1alpha1.State) string {
	if len(skipped) == 0 {
		return ""
	}
	s := make([]string, len(skipped))
	for i, st := range skipped {
		s[i] = string(st)
	}
	return fmt.Sprintf(" (offline: not checked for %s, which needs live data)", strings.Join(s, ", "))
}

// MatchingStates evaluates every status rule on obj (live when live is given, else skipping
// rules that need live data) and returns the states of the rules that match, in rule order,
// leaving out catch-all rules (`when: "true"`). More than one distinct state means the rules
// rely on their order for this object: the catalog keeps its rules mutually exclusive.
func (d *Definition) MatchingStates(obj map[string]any, live *LiveData) ([]v1alpha1.State, error) {
	act := d.activation(obj, live)
	var out []v1alpha1.State
	for _, r := range d.status {
		if (r.live && live == nil) || strings.TrimSpace(r.when.Source) == "true" {
			continue
		}
		ok, err := r.when.EvalBool(act)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r.state)
		}
	}
	return out, nil
}
