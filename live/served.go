package live

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// ServedResources asks the cluster which resources it serves (one discovery round). Groups
// whose discovery fails are left out; other errors are returned.
func ServedResources(disc discovery.DiscoveryInterface) (map[schema.GroupVersionResource]bool, error) {
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
