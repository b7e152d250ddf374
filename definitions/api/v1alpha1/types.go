package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadDefinition describes one workload kind (group + kind): its pod-producing roles,
// the child objects its controller creates, how its native status maps to workmap's
// vocabulary, and how its pods form gangs. Definitions are data: adding one teaches every
// workmap tool (CLI, grouper, scheduler) a new framework without code.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=wd,categories=workmap
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.workload.group`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.workload.kind`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:subresource:status
type WorkloadDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WorkloadDefinitionSpec `json:"spec"`

	// Status is what workmap-scheduler made of the definition. Definitions read from files
	// and the embedded catalog have none.
	// +optional
	Status *WorkloadDefinitionStatus `json:"status,omitempty"`
}

// ConditionAccepted is the type of the condition workmap-scheduler's leader sets on every
// WorkloadDefinition in the cluster: True when it compiled (reason Compiled; the message says
// whether it is in effect for its kind or overridden), False when it is invalid (reason
// Invalid; the message lists each problem with its field path). A definition that is not
// accepted and was never valid is skipped: the kind keeps the embedded catalog's definition,
// if any; one that was valid before keeps its last valid generation in effect (status.lastValid).
const ConditionAccepted = "Accepted"

// Reasons of the Accepted condition.
const (
	ReasonCompiled = "Compiled"
	ReasonInvalid  = "Invalid"
)

// WorkloadDefinitionStatus is the observed state of a WorkloadDefinition.
type WorkloadDefinitionStatus struct {
	// Conditions holds the Accepted condition, set by workmap-scheduler's leader.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastValid is, while the spec does not compile, the last generation of it that did,
	// which stays in effect: workmap-scheduler groups pods by it, and the CLI reads it from
	// here. Set and cleared by workmap-scheduler's leader.
	// +optional
	LastValid *LastValidDefinition `json:"lastValid,omitempty"`
}

// LastValidDefinition is an earlier generation of a WorkloadDefinition's spec that compiled.
type LastValidDefinition struct {
	// Generation is the metadata.generation the spec had.
	Generation int64 `json:"generation"`
	// Spec is the spec as it was at that generation.
	Spec WorkloadDefinitionSpec `json:"spec"`
}

// WorkloadDefinitionList is a list of WorkloadDefinitions.
//
// +kubebuilder:object:root=true
type WorkloadDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadDefinition `json:"items"`
}

// WorkloadDefinitionSpec is the description of one workload kind.
//
// +kubebuilder:validation:XValidation:rule="!has(self.gang) || self.gang.groups.all(g, g.members.all(m, self.roles.exists(r, r.name == m)))",message="every gang member must name a role"
type WorkloadDefinitionSpec struct {
	// Workload is the root kind this definition describes.
	Workload WorkloadType `json:"workload"`

	// Roles are the pod-producing parts of the workload, e.g. the replicatedJobs of a JobSet
	// or the head and worker groups of a RayCluster.
	//
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Roles []Role `json:"roles"`

	// SharedClaims is a CEL expression over `self` listing the Dynamic Resource Allocation
	// claims the workload's operator creates and shares among several of its pods (rather
	// than one per pod from a ResourceClaimTemplate the pod spec names), for counting the
	// GPUs they claim: a ResourceClaim holds its devices once, however many pods use it. It
	// returns a list of maps, each one set of alike claims:
	//   - `name`: where the workload asks for them, shown in warnings: a string, or a path
	//     as a list of field names and list indices (`['spec.claims', 0]` is spec.claims[0]);
	//   - `roles` (list of strings): the roles (instance names) whose pods use them; each
	//     of these roles shows their GPUs, the workload's total counts them once;
	//   - `claims` (int, default 1): how many ResourceClaims the operator creates of them;
	//   - their devices: `spec`, a ResourceClaim spec described in place, or
	//     `resourceClaimTemplateName` (and `namespace`, default the workload's) naming a
	//     ResourceClaimTemplate, read from the same manifest offline and from the cluster live;
	//   - `uncounted` (string): set when the operator gives these claims to no pod, or cannot
	//     make them: why, shown as a warning instead of counting them.
	// A set that no listed role with pods uses counts no GPUs.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	SharedClaims string `json:"sharedClaims,omitempty"`

	// Children are the kinds of objects the workload's controller creates (shown in the live
	// tree and exposed to status rules as the `children` CEL variable).
	//
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Children []ChildKind `json:"children,omitempty"`

	// Pods says how to find the workload's live pods.
	// +optional
	Pods *PodSelection `json:"pods,omitempty"`

	// Status rules map the workload's native status to one state. They are evaluated in order
	// and the first rule whose `when` is true wins; when none matches the state is Unknown.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Status []StatusRule `json:"status,omitempty"`

	// Gang says how the workload's pods form gangs for all-or-nothing scheduling.
	// +optional
	Gang *Gang `json:"gang,omitempty"`
}

