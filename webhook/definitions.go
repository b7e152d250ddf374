package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// DefinitionValidator serves AdmissionReviews of WorkloadDefinition CREATE and UPDATE. It
// compiles the definition as workmap-scheduler does and denies one that does not compile, each
// problem named by its field path, so that `kubectl apply` of a broken definition fails rather
// than being accepted and then ignored by the scheduler. An update that leaves the spec as it
// was is allowed whatever the spec holds, so that the labels, annotations and finalizers of a
// definition accepted while no webhook answered can still change.
type DefinitionValidator struct{}

func (v DefinitionValidator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveReview(w, r, func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return v.review(req)
	})
}

var workloadDefinitionKind = v1alpha1.SchemeGroupVersion.WithKind("WorkloadDefinition").GroupKind()

// review decides one admission request.
func (DefinitionValidator) review(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Kind.Group != workloadDefinitionKind.Group || req.Kind.Kind != workloadDefinitionKind.Kind || req.SubResource != "" ||
		(req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return resp
	}
	var def v1alpha1.WorkloadDefinition
	if err := json.Unmarshal(req.Object.Raw, &def); err != nil {
		return deny(resp, apierrors.NewBadRequest("workmap-webhook: could not read the WorkloadDefinition: "+err.Error()))
	}
	if def.Name == "" {
		def.Name = req.Name
	}
	if req.Operation == admissionv1.Update && sameSpec(req.OldObject.Raw, &def) {
		return resp
	}
	if _, err := definitions.Compile(&def, definitions.CompileOptions{}); err != nil {
		var de *definitions.DefinitionError
		if errors.As(err, &de) && len(de.Errors) > 0 {
			return deny(resp, apierrors.NewInvalid(workloadDefinitionKind, def.Name, de.Errors))
		}
		return deny(resp, apierrors.NewBadRequest(err.Error()))
	}
	return resp
}

// sameSpec reports whether the old object of an update had def's spec.
func sameSpec(oldRaw []byte, def *v1alpha1.WorkloadDefinition) bool {
	var old v1alpha1.WorkloadDefinition
	return len(oldRaw) > 0 && json.Unmarshal(oldRaw, &old) == nil && apiequality.Semantic.DeepEqual(old.Spec, def.Spec)
}

// deny turns resp into a refusal with err's status (its code, reason and causes).
func deny(resp *admissionv1.AdmissionResponse, err *apierrors.StatusError) *admissionv1.AdmissionResponse {
	status := err.Status()
	resp.Allowed, resp.Result = false, &status
	return resp
}
