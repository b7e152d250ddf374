package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic/fake"
)

func TestGangs(t *testing.T) {
	g := Gangs{Namespace: "ns", Count: 2, PodsPerGang: 4, SchedulerName: "s", GPUsPerPod: 1}
	job := g.Job(1)
	assert.Equal(t, "gang-1", job.Name)
	assert.Empty(t, job.Spec.Template.Labels, "no PodGroup label without PodGroups")
	pod := PodOf(job)
	assert.Len(t, pod.OwnerReferences, 1)
	assert.Equal(t, "s", pod.Spec.SchedulerName)

	bare := g.BarePod(1)
	assert.Empty(t, bare.OwnerReferences)
	assert.Empty(t, bare.Annotations)
	assert.Equal(t, "pod-1-", bare.GenerateName)
	assert.Equal(t, job.Spec.Template.Spec, bare.Spec, "shaped like the gangs' pods")

	g.PodGroups = fake.NewSimpleDynamicClient(runtime.NewScheme())
	labelled := PodOf(g.Job(1))
	assert.Equal(t, map[string]string{"scheduling.x-k8s.io/pod-group": "gang-1"}, labelled.Labels)
	pg := g.PodGroup(1)
	assert.Equal(t, "scheduling.x-k8s.io/v1alpha1", pg.GetAPIVersion())
	assert.Equal(t, "PodGroup", pg.GetKind())
	assert.Equal(t, "gang-1", pg.GetName())
	assert.Equal(t, "ns", pg.GetNamespace())
	min, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	assert.Equal(t, int64(4), min)
	assert.Equal(t, corev1.RestartPolicyNever, labelled.Spec.RestartPolicy)
}
