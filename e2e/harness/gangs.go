package harness

import (
	"context"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// BindSkewLimit is how long a gang may be seen partly bound: the scheduler binds an admitted
// gang's pods in parallel, so an observer can catch it half done for a moment.
const BindSkewLimit = time.Second

// Gangs reads PodGroups and the pods of gangs in one namespace of a test cluster.
type Gangs struct {
	t         require.TestingT
	helper    func()
	c         *Cluster
	client    client.Client
	namespace string
}

// testingT is what Gangs needs of a test.
type testingT interface {
	require.TestingT
	Helper()
}

// NewGangs reads the gangs of a namespace ("" is "default").
func (c *Cluster) NewGangs(t testingT, namespace string) *Gangs {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return &Gangs{t: t, helper: t.Helper, c: c, client: cl, namespace: namespace}
}

// Pods lists the pods matching a label selector.
func (g *Gangs) Pods(selector string) []corev1.Pod {
	g.helper()
	list, err := g.c.Kube.CoreV1().Pods(g.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	require.NoError(g.t, err)
	return list.Items
}

// Bound counts the pods that have a node.
func Bound(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// WaitBound waits until want pods of the selector exist and are bound.
func (g *Gangs) WaitBound(selector string, want int, timeout time.Duration) {
	g.helper()
	require.Eventually(g.t, func() bool {
		pods := g.Pods(selector)
		return len(pods) == want && Bound(pods) == want
	}, timeout, 100*time.Millisecond, "%d pods of %s bound", want, selector)
}

// WaitCreated waits until want pods of the selector exist.
func (g *Gangs) WaitCreated(selector string, want int) {
	g.helper()
	require.Eventually(g.t, func() bool { return len(g.Pods(selector)) == want }, 60*time.Second, 100*time.Millisecond, "%d pods of %s created", want, selector)
}

// NeverPartial observes gangs (by pod selector and size) for a while: at every observation
// each has all or none of its pods bound, allowing for the parallel binding of an admitted
// gang (BindSkewLimit). It returns the bound count of each at the end.
func (g *Gangs) NeverPartial(d time.Duration, sizes map[string]int) map[string]int {
	g.helper()
	last := map[string]int{}
	partialSince := map[string]time.Time{}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for sel, size := range sizes {
			n := Bound(g.Pods(sel))
			last[sel] = n
			if n == 0 || n == size {
				delete(partialSince, sel)
				continue
			}
			if _, seen := partialSince[sel]; !seen {
				partialSince[sel] = time.Now()
			}
			require.Less(g.t, time.Since(partialSince[sel]), BindSkewLimit, "gang %s has %d of %d pods bound", sel, n, size)
		}
	}
	for sel, since := range partialSince {
		// Still binding when the observation ended: wait out the skew, then it must be whole.
		time.Sleep(BindSkewLimit - time.Since(since))
		n := Bound(g.Pods(sel))
		require.True(g.t, n == 0 || n == sizes[sel], "gang %s has %d of %d pods bound", sel, n, sizes[sel])
		last[sel] = n
	}
	return last
}

// PodGroup reads a PodGroup.
func (g *Gangs) PodGroup(name string) (*v1alpha1.PodGroup, error) {
	var pg v1alpha1.PodGroup
	err := g.client.Get(context.Background(), client.ObjectKey{Namespace: g.namespace, Name: name}, &pg)
	return &pg, err
}

// PodGroups lists the namespace's PodGroups.
func (g *Gangs) PodGroups() []v1alpha1.PodGroup {
	g.helper()
	var list v1alpha1.PodGroupList
	require.NoError(g.t, g.client.List(context.Background(), &list, client.InNamespace(g.namespace)))
	return list.Items
}

// WaitPhase waits until a PodGroup's status reports a phase and scheduled count.
func (g *Gangs) WaitPhase(name string, scheduled int32, phases ...v1alpha1.PodGroupPhase) {
	g.helper()
	require.Eventually(g.t, func() bool {
		pg, err := g.PodGroup(name)
		if err != nil || pg.Status.Scheduled != scheduled {
			return false
		}
		for _, p := range phases {
			if pg.Status.Phase == p {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "PodGroup %s: %d scheduled, phase in %v", name, scheduled, phases)
}

// Finish makes kwok complete the pods of a selector, freeing their resources.
func (g *Gangs) Finish(selector string) {
	g.helper()
	for _, p := range g.Pods(selector) {
		require.NoError(g.t, g.c.SetPodOutcome(context.Background(), g.namespace, p.Name, corev1.PodSucceeded))
	}
	require.Eventually(g.t, func() bool {
		for _, p := range g.Pods(selector) {
			if p.Status.Phase != corev1.PodSucceeded {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "pods of %s succeeded", selector)
}

// Client is a controller-runtime client that knows PodGroups, for creating and deleting them.
func (g *Gangs) Client() client.Client { return g.client }

// WaitMinMember waits until a PodGroup's minMember is want (why says what should have set it).
func (g *Gangs) WaitMinMember(name string, want int32, why string) {
	g.helper()
	require.Eventually(g.t, func() bool {
		pg, err := g.PodGroup(name)
		return err == nil && pg.Spec.MinMember == want
	}, 10*time.Second, 100*time.Millisecond, "PodGroup %s: minMember %d, %s", name, want, why)
}

// WaitRunning waits until a PodGroup's phase is Running (its status is written on a change of
// phase, so its scheduled count may lag a member that joined a gang that runs).
func (g *Gangs) WaitRunning(name string) {
	g.helper()
	require.Eventually(g.t, func() bool {
		pg, err := g.PodGroup(name)
		return err == nil && pg.Status.Phase == v1alpha1.PodGroupRunning
	}, 30*time.Second, 100*time.Millisecond, "PodGroup %s Running", name)
}
