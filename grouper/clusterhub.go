package grouper

import (
	"context"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// NewClusterHub returns a hub over a cluster: owners resolved from metadata informers (run
// until ctx ends), top owners read through their own client, definitions from source. It is
// the hub workmap-scheduler's grouper and workmap-webhook decide with.
func NewClusterHub(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface, source *DefinitionSource) (*Hub, error) {
	// The top-owner reads that decisions wait for get a client (and rate limit) of their own.
	reads, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := Rediscovering(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery())))
	return &Hub{
		Owners:      NewOwnerResolver(meta, mapper, ctx.Done()),
		Natives:     DefaultNatives(),
		Definitions: source.Registry,
		Object:      ObjectReader(reads, mapper),
	}, nil
}
