package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the group and version of this API.
var SchemeGroupVersion = schema.GroupVersion{Group: "scheduling.x-k8s.io", Version: "v1alpha1"}

// Resource is the PodGroup resource.
var Resource = SchemeGroupVersion.WithResource("podgroups")

// AddToScheme registers the types of this API with a scheme.
func AddToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &PodGroup{}, &PodGroupList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
