package grouper_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// exampleWorkload expands the example JobSet offline, as if its root had the given UID.
func exampleWorkload(t *testing.T, uid string) *definitions.Workload {
	t.Helper()
	docs, err := manifest.ReadFile("../examples/jobset-leader-workers.yaml")
	require.NoError(t, err)
	obj := docs[0].Object
	obj.SetUID(types.UID(uid))
	reg, err := catalog.Registry()
	require.NoError(t, err)
	def, ok := reg.Lookup(obj.GroupVersionKind().GroupKind())
	require.True(t, ok)
	w, err := def.Expand(obj)
	require.NoError(t, err)
	return w
}

func TestDesiredPodGroups(t *testing.T) {
	w := exampleWorkload(t, "uid-1")
	pgs := grouper.DesiredPodGroups(w, grouper.OwnerReference(w))
	require.Len(t, pgs, 1)
	pg := pgs[0]
	require.Equal(t, "leader-workers-all", pg.Name)
	require.Equal(t, "default", pg.Namespace)
	require.EqualValues(t, 3, pg.Spec.MinMember)
	require.Equal(t, int64(12), pg.Spec.MinResources.Name("nvidia.com/gpu", "").Value())
	require.EqualValues(t, 60, *pg.Spec.ScheduleTimeoutSeconds)
	require.Equal(t, []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "leader-workers", UID: "uid-1"}}, pg.OwnerReferences)
	require.Equal(t, grouper.ManagedByValue, pg.Labels[grouper.ManagedByLabel])
}

// TestEnsurePodGroup runs against a real API server (with the garbage collector).
func TestEnsurePodGroup(t *testing.T) {
	cluster := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{}})
	ctx := context.Background()
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, corev1.AddToScheme(scheme))
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	pgs, err := grouper.NewPodGroupClient(cluster.Config)
	require.NoError(t, err)

	// A ConfigMap stands in for the workload's top owner (garbage collection needs a real UID).
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "default"}}
	require.NoError(t, c.Create(ctx, owner))
	w := exampleWorkload(t, string(owner.UID))
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	desired := grouper.DesiredPodGroups(w, ref)[0]

	t.Run("created", func(t *testing.T) {
		written, change, err := grouper.EnsurePodGroup(ctx, pgs, desired, nil)
		require.NoError(t, err)
		require.Equal(t, grouper.Created, change)
		// Events about the written PodGroup need its kind: kube-scheduler's recorder does not know it.
		require.Equal(t, metav1.TypeMeta{APIVersion: "scheduling.x-k8s.io/v1alpha1", Kind: "PodGroup"}, written.TypeMeta)
		_, change, err = grouper.EnsurePodGroup(ctx, pgs, desired, nil)
		require.NoError(t, err)
		require.Equal(t, grouper.Unchanged, change)
		var got v1alpha1.PodGroup
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(desired), &got))
		require.EqualValues(t, 3, got.Spec.MinMember)
		require.Equal(t, owner.UID, got.OwnerReferences[0].UID)
	})
	t.Run("kept current when the workload scales", func(t *testing.T) {
		scaled := desired.DeepCopy()
		scaled.Spec.MinMember = 5
		_, change, err := grouper.EnsurePodGroup(ctx, pgs, scaled, nil)
		require.NoError(t, err)
		require.Equal(t, grouper.Updated, change)
		var got v1alpha1.PodGroup
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(desired), &got))
		require.EqualValues(t, 5, got.Spec.MinMember)
	})
	t.Run("concurrent writers make exactly one", func(t *testing.T) {
		one := desired.DeepCopy()
		one.Name = "concurrent"
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := grouper.EnsurePodGroup(ctx, pgs, one, nil)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		var list v1alpha1.PodGroupList
		require.NoError(t, c.List(ctx, &list, client.InNamespace("default")))
		n := 0
		for _, pg := range list.Items {
			if pg.Name == "concurrent" {
				n++
			}
		}
		require.Equal(t, 1, n)
	})
	t.Run("an operator's PodGroup is left alone", func(t *testing.T) {
		theirs := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "default"}, Spec: v1alpha1.PodGroupSpec{MinMember: 7}}
		require.NoError(t, c.Create(ctx, theirs))
		ours := desired.DeepCopy()
		ours.Name = "theirs"
		_, _, err := grouper.EnsurePodGroup(ctx, pgs, ours, nil)
		require.ErrorContains(t, err, "not managed by workmap")
		var got v1alpha1.PodGroup
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(theirs), &got))
		require.EqualValues(t, 7, got.Spec.MinMember)
	})
	t.Run("garbage-collected with the owner", func(t *testing.T) {
		require.NoError(t, c.Delete(ctx, owner))
		require.Eventually(t, func() bool {
			err := c.Get(ctx, client.ObjectKeyFromObject(desired), &v1alpha1.PodGroup{})
			return apierrors.IsNotFound(err)
		}, 60*time.Second, 200*time.Millisecond)
	})
}
