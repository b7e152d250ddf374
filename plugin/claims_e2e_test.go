package plugin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/plugin"
)

// TestClaimThatCannotBeMadeSaysWhy: a gang whose pods ask for a device claim from a
// ResourceClaimTemplate that does not exist is held by Kubernetes' DynamicResources plugin
// without a word; each pod says, in an event and its PodScheduled condition, that its gang can
// never fit as it is and which template is missing. Once the template exists (naming a
// DeviceClass that does not), the claims are made and the pods say that instead.
func TestClaimThatCannotBeMadeSaysWhy(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}}})
	c.StartWorkmapScheduler(testSchedulerOptions)
	g := newGangs(t, c)
	ctx := context.Background()

	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "claims", Namespace: "default"}, Spec: v1alpha1.PodGroupSpec{MinMember: 2}}
	require.NoError(t, g.Client().Create(ctx, pg))
	for _, name := range []string{"claims-0", "claims-1"} {
		pod := gpuPod(name, 0)
		pod.Labels = map[string]string{v1alpha1.PodGroupLabel: "claims", "gang": "claims"}
		pod.Spec.SchedulerName = harness.SchedulerName
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("missing-gpu")}}
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	waitFailed(t, g, "gang=claims", "PodGroup default/claims can never fit this cluster as it is: pod claims-")
	for _, p := range g.Pods("gang=claims") {
		assert.Contains(t, podScheduled(p).Message, "its claim gpu is to be made from ResourceClaimTemplate default/missing-gpu, which does not exist")
	}
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		events, err := c.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		got := map[string]string{}
		for _, e := range events.Items {
			if e.Reason == plugin.ReasonMissingClaimSource {
				got[e.InvolvedObject.Name] = e.Message
			}
		}
		assert.Len(t, got, 2, "an event on each pod")
		for pod, msg := range got {
			assert.Contains(t, msg, "pod "+pod+" can never be scheduled as it is: its claim gpu is to be made from ResourceClaimTemplate default/missing-gpu")
		}
	}, 30*time.Second, 200*time.Millisecond)

	// The template appears, naming a DeviceClass that does not exist: the claims are made, and
	// the pods reach the scheduler's filters, which say what is wrong now.
	_, err := c.Kube.ResourceV1().ResourceClaimTemplates("default").Create(ctx, &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "missing-gpu", Namespace: "default"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}},
		}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var last string
	require.Eventually(t, func() bool {
		for _, p := range g.Pods("gang=claims") {
			if last = podScheduled(p).Message; strings.Contains(last, "ResourceClaimTemplate") || !strings.Contains(last, "gpu.example.com") {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond, "the pods say the DeviceClass is missing (last: %q)", last)
	assert.Contains(t, last, "can never fit a node of this cluster as it is", "a missing DeviceClass never fits either")
	assert.Zero(t, harness.Bound(g.Pods("gang=claims")))
}
