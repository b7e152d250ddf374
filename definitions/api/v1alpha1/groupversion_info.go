package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the group and version of this API.
var SchemeGroupVersion = schema.GroupVersion{Group: "workmap.dev", Version: "v1alpha1"}

// AddToScheme registers the types of this API with a scheme.
func AddToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &WorkloadDefinition{}, &WorkloadDefinitionList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
