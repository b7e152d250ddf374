package main

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
)

// getRoot fetches a workload object, trying the definition's versions in order (a version the
// cluster does not serve answers 404 for the whole resource).
func (c *cluster) getRoot(ctx context.Context, def *definitions.Definition, name string) (*unstructured.Unstructured, error) {
	versions := def.Source.Spec.Workload.Versions
	for _, v := range versions {
		gvr := rootResource(def, v)
		obj, err := c.dynamic.Resource(gvr).Namespace(c.namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return obj, nil
		}
		if isObjectNotFound(err, name) {
			return nil, fmt.Errorf("%s %q not found in namespace %q", def.GroupKind.Kind, name, c.namespace)
		}
		if !apierrors.IsNotFound(err) {
			return nil, c.explain(err)
		}
	}
	return nil, fmt.Errorf("%s is not installed in the cluster (no %s in versions %s)", def.GroupKind, rootResource(def, "").Resource, strings.Join(versions, ", "))
}

// isObjectNotFound tells a missing object from a resource the server does not serve.
func isObjectNotFound(err error, name string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name
}
