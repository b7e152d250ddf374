package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/workmap/workmap/definitions"
)

// cluster is a connection to the API server through the user's kubeconfig.
type cluster struct {
	dynamic   dynamic.Interface
	config    *rest.Config
	namespace string
	// expand are the expansion options of the flags (what counts as a GPU).
	expand definitions.ExpandOptions
}

// connect builds clients from kubectl's flags.
func (o *options) connect() (*cluster, error) {
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	ns, _, err := o.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{dynamic: client, config: cfg, namespace: ns, expand: o.expandOptions()}, nil
}

// explain turns a client error into one clear line: API errors (not found, forbidden) keep the
// API server's message, which names the verb and resource; transport errors say the cluster
// could not be reached.
func (c *cluster) explain(err error) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	var urlErr *url.Error
	var netErr net.Error
	if errors.As(err, &urlErr) || errors.As(err, &netErr) {
		return fmt.Errorf("cannot reach the cluster at %s: %v", c.config.Host, innermost(err))
	}
	return err
}

func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

func metaGuess(gvk schema.GroupVersionKind) (schema.GroupVersionResource, schema.GroupVersionResource) {
	return meta.UnsafeGuessKindToResource(gvk)
}
