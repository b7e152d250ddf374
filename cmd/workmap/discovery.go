package main

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/workmap/workmap/definitions"
)

// servedResources asks the cluster which resources it serves (one discovery round, cached on
// disk like kubectl's). Groups whose discovery fails are left out.
func (o *options) servedResources() (map[schema.GroupVersionResource]bool, error) {
	disc, err := o.kube.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	_, lists, err := disc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	served := map[schema.GroupVersionResource]bool{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			served[gv.WithResource(r.Name)] = true
		}
	}
	return served, nil
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
