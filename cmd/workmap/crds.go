package main

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/crdschema"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdsFor fetches the CRD of each definition's kind from the cluster (named <plural>.<group>,
// the plural read from discovery), keyed by group/kind; kinds the cluster does not serve are
// left out.
func (c *cluster) crdsFor(ctx context.Context, defs []*v1alpha1.WorkloadDefinition) (map[string]*crdschema.CRD, error) {
	out := map[string]*crdschema.CRD{}
	for _, d := range defs {
		w := d.Spec.Workload
		m, err := c.mapper.RESTMapping(schema.GroupKind{Group: w.Group, Kind: w.Kind})
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, c.explain(err)
		}
		obj, err := c.dynamic.Resource(crdResource).Get(ctx, m.Resource.GroupResource().String(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, c.explain(err)
		}
		data, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		crds, err := crdschema.Parse(data)
		if err != nil {
			return nil, err
		}
		for _, crd := range crds {
			out[crd.Group+"/"+crd.Kind] = crd
		}
	}
	return out, nil
}
