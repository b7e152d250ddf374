package main

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/live"
)

// servedResources asks the cluster which resources it serves (one discovery round, cached on
// disk like kubectl's). Groups whose discovery fails are left out.
func (o *options) servedResources() (map[schema.GroupVersionResource]bool, error) {
	disc, err := o.kube.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return live.ServedResources(disc)
}

// servedRoot returns the resource of the first of a definition's versions the cluster serves.
func servedRoot(d *definitions.Definition, served map[schema.GroupVersionResource]bool) (schema.GroupVersionResource, bool) {
	for _, v := range d.Source.Spec.Workload.Versions {
		if gvr := rootResource(d, v); served[gvr] {
			return gvr, true
		}
	}
	return schema.GroupVersionResource{}, false
}
