package main

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// liveObject connects to the cluster and reads the workload object a KIND/NAME (or KIND NAME)
// argument names, resolving the kind as kubectl does, with the definition in effect for it.
func (o *options) liveObject(ctx context.Context, args []string) (*cluster, servedKind, *unstructured.Unstructured, error) {
	kind, name, err := kindAndName(args)
	if err != nil {
		return nil, servedKind{}, nil, err
	}
	c, err := o.connect()
	if err != nil {
		return nil, servedKind{}, nil, err
	}
	reg, err := o.liveRegistry(ctx, c)
	if err != nil {
		return nil, servedKind{}, nil, err
	}
	k, err := c.resolveKind(reg, kind)
	if err != nil {
		return nil, servedKind{}, nil, err
	}
	root, err := c.getObject(ctx, k, name)
	if err != nil {
		return nil, servedKind{}, nil, err
	}
	return c, k, root, nil
}
