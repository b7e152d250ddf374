package definitions

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// Workload is the workload model of one root object: what the engine returns.
type Workload struct {
	Workload   ObjectRef `json:"workload"`
	Definition string    `json:"definition"`
	Status     Status    `json:"status"`
	Totals     Totals    `json:"totals"`
	Roles      []Role    `json:"roles"`
	// Groups has one entry per PodGroup that would be created.
	Groups []Group `json:"groups"`
	// Live is present when child objects and pods were given.
	Live *Live `json:"live,omitempty"`
	// Warnings are problems that did not stop the expansion (an untested version, a bad
	// override annotation, a field that could not be read).
	Warnings []string `json:"warnings,omitempty"`
	// Errors are the fields of the object the engine could not read (each is also a warning,
	// and the status is Unknown): a manifest with any is invalid.
	Errors []FieldError `json:"-"`

	def       *Definition
	self      map[string]any
	roleIndex []map[string]int // per definition role: role name → index in Roles
	// sharedCounted are the shared claims already in the totals, by key.
	sharedCounted map[string]bool
	groupOf       [][]*gangGroup // per definition role: the gang groups that apply, computed ones first
}

// Object is the root object the workload was expanded from, as it was read (shared with the
// workload: not to be modified).
func (w *Workload) Object() map[string]any { return w.self }

// ObjectRef names the root object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// GenerateName is the object's metadata.generateName: the prefix the API server makes its
	// name from, for a manifest that gives no name.
	GenerateName string `json:"generateName,omitempty"`
	UID          string `json:"uid,omitempty"`
}

// DisplayName is the object's name as users read it: its name, or for a manifest that only
// gives generateName, the prefix followed by * (rayjob-sample-*): the name it will get.
func (r ObjectRef) DisplayName() string {
	if r.Name == "" && r.GenerateName != "" {
		return r.GenerateName + "*"
	}
	return r.Name
}

// Status is the workload's state in workmap's vocabulary, with the reason.
type Status struct {
	State  v1alpha1.State `json:"state"`
	Reason string         `json:"reason"`
	// Skipped lists the states of rules that were not evaluated because they need live data.
	Skipped []v1alpha1.State `json:"skipped,omitempty"`
}

// Totals adds up the workload's expected pods and their effective requests.
type Totals struct {
	Pods int64 `json:"pods"`
	// GPUs are the workload's GPUs (see GPUCounting), GPUSources the same by source: a GPU
	// resource name, "dra:<device class>", or "gpu-fraction".
	GPUs       float64             `json:"gpus"`
	GPUSources map[string]float64  `json:"gpuSources,omitempty"`
	Resources  corev1.ResourceList `json:"resources"`
}

// Role is one role of the workload as shown to users: one element a `[*]` of a definition
// role's path stands on (a replicatedJob, a replica type, a worker group), or the whole
// definition role when its path has none.
type Role struct {
	// Name is the role's name (the definition's instanceName), e.g. "workers".
	Name string `json:"name"`
	// DefinitionRole is the definition role it comes from, e.g. "replicatedJob".
	DefinitionRole string `json:"definitionRole"`
	Replicas       int64  `json:"replicas"`
	MinReplicas    int64  `json:"minReplicas,omitempty"`
	PodsPerReplica int64  `json:"podsPerReplica"`
	// Pods expected: Replicas × PodsPerReplica.
	Pods int64 `json:"pods"`
	// GPUs of all the role's pods, and by source (as in Totals).
	GPUs       float64            `json:"gpus"`
	GPUSources map[string]float64 `json:"gpuSources,omitempty"`
	// PodResources are the effective requests of one pod.
	PodResources corev1.ResourceList `json:"podResources,omitempty"`
	// Location is the concrete path of the pod template (or podFields base) in the object.
	Location string `json:"location"`
	// Instances has one entry per replica.
	Instances []Instance `json:"instances"`
	// Template is the pod template of the role (assembled for the podFields form).
	Template *corev1.PodTemplateSpec `json:"-"`
	// PodsFound and Phases are set in live mode; FoundPods lists the role's live pods whose
	// replica is unknown (the others are under their instance).
	PodsFound *int64         `json:"podsFound,omitempty"`
	Phases    map[string]int `json:"phases,omitempty"`
	FoundPods []FoundPod     `json:"foundPods,omitempty"`

	item    any
	hasItem bool
	key     string
	def     *role
	// claimsInPlace are the claims of the role's pods its podFields describe in place, by
	// the name of the pod's claim.
	claimsInPlace map[string]claimInPlace
	// unread is the field the engine could not read the role at, nil when it could;
	// countsRead says its replicas and pods per replica were read all the same.
	unread     *FieldError
	countsRead bool
}

// Unreadable says why the engine could not read the role: such a role has no pods in the
// model because a field of the object is broken, not because it asks for none. The same
// error is among the workload's Errors and Warnings.
func (r Role) Unreadable() (FieldError, bool) {
	if r.unread == nil {
		return FieldError{}, false
	}
	return *r.unread, true
}

