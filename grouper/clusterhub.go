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

// NewClusterHub returns a hub over a cluster: owners resolved from informers (run until ctx
// ends), which also hold the top owners a grouper reads in full, definitions from source. It is
// the hub workmap-scheduler's grouper and workmap-webhook decide with, returned with its owner
// resolver; it forgets the gangs of a workload once its cache sees it deleted. Its clients
// draw from cfg's rate limiter (see OneBudget).
func NewClusterHub(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface, source *DefinitionSource) (*Hub, *OwnerResolver, error) {
	cfg = OneBudget(cfg)
	reads, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	mapper := Rediscovering(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery())))
	owners := NewOwnerResolver(meta, reads, mapper, ctx.Done())
	hub := &Hub{
		Owners:      owners,
		Natives:     DefaultNatives(),
		Definitions: source.Registry,
		Object:      owners.Object,
	}
	owners.ReadsObject = hub.readsObject
	// A deleted workload's gangs are not kept: a process that sees workloads come and go for
	// months holds only those that exist.
	owners.OnDelete(hub.Forget)
	return hub, owners, nil
}
