package harness

import (
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/internal/nativeapi"
	"github.com/workmap/workmap/internal/needs"
)

// A Release is a Kubernetes release a local control plane runs: which of its components are
// built for it and how Kubernetes' own gang scheduling is turned on in it.
type Release struct {
	// Version is the release's version, as its binaries' folder names it (bin/k8s-<Version>).
	Version string
	// own are the components built for this release; the others (etcd, kubectl, kwok, the
	// operators) come from the folder of the default release, which Kubernetes' version-skew
	// policy allows beside them. Empty for the default release, which has them all.
	own []string
	// NativeGangGates are the feature gates that turn on native gang scheduling in it.
	NativeGangGates string
	// Native is the version of Kubernetes' own gang API (scheduling.k8s.io Workloads and
	// PodGroups) it serves with them (kube-apiserver's --runtime-config).
	Native nativeapi.Version
}

// The releases the tests run. Release136 is the default: workmap-scheduler is built on its
// scheduler framework. Release137 has its own API server, controller manager (its PodGroup
// protection controller reads the native API that server serves) and kube-scheduler (the
// native gang scheduler); workmap-scheduler runs against its API server one minor older.
var (
	// Release136: native gangs alpha; Workload and PodGroup in scheduling.k8s.io/v1alpha2,
	// kube-scheduler's GangScheduling plugin behind its own gate.
	Release136 = Release{Version: "v1.36.3", NativeGangGates: NativeGangGates, Native: nativeVersion("v1alpha2")}
	// Release137: native gangs beta behind GenericWorkload alone (GangScheduling and
	// WorkloadAwarePreemption were folded into it); Workload and PodGroup in
	// scheduling.k8s.io/v1beta1.
	Release137 = Release{Version: "v1.37.2", own: []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"},
		NativeGangGates: "GenericWorkload=true", Native: nativeVersion("v1beta1")}
)

// Releases are the releases the native-gang and webhook suites run against, oldest first.
var Releases = []Release{Release136, Release137}

// NativePodGroups is the native PodGroup resource the release serves with native gangs on.
func (r Release) NativePodGroups() schema.GroupVersionResource {
	return r.orDefault().Native.PodGroups()
}

// NativeGangAPI is the group version of Kubernetes' own gang API the release serves with
// native gangs on ("scheduling.k8s.io/v1beta1").
func (r Release) NativeGangAPI() string { return r.NativePodGroups().GroupVersion().String() }

// nativeVersion is the known native API version of that name.
func nativeVersion(name string) nativeapi.Version {
	v, ok := nativeapi.Lookup(name)
	if !ok {
		panic("nativeapi does not know " + name)
	}
	return v
}

// isDefault reports whether r is the default release (the zero Release is).
func (r Release) isDefault() bool { return r.Version == "" || r.Version == Release136.Version }

// orDefault is r, or the default release for the zero Release.
func (r Release) orDefault() Release {
	if r.Version == "" {
		return Release136
	}
	return r
}

// binDir is the folder of r's own components: beside the default release's folder, named
// after its version. It skips the test (a failure under WORKMAP_REQUIRE_ALL) when one is
// missing.
func (r Release) binDir(t T, base string) string {
	t.Helper()
	if r.isDefault() {
		return base
	}
	dir := filepath.Join(filepath.Dir(base), "k8s-"+r.Version)
	for _, b := range r.own {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			needs.Skip(t, "Kubernetes %s binary %s missing in %s: run `make controlplane`", r.Version, b, dir)
		}
	}
	return dir
}

// binary is the path of a component for this release: its own build when it has one, else
// the default release's.
func (r Release) binary(base, releaseDir, name string) string {
	if slices.Contains(r.own, name) {
		return filepath.Join(releaseDir, name)
	}
	return filepath.Join(base, name)
}
