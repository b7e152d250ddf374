package definitions

import (
	"errors"
	"fmt"
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
	for _, e := range errs {
		vs := versionsOf[e.Error()]
		e.Detail = fmt.Sprintf("%s (in version %s)", e.Detail, strings.Join(vs, ", "))
	}
	if len(errs) > 0 {
		return res, definitionError(def, errs)
	}
	return res, nil
}
