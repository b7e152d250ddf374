package main

import (
	"context"
	"errors"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/live"
	"github.com/workmap/workmap/internal/nativeapi"
)

// gangStates reads the live state of the workload's gangs; a failure to read them is a
// warning (the tree stands without them). The native PodGroups are those the cluster serves
// unless o names them.
//
// Discovery is read from the disk cache, which may be another cluster's that had the same
// address, or this one's before an upgrade. When the cluster contradicts it (a pod names a
// native PodGroup the cache says is not served, or the cached version answers "not found"),
// discovery is read again from the cluster, once.
func (c *cluster) gangStates(ctx context.Context, r *live.Resolver, w *definitions.Workload, o live.GangOptions) {
	discovered := o.NativePodGroups == nil
	if discovered {
		o.NativePodGroups = c.nativePodGroups()
		if o.NativePodGroups == nil && w.Live != nil && w.Live.InNativeGroups > 0 && !c.discovery.Fresh() {
			c.discovery.Invalidate()
			o.NativePodGroups = c.nativePodGroups()
		}
	}
	err := r.GangStates(ctx, w, o)
	if errors.Is(err, live.ErrNativePodGroupsNotServed) && discovered && !c.discovery.Fresh() {
		c.discovery.Invalidate()
		o.NativePodGroups = c.nativePodGroups()
		err = r.GangStates(ctx, w, o)
	}
	if err != nil {
		c.warnf("%s %s/%s: reading its gangs' PodGroups: %v", w.Workload.Kind, w.Workload.Namespace, w.Workload.Name, c.explain(err))
	}
}

// nativePodGroups is the native PodGroup resource the cluster serves (nil: none), from the
// discovery already read for the command (a mapper lookup of a kind the cluster does not serve
// would read discovery again).
func (c *cluster) nativePodGroups() *schema.GroupVersionResource {
	// A group whose discovery failed (an aggregated API that is down, a CRD being
	// installed) fails the call but not the others: native PodGroups are looked up whenever
	// scheduling.k8s.io was listed.
	groups, err := c.discovery.ServerGroups()
	if groups == nil || (err != nil && !discovery.IsGroupDiscoveryFailedError(err)) {
		return nil
	}
	for _, g := range groups.Groups {
		if g.Name != nativeapi.Group {
			continue
		}
		for _, version := range nativeapi.Versions {
			if !slices.ContainsFunc(g.Versions, func(v metav1.GroupVersionForDiscovery) bool { return v.Version == version.Name }) {
				continue
			}
			resources, err := c.discovery.ServerResourcesForGroupVersion(nativeapi.Group + "/" + version.Name)
			if err != nil {
				continue
			}
			for _, r := range resources.APIResources {
				if r.Name == "podgroups" {
					gvr := version.PodGroups()
					return &gvr
				}
			}
		}
	}
	return nil
}
