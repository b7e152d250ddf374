package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Bind binds a member of a PodGroup workmap made with its pod-group label on the Binding:
// kube-apiserver 1.35 and later (PodTopologyLabelsAdmission, on by default) copy a Binding's
// labels onto the pod, so `kubectl get pods -l scheduling.x-k8s.io/pod-group=NAME` finds the
// gang without a write of its own per pod. The Binding's annotation marks the label as
// workmap's; where an API server does not copy labels, the grouper writes the label after the
// bind (see grouper.Writer). Every other pod is left to the next binder (Skip).
func (g *Gang) Bind(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	group, ok := g.members.GroupOf(pod.UID)
	if !ok || !group.Owned || pod.Labels[v1alpha1.PodGroupLabel] == group.Name {
		return fwk.NewStatus(fwk.Skip)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Labels:      map[string]string{v1alpha1.PodGroupLabel: group.Name},
			Annotations: map[string]string{grouper.GroupedAnnotation: "true"},
		},
		Target: corev1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if cacher := g.handle.APICacher(); cacher != nil {
		onFinish, err := cacher.BindPod(binding)
		if err != nil {
			return fwk.AsStatus(err)
		}
		if err := cacher.WaitOnFinish(ctx, onFinish); err != nil {
			return fwk.AsStatus(err)
		}
		return nil
	}
	if err := g.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}
