package definitions

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests returns the effective requests of one pod built from spec, as the scheduler
// sees them: requests default to limits where only limits are set (the API server's defaulting,
// which is how extended resources such as GPUs are usually written), and init and sidecar
// containers count by Kubernetes' rule (max of the largest init step and the sum of app
// containers plus sidecars), plus pod overhead and pod-level resources.
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	pod := &corev1.Pod{Spec: *spec.DeepCopy()}
	defaultRequests(pod.Spec.InitContainers)
	defaultRequests(pod.Spec.Containers)
	if pod.Spec.Resources != nil {
		defaultRequestsOf(pod.Spec.Resources)
	}
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

func defaultRequests(cs []corev1.Container) {
	for i := range cs {
		defaultRequestsOf(&cs[i].Resources)
	}
}

func defaultRequestsOf(r *corev1.ResourceRequirements) {
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[name] = q.DeepCopy()
	}
}
