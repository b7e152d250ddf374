package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamMilvus(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "milvus.io", Kind: "Milvus"}, "crds/milvus/milvus.io_milvuses.yaml")
	checkSamples(t, "milvus", map[string]sample{
		// mode unset (standalone): the standalone pod only, replicas 1; etcd and MinIO are
		// dependencies, not counted. No GPUs, no gang.
		"demo.yaml/my-release": {Pods: 1, GPUs: 0},
		// cluster mode, no image/version: the operator's default image is Milvus 2.6, so
		// mixcoord 1 + datanode 1 + streamingnode 1 + querynode 1 + proxy 1 = 5 pods
		// (no indexnode in 2.6, standalone 0 in cluster mode); Kafka etc. not counted.
		"cluster_demo.yaml/my-release": {Pods: 5, GPUs: 0},
		// cluster mode, image v2.5.16 (< 2.6), rootCoord/dataCoord/indexCoord/queryCoord set and
		// no mixCoord: 4 coordinators + datanode + indexnode + proxy + querynode, 1 each = 8 pods;
		// no streaming mode, no streamingnode.
		"milvus_cluster_resource.yaml/my-release": {Pods: 8, GPUs: 0},
		// cluster mode, Milvus 2.6 (default image), only mixCoord set: the webhook's defaults give
		// mixcoord 1 + datanode 1 + streamingnode 1 + querynode 1 + proxy 1 = 5 pods.
		"milvus_cluster_mixcoord.yaml/my-release": {Pods: 5, GPUs: 0},
		// cluster mode, Milvus 2.6: mixcoord 1 (default); proxy groups g1 1 + g2 1, datanode
		// groups 2 + 2, querynode groups 2 + 2, streamingnode groups 1 + 1 replace those
		// components' own Deployments: 1 + 2 + 4 + 4 + 2 = 13 pods.
		"milvus_deployment_groups.yaml/my-release": {Pods: 13, GPUs: 0},
	})
}