// WorkloadType names the root kind of a workload.
type WorkloadType struct {
	// Group is the API group of the root kind ("" for the core group).
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group"`

	// Kind is the root kind, e.g. JobSet.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kind string `json:"kind"`

	// Versions the definition was written and tested against. Objects of other versions still
	// resolve, with a warning.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	Versions []string `json:"versions"`
}

// Role is one pod-producing part of a workload. Exactly one of podTemplate, podSpec and
// podFields says where its pods are described. A `[*]` in that path makes one instance per
// list item (or map value); the CEL expressions of the role then see that element as `item`
// and its map key or list index as `key`.
//
// +kubebuilder:validation:XValidation:rule="[has(self.podTemplate), has(self.podSpec), has(self.podFields)].filter(x, x).size() == 1",message="exactly one of podTemplate, podSpec and podFields must be set"
type Role struct {
	// Name of the role, unique in the definition.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$`
	Name string `json:"name"`

	// PodTemplate is the path to a PodTemplateSpec (metadata + spec), e.g.
	// `spec.replicatedJobs[*].template.spec.template`.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	PodTemplate string `json:"podTemplate,omitempty"`

	// PodSpec is the path to a bare PodSpec, for frameworks that embed one without metadata.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	PodSpec string `json:"podSpec,omitempty"`

	// PodFields describes pods whose fields are scattered over the object (NIMService, Milvus,
	// KServe's inline pod spec).
	// +optional
	PodFields *PodFields `json:"podFields,omitempty"`

	// When is a CEL expression (bool) over `self`: the role exists only when it is true. Two
	// roles with opposite conditions (and one instanceName) express a fallback, e.g. a
	// LeaderWorkerSet's leader comes from leaderTemplate, or from workerTemplate when there is
	// none.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	When string `json:"when,omitempty"`

	// InstanceName is a CEL expression (string) naming each instance: the role name users see,
	// e.g. a replicatedJob's name. Default: the map key for
	// `[*]` over a map, `item.name` for `[*]` over a list of named items, else the list index;
	// the role name when the path has no `[*]`.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	InstanceName string `json:"instanceName,omitempty"`

	// Replicas is a CEL expression (int): how many replicas of the instance exist. Default 1.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Replicas string `json:"replicas,omitempty"`

	// MinReplicas is a CEL expression (int): the replicas the instance must start with for the
	// workload to make progress. When it is > 0 the default gang size uses it instead of replicas.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	MinReplicas string `json:"minReplicas,omitempty"`

	// PodsPerReplica is a CEL expression (int): pods in one replica. Default 1.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	PodsPerReplica string `json:"podsPerReplica,omitempty"`

	// Resources is a CEL expression returning a map of resource name → quantity string that
	// become the requests (and limits) of the pod's main container (named by
	// podFields.containerName, else "main", else the first), for frameworks that keep
	// resources in their own format, e.g. Dynamo's `resources.limits.gpu`. Names it does not
	// return keep the template's values; an empty quantity is ignored.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Resources string `json:"resources,omitempty"`

	// PodInstance is a CEL expression over a live `pod` returning the name of the instance the
	// pod belongs to (compared with InstanceName). A pod for which no role's PodInstance names
	// one of its instances is not part of any role.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	PodInstance string `json:"podInstance,omitempty"`

	// PodReplica is a CEL expression over a live `pod` returning the index of the replica it
	// belongs to (int or numeric string), e.g. a Job index or a LeaderWorkerSet group index.
	// Required for roles in a gang group of scope replica.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	PodReplica string `json:"podReplica,omitempty"`
}

// PodFields locates the pod fields of workloads that do not embed a pod template. Every path is
// relative to Base.
type PodFields struct {
	// Base is the path of the object holding the fields; `[*]` makes one instance per element.
	// Empty means the root object.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Base string `json:"base,omitempty"`

	// Containers is the path of a list of containers.
	// +optional
	Containers string `json:"containers,omitempty"`
	// Resources is the path of the ResourceRequirements of the main container.
	// +optional
	Resources string `json:"resources,omitempty"`
	// ContainerName names the main container built from Resources. Default "main".
	// +optional
	ContainerName string `json:"containerName,omitempty"`
	// Labels is the path of the pod labels map.
	// +optional
	Labels string `json:"labels,omitempty"`
	// Annotations is the path of the pod annotations map.
	// +optional
	Annotations string `json:"annotations,omitempty"`
	// SchedulerName is the path of the pod's schedulerName.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`
	// NodeSelector is the path of the pod's nodeSelector map.
	// +optional
	NodeSelector string `json:"nodeSelector,omitempty"`
	// Tolerations is the path of the pod's tolerations list.
	// +optional
	Tolerations string `json:"tolerations,omitempty"`
	// Affinity is the path of the pod's affinity.
	// +optional
	Affinity string `json:"affinity,omitempty"`
	// PriorityClassName is the path of the pod's priorityClassName.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// ResourceClaims is the path of the list of Dynamic Resource Allocation claims the
	// operator puts in the pod's spec.resourceClaims, for counting the GPUs they claim. An item
	// names a ResourceClaim (resourceClaimName) or a ResourceClaimTemplate
	// (resourceClaimTemplateName) as in a pod spec; its name may be left out, as operators
	// name the pod's claims themselves. An item may instead describe its claim in place
	// (the NIM operator's claimCreationSpec): claimCreationSpec.devices[] each ask for count
	// devices (default 1) of deviceClassName (default gpu.nvidia.com), and the operator makes
	// the ResourceClaimTemplate.
	// +optional
	ResourceClaims string `json:"resourceClaims,omitempty"`
}

