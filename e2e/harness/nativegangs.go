package harness

import (
	"fmt"
	"sort"
	"strings"
)

// NativeGangGates are the feature gates that turn on Kubernetes' own gang scheduling in
// Release136 (alpha in 1.36; each release has its own, Release.NativeGangGates): the Workload
// and PodGroup API (scheduling.k8s.io/v1alpha2) with the pods' spec.schedulingGroup, and
// kube-scheduler's GangScheduling plugin, which joins the default profile by itself when its
// gate is on (no scheduler configuration needed). kube-apiserver, kube-controller-manager and
// kube-scheduler all need them.
const NativeGangGates = "GenericWorkload=true,GangScheduling=true"

// NativeTopologyGates turn on Kubernetes' own topology-aware gang scheduling (alpha in 1.36),
// on top of NativeGangGates: kube-apiserver keeps a PodGroup's
// spec.schedulingConstraints.topology, and kube-scheduler places each such gang in one
// domain of its key (its TopologyPlacementGenerator and PodGroupPodsCount plugins join the
// default profile by themselves).
const NativeTopologyGates = "TopologyAwareWorkloadScheduling=true"

// nativeGangControllers are the controllers a cluster with native gangs runs besides the
// usual ones: kube-apiserver stamps a finalizer on every PodGroup, and this controller removes
// it once no running pod names the PodGroup, so PodGroups (and their namespaces) can go.
var nativeGangControllers = []string{"podgroup-protection-controller"}

// mergeFeatureGates merges --feature-gates values ("Name=bool,..."); a gate named again takes
// its last value. The result is sorted by name.
func mergeFeatureGates(lists ...string) (string, error) {
	gates := map[string]string{}
	for _, list := range lists {
		for _, entry := range strings.Split(list, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			name, value, ok := strings.Cut(entry, "=")
			name, value = strings.TrimSpace(name), strings.TrimSpace(value)
			if !ok || name == "" || (value != "true" && value != "false") {
				return "", fmt.Errorf("feature gate %q: want Name=true or Name=false", entry)
			}
			gates[name] = value
		}
	}
	entries := make([]string, 0, len(gates))
	for name, value := range gates {
		entries = append(entries, name+"="+value)
	}
	sort.Strings(entries)
	return strings.Join(entries, ","), nil
}
