package plugin

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/grouper"
)

// GangArgs are the plugin's arguments, given in the KubeSchedulerConfiguration's pluginConfig
// under the name WorkmapGang. Unset fields take the defaults below.
type GangArgs struct {
	metav1.TypeMeta `json:",inline"`

	// PermitWaitingTimeSeconds is how long a gang's pods wait at Permit for the rest of their
	// group when the PodGroup sets no scheduleTimeoutSeconds. Default 60, at most 900.
	PermitWaitingTimeSeconds *int64 `json:"permitWaitingTimeSeconds,omitempty"`

	// PodGroupBackoffSeconds is how long a group that failed (a member did not fit, or the
	// wait timed out) is held back before its pods are tried again. Default 10; 0 retries
	// at the scheduler's own per-pod backoff.
	PodGroupBackoffSeconds *int64 `json:"podGroupBackoffSeconds,omitempty"`

	// GrouperWorkers is how many pods the in-process grouper groups in parallel. Default 4.
	GrouperWorkers *int32 `json:"grouperWorkers,omitempty"`

	// TopologyLevels are the cluster's topology levels, broad to narrow (e.g. block, rack,
	// hostname): each a short name and the node label whose values are its domains. A gang
	// asks for a level by its name or its node label; a node label that is not listed is also
	// accepted as a level of its own.
	TopologyLevels []TopologyLevel `json:"topologyLevels,omitempty"`

	// TopologyFrom names a Topology object whose levels are read live instead (Kueue's
	// kueue.x-k8s.io or KAI's kai.scheduler Topology, both with spec.levels[].nodeLabel), for
	// clusters whose topology is described there already. Each level is named by its node
	// label's last part without a "topology-" prefix (cloud.provider.com/topology-rack: rack).
	TopologyFrom *TopologyReference `json:"topologyFrom,omitempty"`
}

// TopologyReference names a Topology object.
type TopologyReference struct {
	// Kind is Kueue or KAI.
	Kind string `json:"kind"`
	// Name is the object's name (Topology objects are cluster-scoped).
	Name string `json:"name"`
}

// TopologyLevel is one level of the cluster's topology: a name and its node label.
type TopologyLevel = grouper.TopologyLevel

// The defaults of GangArgs.
const (
	DefaultPermitWaitingTimeSeconds = 60
	DefaultPodGroupBackoffSeconds   = 10
	DefaultGrouperWorkers           = 4

	// maxPermitSeconds is kube-scheduler's own cap on a wait at Permit (15 minutes).
	maxPermitSeconds = 15 * 60
	maxSeconds       = 24 * 60 * 60 // a day: a longer backoff is surely a mistake
	maxWorkers       = 64
)

// SetDefaults fills unset fields.
func (a *GangArgs) SetDefaults() {
	if a.PermitWaitingTimeSeconds == nil {
		a.PermitWaitingTimeSeconds = ptr.To[int64](DefaultPermitWaitingTimeSeconds)
	}
	if a.PodGroupBackoffSeconds == nil {
		a.PodGroupBackoffSeconds = ptr.To[int64](DefaultPodGroupBackoffSeconds)
	}
	if a.GrouperWorkers == nil {
		a.GrouperWorkers = ptr.To[int32](DefaultGrouperWorkers)
	}
}