// ChildKind is a kind of object the workload's controller creates.
type ChildKind struct {
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Version string `json:"version"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name is the key of these objects in the `children` CEL variable. Default: the lower-camel
	// plural of Kind (Job → jobs, PodClique → podCliques).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`
	// Resource is the plural resource name used to list these objects. Default: the lowercase
	// plural of Kind (Job → jobs), which holds for nearly every kind; set it for irregular ones.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Resource string `json:"resource,omitempty"`
	// Selector is a CEL expression over `self` returning the labels every child of this kind
	// carries, so live resolution lists only them. Without it, the namespace's objects of the
	// kind are listed and kept when the workload owns them (directly or through other children).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Selector string `json:"selector,omitempty"`
}

// PodSelection says how to find the workload's live pods.
type PodSelection struct {
	// Selector is a CEL expression returning a map of pod labels, all of which a pod must carry.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Selector string `json:"selector"`
}

// State is workmap's status vocabulary.
//
// +kubebuilder:validation:Enum=Pending;Initializing;Running;Degraded;Suspended;Completed;Failed;Unknown
type State string

// The states a workload can be in.
const (
	StatePending      State = "Pending"
	StateInitializing State = "Initializing"
	StateRunning      State = "Running"
	StateDegraded     State = "Degraded"
	StateSuspended    State = "Suspended"
	StateCompleted    State = "Completed"
	StateFailed       State = "Failed"
	StateUnknown      State = "Unknown"
)