// ReplicasUnknown says the role's replicas (or its pods per replica) could not be read: its
// Replicas and Pods say nothing.
func (r Role) ReplicasUnknown() bool { return r.unread != nil && !r.countsRead }

// Instance is one replica of a role (a Job of a replicatedJob, a group of a LeaderWorkerSet).
type Instance struct {
	Name    string `json:"name"`
	Replica int64  `json:"replica"`
	Pods    int64  `json:"pods"`
	// PodsFound and Phases are set in live mode when the role's pods tell their replica
	// (podReplica); otherwise the role's pods are counted for the role only. FoundPods are
	// the pods placed in this replica.
	PodsFound *int64         `json:"podsFound,omitempty"`
	Phases    map[string]int `json:"phases,omitempty"`
	FoundPods []FoundPod     `json:"foundPods,omitempty"`
}

// FoundPod is a live pod placed in a role.
type FoundPod struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Ready bool   `json:"ready"`
	Node  string `json:"node,omitempty"`
	// Owner is the pod's controller, Kind/name (Job/train-workers-0): the child object that
	// made it.
	Owner string `json:"owner,omitempty"`
	// Created is the pod's creationTimestamp (RFC 3339).
	Created string `json:"created,omitempty"`
	// Restarts adds up the restarts of the pod's containers (init containers too).
	Restarts int64 `json:"restarts,omitempty"`
	// Reason is the most telling reason the pod is not fine: the pod's own (Evicted), else a
	// container's waiting or terminated reason (CrashLoopBackOff, ImagePullBackOff,
	// OOMKilled, Error), an init container's prefixed with Init: (Init:CrashLoopBackOff).
	Reason string `json:"reason,omitempty"`
	// Priority is the pod's spec.priority, resolved from its PriorityClass at admission (nil:
	// not set).
	Priority *int32 `json:"priority,omitempty"`
}

// Group is one gang that would become one PodGroup.
type Group struct {
	Name      string             `json:"name"`
	MinMember int32              `json:"minMember"`
	Scope     v1alpha1.GangScope `json:"scope"`
	// Replica is set for scopes replica and instanceReplica; Instance for scopes instance and
	// instanceReplica (a role name) and for computed groups (the entry's name).
	Replica        *int32   `json:"replica,omitempty"`
	Instance       string   `json:"instance,omitempty"`
	Members        []string `json:"members"`
	TimeoutSeconds *int32   `json:"timeoutSeconds,omitempty"`
	// LeaderFirst: the workload's controller creates the gang's other pods only once its first
	// pods hold a node; those may bind first, once the whole gang fits.
	LeaderFirst bool `json:"leaderFirst,omitempty"`
	// MinResources are the summed effective requests of MinMember pods.
	MinResources corev1.ResourceList `json:"minResources,omitempty"`
	// Topology is where the gang's pods must or should be placed; nil when unconstrained.
	Topology *GroupTopology `json:"topology,omitempty"`
	// State is the gang in the cluster (live mode).
	State *GangState `json:"state,omitempty"`
}

// GroupTopology is the topology intent of one gang: topology levels, each a level name the
// scheduler knows (rack) or a node label key (topology.kubernetes.io/zone).
type GroupTopology struct {
	// Nested places each part of the gang (its pods of one role instance, one replica, or one
	// replica of one instance) in one domain of a narrower level, inside the gang's domain.
	Nested *NestedGroupTopology `json:"nested,omitempty"`
	// Required is the level one domain of which must hold every pod of the gang; "" for none.
	Required string `json:"required,omitempty"`
	// Preferred is the level whose domains the gang is packed into, as few as possible; ""
	// for none.
	Preferred string `json:"preferred,omitempty"`
	// Source says where the intent comes from: TopologySourceAnnotation when the workload has
	// either topology annotation (each overrides its level, an empty one removes it), else
	// TopologySourceDefinition.
	Source string `json:"source"`
}

// NestedGroupTopology is the topology of a gang's parts.
type NestedGroupTopology struct {
	// Scope says what a part is: instance, replica or instanceReplica.
	Scope v1alpha1.GangScope `json:"scope"`
	// Required is the level each part's pods share one domain of.
	Required string `json:"required"`
	// Nested places each smaller part of each part (the pods of one replica of one instance)
	// in one domain of a still narrower level, inside its part's; nil for none.
	Nested *NestedGroupTopology `json:"nested,omitempty"`
}

// Levels are the nested levels, outer first.
func (n *NestedGroupTopology) Levels() []string {
	var out []string
	for ; n != nil; n = n.Nested {
		out = append(out, n.Required)
	}
	return out
}

// PartsOf names the parts of a gang with nested topology that a placed pod belongs to, one
// per nested level, outer first (nil when the gang has none). A part is "" where the pod's
// replica is unknown and the scope needs it; the levels inside it are "" too.
func (g *Group) PartsOf(p Placement) []string {
	if g.Topology == nil || g.Topology.Nested == nil {
		return nil
	}
	var out []string
	known := true
	for n := g.Topology.Nested; n != nil; n = n.Nested {
		part := ""
		if known {
			part = partOf(n.Scope, p)
		}
		known = part != ""
		out = append(out, part)
	}
	return out
}

