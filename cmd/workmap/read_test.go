package main

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// diskDiscovery is discovery read from a disk cache that another cluster left at the same
// address, until it is invalidated; then the cluster's own, fresh.
type diskDiscovery struct {
	*fakediscovery.FakeDiscovery
	cluster       []*metav1.APIResourceList
	fresh         bool
	groupReads    int
	invalidations int
}

func (d *diskDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	d.groupReads++
	return d.FakeDiscovery.ServerGroups()
}

func (d *diskDiscovery) Fresh() bool { return d.fresh }

func (d *diskDiscovery) Invalidate() {
	d.invalidations++
	d.Resources = d.cluster
	d.fresh = true
}

// TestNativePodGroupsLookedUpOnce: a reader looks the native PodGroups up in discovery once;
// when the cluster contradicts the disk cache, discovery is read again once, and the answer
// changes for every later lookup.
func TestNativePodGroupsLookedUpOnce(t *testing.T) {
	podGroups := func(gv string) *metav1.APIResourceList {
		return resources(gv, resource("podgroups", "podgroup", "PodGroup", nil, nil))
	}
	disc := &diskDiscovery{
		FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{podGroups("scheduling.k8s.io/v1beta1")}}},
		cluster:       []*metav1.APIResourceList{podGroups("scheduling.k8s.io/v1alpha2")},
	}
	r := &workloadReader{cluster: &cluster{discovery: disc}}

	cached := r.nativePodGroups()
	require.Equal(t, "v1beta1", cached.Version)
	require.Equal(t, cached, r.nativePodGroups())
	require.Equal(t, 1, disc.groupReads, "discovery is read once")

	served, again := r.rediscoverNativePodGroups(cached)
	require.True(t, again)
	require.Equal(t, "v1alpha2", served.Version)
	require.Equal(t, served, r.nativePodGroups())

	_, again = r.rediscoverNativePodGroups(served)
	require.False(t, again, "discovery read from the cluster is not read again")
	require.Equal(t, 1, disc.invalidations)
	require.Equal(t, 2, disc.groupReads)
}
