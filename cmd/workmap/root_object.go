package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/internal/access"
)

// getRoot fetches a workload object through the resource the cluster serves its kind as.
func (c *cluster) getRoot(ctx context.Context, def *definitions.Definition, name string) (*unstructured.Unstructured, error) {
	k, ok, err := c.servedRoot(def)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notInstalled(def)
	}
	return c.getObject(ctx, k, name)
}

// getObject fetches a workload object of a served kind.
func (c *cluster) getObject(ctx context.Context, k servedKind, name string) (*unstructured.Unstructured, error) {
	obj, err := c.dynamic.Resource(k.resource).Namespace(c.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return obj, nil
	case isObjectNotFound(err, name):
		return nil, fmt.Errorf("%s %q not found in namespace %q", k.def.GroupKind.Kind, name, c.namespace)
	case apierrors.IsNotFound(err): // the resource went away since discovery
		return nil, notInstalled(k.def)
	case apierrors.IsForbidden(err):
		return nil, access.New("get", k.resource.GroupResource(), c.namespace, err)
	}
	return nil, c.explain(err)
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
