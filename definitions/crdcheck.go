package definitions

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/crdschema"
)

// CRDCheck is what checking a definition against a CRD found.
type CRDCheck struct {
	// Checked are the definition's versions the CRD serves, each compiled against its schema.
	Checked []string
	// NotServed are the definition's versions the CRD does not serve (not an error: a
	// definition may know versions a cluster no longer or not yet has).
	NotServed []string
	// Warnings are fields the definition reads that the CRD does not have, read so that their
	// absence is handled (see absentField): most often fields newer than the CRD installed.
	// The definition works against it, without what those fields add.
	Warnings []string
}

// CheckAgainstCRD compiles def against the schema of every version it lists that crd serves:
// an upstream field renamed in one version fails even when another version still has it.
// The problems of all versions are returned together, each naming its version. A CRD that
// serves none of the versions is an error.
func CheckAgainstCRD(def *v1alpha1.WorkloadDefinition, crd *crdschema.CRD) (CRDCheck, error) {
	var res CRDCheck
	if errs := Validate(def); len(errs) > 0 {
		return res, definitionError(def, errs)
	}
	// The same problem in several versions is reported once, naming them all.
	var errs field.ErrorList
	versionsOf := map[string][]string{}
	for _, v := range def.Spec.Workload.Versions {
		if _, ok := crd.Versions[v]; !ok {
			res.NotServed = append(res.NotServed, v)
			continue
		}
		res.Checked = append(res.Checked, v)
		_, err := Compile(def, CompileOptions{CRD: crd, Version: v})
		var de *DefinitionError
		switch {
		case errors.As(err, &de):
			for _, e := range de.Errors {
				key := e.Error()
				if _, seen := versionsOf[key]; !seen {
					errs = append(errs, e)
				}
				versionsOf[key] = append(versionsOf[key], v)
			}
		case err != nil:
			return res, err
		}
	}
	if len(res.Checked) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "workload", "versions"), def.Spec.Workload.Versions,
			fmt.Sprintf("none of these versions is served by the CRD of %s/%s", crd.Group, crd.Kind)))
	}
	real := errs[:0]
	for _, e := range errs {
		vs := versionsOf[e.Error()]
		if w, ok := absentField(e); ok {
			if w = fmt.Sprintf("%s (in version %s)", w, strings.Join(vs, ", ")); !slices.Contains(res.Warnings, w) {
				res.Warnings = append(res.Warnings, w)
			}
			continue
		}
		e.Detail = fmt.Sprintf("%s (in version %s)", e.Detail, strings.Join(vs, ", "))
		real = append(real, e)
	}
	errs = real
	if len(errs) > 0 {
		return res, definitionError(def, errs)
	}
	return res, nil
}

// undefinedField is how CEL names a field its type-check finds in no schema.
var undefinedField = regexp.MustCompile(`^undefined field '([^']+)'`)

// absentField says whether a problem found against a CRD is a field the CRD does not have, read
// so that its absence is handled, and words it: a path (a role's pods are found where its path
// leads; where nothing is, the role has none), or a field every expression selects optionally
// (.?name, which falls back to its default). A field selected directly (self.spec.name) stays an
// error: the expression would fail on every object.
func absentField(e *field.Error) (string, bool) {
	if missing, ok := strings.CutPrefix(e.Detail, "not in the CRD schema: "); ok {
		path, _, _ := strings.Cut(missing, ": ")
		return fmt.Sprintf("%s: the CRD has no field %s (newer than this CRD, or misspelled): the role finds no pods there", e.Field, path), true
	}
	m := undefinedField.FindStringSubmatch(e.Detail)
	src, isExpr := e.BadValue.(string)
	if m == nil || !isExpr {
		return "", false
	}
	name := regexp.QuoteMeta(m[1])
	optional := regexp.MustCompile(`\.\?\s*` + name + `\b`)
	direct := regexp.MustCompile(`\.\s*` + name + `\b`)
	if !optional.MatchString(src) || direct.MatchString(src) {
		return "", false
	}
	return fmt.Sprintf("%s: the CRD has no field %s (newer than this CRD, or misspelled): the expression reads it with .?%s and falls back to its default", e.Field, m[1], m[1]), true
}
