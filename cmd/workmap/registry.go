package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/catalog"
)

var workloadDefinitions = v1alpha1.SchemeGroupVersion.WithResource("workloaddefinitions")

// registry builds the definitions in effect offline: the embedded catalog, overridden by
// --definitions.
func (o *options) registry() (*definitions.Registry, error) {
	return o.buildRegistry(nil)
}

// buildRegistry layers the catalog, then the cluster's definitions (when given), then files.
func (o *options) buildRegistry(fromCluster []*definitions.Definition) (*definitions.Registry, error) {
	reg, err := catalog.Registry()
	if err != nil {
		return nil, err
	}
	reg.Add(fromCluster...)
	if len(o.definitionDirs) > 0 {
		local, err := definitions.LoadFiles(o.definitionDirs...)
		if err != nil {
			return nil, err
		}
		reg.Add(local...)
	}
	return reg, nil
}

// liveRegistry adds the WorkloadDefinitions installed in the cluster. A cluster without the
// CRD, or a user not allowed to list them, simply has none; an invalid one is skipped with a
// warning.
func (o *options) liveRegistry(ctx context.Context, c *cluster) (*definitions.Registry, error) {
	list, err := c.dynamic.Resource(workloadDefinitions).List(ctx, metav1.ListOptions{})
	var fromCluster []*definitions.Definition
	switch {
	case err == nil:
		for i := range list.Items {
			var wd v1alpha1.WorkloadDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &wd); err != nil {
				fmt.Fprintf(o.errOut, "warning: WorkloadDefinition %s in the cluster: %v\n", list.Items[i].GetName(), err)
				continue
			}
			d, err := definitions.Compile(&wd, definitions.CompileOptions{})
			if err != nil {
				fmt.Fprintf(o.errOut, "warning: skipping the cluster's %v\n", err)
				continue
			}
			fromCluster = append(fromCluster, d)
		}
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
	default:
		return nil, c.explain(err)
	}
	return o.buildRegistry(fromCluster)
}

// rootResource is the resource of a definition's root kind in one version, named offline
// from the definition (its <plural>.<group> name). With a cluster at hand, prefer
// (*cluster).servedRoot or c.mapper, which read the name from discovery.
func rootResource(d *definitions.Definition, version string) schema.GroupVersionResource {
	return d.GroupKind.WithVersion(version).GroupVersion().WithResource(definitionPlural(d))
}