// partOf names a placed pod's part of one scope ("" when its replica is unknown where the
// scope needs it).
func partOf(scope v1alpha1.GangScope, p Placement) string {
	switch scope {
	case v1alpha1.ScopeInstance:
		return p.Role
	case v1alpha1.ScopeReplica:
		if p.Replica >= 0 {
			return strconv.FormatInt(p.Replica, 10)
		}
	case v1alpha1.ScopeInstanceReplica:
		if p.Replica >= 0 {
			return p.Role + "/" + strconv.FormatInt(p.Replica, 10)
		}
	}
	return ""
}

// Sources of a gang's topology intent (GroupTopology.Source).
const (
	// TopologySourceAnnotation: the workload's AnnotationTopologyRequired or
	// AnnotationTopologyPreferred.
	TopologySourceAnnotation = "annotation"
	// TopologySourceDefinition: the gang group's topology in the definition (the framework's own
	// topology fields, as the definition maps them).
	TopologySourceDefinition = "definition"
)

// GangState is a gang as the cluster has it: its PodGroup, and why it waits.
type GangState struct {
	// PodGroup is the PodGroup's name; Found says whether it exists.
	PodGroup string `json:"podGroup"`
	Found    bool   `json:"found"`
	// Backend is the API group of the PodGroup that holds the gang: scheduling.x-k8s.io
	// (workmap-scheduler's, or an operator's) or scheduling.k8s.io (native, for Kubernetes' own
	// scheduler).
	Backend string `json:"backend,omitempty"`
	// MadeBy is, for a scheduling.x-k8s.io PodGroup workmap did not make, who did: its
	// app.kubernetes.io/managed-by label, else its controller (Kind/name), else "another
	// controller" ("": workmap-scheduler, or a native PodGroup).
	MadeBy string `json:"madeBy,omitempty"`
	// Phase and Scheduled are the PodGroup's status (Phase Pending when it has none yet).
	Phase     string `json:"phase,omitempty"`
	Scheduled int32  `json:"scheduled,omitempty"`
	// Domain is where the scheduler last placed a topology-constrained gang, as its
	// scheduling.x-k8s.io PodGroup's workmap.dev/topology-domain annotation says: the node
	// label of the required level and the domain's value (cloud.example.com/rack=r2).
	Domain string `json:"domain,omitempty"`
	// Reason is, for a gang that waits, the scheduler's newest word on one of its pending
	// pods (the message of its last scheduling event).
	Reason string `json:"reason,omitempty"`
	// NotInEffect says why the gang does not apply: its pods ask for a scheduler that does
	// not gang them.
	NotInEffect string `json:"notInEffect,omitempty"`
	// Note says why the PodGroup could not be read (not installed, not permitted).
	Note string `json:"note,omitempty"`
	// Priority is the gang's priority: the lowest of its live pods' (nil: no pod says). A
	// scheduler preempts for a gang, and a gang goes as a victim, at that priority.
	Priority *int32 `json:"priority,omitempty"`
	// LastPreemption is the gang's newest preemption as a victim, from workmap-scheduler's
	// Preempted event on its PodGroup (nil: none in the events the cluster keeps, an hour by
	// default).
	LastPreemption *Preemption `json:"lastPreemption,omitempty"`
}

// Preemption is one preemption of a gang: who took its nodes, and when.
type Preemption struct {
	// By is the preemptor, as the event relates it: PodGroup namespace/name, or Pod
	// namespace/name for a pod in no gang.
	By string `json:"by"`
	// At is when it happened (RFC 3339).
	At string `json:"at"`
	// Message is the scheduler's word on it.
	Message string `json:"message,omitempty"`
}

// Live summarizes the child objects and pods found for a live workload.
type Live struct {
	// Children counts child objects by their `children` key.
	Children map[string]int `json:"children"`
	// Pods counts the pods found, by phase.
	Pods       int            `json:"pods"`
	Ready      int            `json:"ready"`
	Phases     map[string]int `json:"phases"`
	Unassigned int            `json:"unassigned,omitempty"`
	// InNativeGroups counts the pods that name a native PodGroup (spec.schedulingGroup):
	// without any, no native PodGroup holds the workload's gangs.
	InNativeGroups int `json:"-"`
}

// LiveData is what live mode adds to the root object: its child objects (keyed like the
// `children` variable) and its pods, all in unstructured form.
type LiveData struct {
	Children map[string][]map[string]any
	Pods     []map[string]any
}

func addResources(into corev1.ResourceList, r corev1.ResourceList, times int64) {
	for name, q := range r {
		q = q.DeepCopy()
		q.Mul(times)
		if cur, ok := into[name]; ok {
			cur.Add(q)
			into[name] = cur
		} else {
			into[name] = q
		}
	}
}
