package karta

import (
	"fmt"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// Severity says whether a part of the input was left out or converted with a different
// meaning.
type Severity string

const (
	// NotConverted: the part is not in the output (or only partly); review it by hand.
	NotConverted Severity = "not converted"
	// SemanticChange: the part is converted, but workmap's meaning differs from Karta's.
	SemanticChange Severity = "warning"
)

// Issue is one thing a user must review: Field is the field path in the input, e.g.
// `spec.structureDefinition.childComponents[0].podSelector.componentTypeSelector`.
type Issue struct {
	Severity Severity `json:"severity"`
	Field    string   `json:"field"`
	Message  string   `json:"message"`
}

// String renders the issue as one line: `<severity>: <field>: <message>`.
func (i Issue) String() string {
	return fmt.Sprintf("%s: %s: %s", i.Severity, i.Field, i.Message)
}

// Result is the conversion of one Karta document.
type Result struct {
	// Source is where the document starts ("file:line").
	Source string
	// Name is the Karta's metadata.name.
	Name string
	// Definition is the converted definition; nil when nothing could be converted.
	Definition *v1alpha1.WorkloadDefinition
	// Issues lists, in input order, what was not converted or changed meaning.
	Issues []Issue
	// Err is set when the definition was built but does not compile (a converter bug or an
	// input the converter did not foresee); the errors name output fields.
	Err error
}

// issues collects the issues of one document.
type issues []Issue

func (is *issues) notConverted(field, format string, args ...any) {
	*is = append(*is, Issue{Severity: NotConverted, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (is *issues) changed(field, format string, args ...any) {
	*is = append(*is, Issue{Severity: SemanticChange, Field: field, Message: fmt.Sprintf(format, args...)})
}