// StatusRule maps the workload to State when When is true.
type StatusRule struct {
	State State `json:"state"`
	// When is a CEL expression (bool) over `self` and, in live mode, `children` and `pods`.
	// Rules that use `children` or `pods` are skipped when only the object is known.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	When string `json:"when"`
	// Reason is a CEL expression (string) explaining the state. Default: the When expression.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// Gang holds the gang-scheduling hints of a workload.
type Gang struct {
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Groups []GangGroup `json:"groups"`
}

// GangScope says how many PodGroups one gang group becomes.
//
// +kubebuilder:validation:Enum=workload;instance;replica;instanceReplica
type GangScope string

const (
	// ScopeWorkload makes one PodGroup for the whole workload.
	ScopeWorkload GangScope = "workload"
	// ScopeInstance makes one PodGroup per role instance (e.g. per replicatedJob).
	ScopeInstance GangScope = "instance"
	// ScopeReplica makes one PodGroup per replica (e.g. per LeaderWorkerSet group).
	ScopeReplica GangScope = "replica"
	// ScopeInstanceReplica makes one PodGroup per role instance and replica (e.g. per replica
	// of each multi-node component of a Dynamo graph).
	ScopeInstanceReplica GangScope = "instanceReplica"
)

// GangGroup is one gang: pods of its member roles that must be scheduled together.
type GangGroup struct {
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Members are the roles whose pods (in every instance) join the group.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	Members []string `json:"members"`

	// When is a CEL expression (bool) over `self`: the group applies only when it is true. A
	// role may be a member of several groups when each has a When and at most one applies,
	// e.g. one group for the whole JobSet, or one per replicatedJob when they start in order.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	When string `json:"when,omitempty"`

	// Scope: workload (default), instance or replica.
	// +optional
	// +kubebuilder:default=workload
	Scope GangScope `json:"scope,omitempty"`

	// MinMember is a CEL expression (int) over `self` overriding the default group size: the sum
	// over member instances of (minReplicas > 0 ? minReplicas : replicas) × podsPerReplica,
	// per instance or per replica for those scopes.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	MinMember string `json:"minMember,omitempty"`

	// Computed is a CEL expression over `self` listing this group's PodGroups itself, for gangs
	// that follow neither roles nor replicas — e.g. Grove's one gang per scaling-group copy
	// beyond its minAvailable. It returns a list of maps with `name` (string, unique in the
	// group), `minMember` (int) and optionally `count` (int): that many alike PodGroups named
	// `<name>-0` … `<name>-<count-1>`. Requires podGroup. With scope replica it is evaluated once
	// per replica with `replica` bound (and pods are matched by podReplica too); any other
	// scope is ignored.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Computed string `json:"computed,omitempty"`

	// PodGroup is a CEL expression over a live `pod` returning the name of the computed entry
	// the pod belongs to, or '' when it is not in this group: the pod then joins the next group
	// of its role. A role may therefore be a member of a computed group and of one more group.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	PodGroup string `json:"podGroup,omitempty"`

	// TimeoutSeconds is how long the scheduler waits for the whole group before giving up.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// LeaderFirst is a CEL expression (bool) over `self`: true when the workload's controller
	// creates the rest of each PodGroup's pods only once its first pods hold a node (e.g. a
	// LeaderWorkerSet with exclusive placement creates a group's workers once its leader is
	// scheduled). Such a gang's first pods may bind before the others exist, once the whole
	// gang fits (in one domain of its required level); the rest then bind all together.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LeaderFirst string `json:"leaderFirst,omitempty"`

	// Topology says where in the cluster's network topology each PodGroup of this group is
	// placed, e.g. all pods of one LeaderWorkerSet group in one rack: CEL expressions (string)
	// naming a topology level, evaluated like minMember. The workload's annotations
	// workmap.dev/topology-required and workmap.dev/topology-preferred override them.
	// +optional
	Topology *GangTopology `json:"topology,omitempty"`
}

// GangTopology is the topology intent of a gang group. Each field is a CEL expression (string)
// over `self`, and over `item`, `key` and `replica` where the group's scope binds them (as for
// minMember), that names a topology level: a level name the scheduler knows (e.g. "rack") or a
// node label key (e.g. "topology.kubernetes.io/zone"). An empty string means no constraint, so
// an expression that reads an optional framework field can yield "" when the field is absent,
// e.g. `self.metadata.?annotations[?"example.com/topology"].orValue("")`.
//
// +kubebuilder:validation:XValidation:rule="has(self.required) || has(self.preferred) || has(self.nested)",message="topology needs required, preferred or nested"
type GangTopology struct {
	// Required is a CEL expression (string) naming the level every pod of each PodGroup of
	// this group must share one domain of (one rack, one zone): the PodGroup waits until one
	// domain of that level has room for all of it. "" means no constraint.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Required string `json:"required,omitempty"`

	// Preferred is a CEL expression (string) naming the level whose domains each PodGroup of
	// this group is packed into, as few of them as possible (inside the required domain, if
	// any); the PodGroup is scheduled anyway when it cannot fit in one. "" means no preference.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Preferred string `json:"preferred,omitempty"`

	// Nested places each part of every PodGroup of this group in one domain of its own,
	// narrower level, inside the PodGroup's domain: e.g. a whole JobSet in one block and each
	// replicatedJob's pods in one rack of it.
	// +optional
	Nested *NestedTopology `json:"nested,omitempty"`
}

// NestedTopology is the topology of the parts of a PodGroup: the pods of each role instance
// (scope instance), of each replica (scope replica) or of each replica of each instance
// (instanceReplica) share one domain of the level Required names.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nested) || self.scope != 'instanceReplica'",message="parts of scope instanceReplica have no smaller parts: nested inside them needs parts of scope instance or replica"
type NestedTopology struct {
	// Scope says what a part is.
	// +kubebuilder:validation:Enum=instance;replica;instanceReplica
	Scope GangScope `json:"scope"`

	// Required is a CEL expression (string) over `self` naming the level each part's pods
	// share one domain of: a level name or a node label key; "" means no constraint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Required string `json:"required"`

	// Nested places the pods of each replica of each instance in one domain of a still
	// narrower level, inside their part's domain: e.g. a whole JobSet in one zone, each
	// replicatedJob in one block of it (scope instance) and each of its Jobs in one rack of
	// that block.
	// +optional
	Nested *InnerNestedTopology `json:"nested,omitempty"`
}

// InnerNestedTopology is the topology of the smaller parts inside each part of a PodGroup:
// the pods of each replica of each instance share one domain of the level Required names.
type InnerNestedTopology struct {
	// Scope says what a smaller part is: instanceReplica, the only scope finer than the
	// parts it is inside.
	// +kubebuilder:validation:Enum=instanceReplica
	Scope GangScope `json:"scope"`

	// Required is a CEL expression (string) over `self` naming the level each smaller part's
	// pods share one domain of: a level name or a node label key; "" means no constraint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Required string `json:"required"`
}