// Validate checks defaulted arguments; errors name the field.
func (a *GangArgs) Validate() error {
	var errs field.ErrorList
	root := field.NewPath("pluginConfig").Key(Name).Child("args")
	if v := *a.PermitWaitingTimeSeconds; v < 1 || v > maxPermitSeconds {
		errs = append(errs, field.Invalid(root.Child("permitWaitingTimeSeconds"), v, fmt.Sprintf("must be between 1 and %d (kube-scheduler caps a wait at Permit at 15 minutes)", maxPermitSeconds)))
	}
	if v := *a.PodGroupBackoffSeconds; v < 0 || v > maxSeconds {
		errs = append(errs, field.Invalid(root.Child("podGroupBackoffSeconds"), v, fmt.Sprintf("must be between 0 and %d", maxSeconds)))
	}
	if v := *a.GrouperWorkers; v < 1 || v > maxWorkers {
		errs = append(errs, field.Invalid(root.Child("grouperWorkers"), v, fmt.Sprintf("must be between 1 and %d", maxWorkers)))
	}
	errs = append(errs, validateLevels(a.TopologyLevels, root.Child("topologyLevels"))...)
	if ref := a.TopologyFrom; ref != nil {
		p := root.Child("topologyFrom")
		if len(a.TopologyLevels) > 0 {
			errs = append(errs, field.Forbidden(p, "set topologyLevels or topologyFrom, not both"))
		}
		if _, ok := topologyGroups[ref.Kind]; !ok {
			errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, []string{TopologyKindKueue, TopologyKindKAI}))
		}
		for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	return errs.ToAggregate()
}

// PermitTimeout is the default wait at Permit.
func (a *GangArgs) PermitTimeout() time.Duration {
	return time.Duration(*a.PermitWaitingTimeSeconds) * time.Second
}

// Backoff is how long a failed group is held back.
func (a *GangArgs) Backoff() time.Duration {
	return time.Duration(*a.PodGroupBackoffSeconds) * time.Second
}

// DecodeArgs reads the plugin's arguments as the scheduler passes them (raw JSON or YAML in a
// *runtime.Unknown, a *GangArgs, or nil), strictly: an unknown field is an error. The result
// is defaulted and validated.
func DecodeArgs(obj runtime.Object) (*GangArgs, error) {
	args := &GangArgs{}
	switch o := obj.(type) {
	case nil:
	case *GangArgs:
		args = o.DeepCopy()
	case *runtime.Unknown:
		if len(o.Raw) > 0 {
			if err := yaml.UnmarshalStrict(o.Raw, args); err != nil {
				return nil, fmt.Errorf("%s args: %w", Name, err)
			}
		}
	default:
		return nil, fmt.Errorf("%s args: want *runtime.Unknown or *GangArgs, got %T", Name, obj)
	}
	args.SetDefaults()
	if err := args.Validate(); err != nil {
		return nil, err
	}
	return args, nil
}

// DeepCopy copies the arguments.
func (a *GangArgs) DeepCopy() *GangArgs {
	out := &GangArgs{TypeMeta: a.TypeMeta}
	if a.PermitWaitingTimeSeconds != nil {
		out.PermitWaitingTimeSeconds = ptr.To(*a.PermitWaitingTimeSeconds)
	}
	if a.PodGroupBackoffSeconds != nil {
		out.PodGroupBackoffSeconds = ptr.To(*a.PodGroupBackoffSeconds)
	}
	if a.GrouperWorkers != nil {
		out.GrouperWorkers = ptr.To(*a.GrouperWorkers)
	}
	out.TopologyLevels = slices.Clone(a.TopologyLevels)
	if a.TopologyFrom != nil {
		out.TopologyFrom = ptr.To(*a.TopologyFrom)
	}
	return out
}

// DeepCopyObject makes GangArgs a runtime.Object.
func (a *GangArgs) DeepCopyObject() runtime.Object { return a.DeepCopy() }

// validateLevels checks topology levels: each has a name (a DNS label) and a node label (a
// qualified name), and neither repeats.
func validateLevels(levels []TopologyLevel, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names, labels := map[string]bool{}, map[string]bool{}
	for i, l := range levels {
		p := path.Index(i)
		for _, msg := range validation.IsDNS1123Label(l.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), l.Name, msg))
		}
		for _, msg := range validation.IsQualifiedName(l.NodeLabel) {
			errs = append(errs, field.Invalid(p.Child("nodeLabel"), l.NodeLabel, msg))
		}
		if names[l.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), l.Name))
		}
		if labels[l.NodeLabel] {
			errs = append(errs, field.Duplicate(p.Child("nodeLabel"), l.NodeLabel))
		}
		names[l.Name], labels[l.NodeLabel] = true, true
	}
	return errs
}
