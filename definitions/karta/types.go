package karta

import "encoding/json"

// The input format: a Karta or ResourceInterface object. Only the fields the converter reads
// are declared; fields it reports without reading are kept raw, and any other field is reported
// as unknown (see unknownFields).

// Document is one Karta (or ResourceInterface) object.
type Document struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   Metadata        `json:"metadata"`
	Spec       Spec            `json:"spec"`
	Status     json.RawMessage `json:"status,omitempty"` // written by the server: ignored
}

// Metadata is the part of the object metadata the converter reads; the rest is ignored.
type Metadata struct {
	Name string `json:"name"`
}

// Spec is a Karta spec.
type Spec struct {
	StructureDefinition      StructureDefinition       `json:"structureDefinition"`
	OptimizationInstructions *OptimizationInstructions `json:"optimizationInstructions,omitempty"`
}

// StructureDefinition is the component tree.
type StructureDefinition struct {
	RootComponent        Component          `json:"rootComponent"`
	ChildComponents      []Component        `json:"childComponents,omitempty"`
	AdditionalChildKinds []GroupVersionKind `json:"additionalChildKinds,omitempty"`
}

// GroupVersionKind names a kind.
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// Component is one node of the workload tree. OwnerRef names the parent component.
type Component struct {
	Name              string            `json:"name"`
	Kind              *GroupVersionKind `json:"kind,omitempty"`
	OwnerRef          *string           `json:"ownerRef,omitempty"`
	SpecDefinition    *SpecDefinition   `json:"specDefinition,omitempty"`
	ScaleDefinition   *ScaleDefinition  `json:"scaleDefinition,omitempty"`
	StatusDefinition  *StatusDefinition `json:"statusDefinition,omitempty"`
	SuspendDefinition json.RawMessage   `json:"suspendDefinition,omitempty"`
	InstanceIDPath    *string           `json:"instanceIdPath,omitempty"`
	PodSelector       *PodSelector      `json:"podSelector,omitempty"`
}

// SpecDefinition says where a component's pods are described.
type SpecDefinition struct {
	PodTemplateSpecPath         *string                      `json:"podTemplateSpecPath,omitempty"`
	PodSpecPath                 *string                      `json:"podSpecPath,omitempty"`
	MetadataPath                *string                      `json:"metadataPath,omitempty"`
	FragmentedPodSpecDefinition *FragmentedPodSpecDefinition `json:"fragmentedPodSpecDefinition,omitempty"`
}

// FragmentedPodSpecDefinition has one jq path per pod field.
type FragmentedPodSpecDefinition struct {
	SchedulerNamePath     *string `json:"schedulerNamePath,omitempty"`
	LabelsPath            *string `json:"labelsPath,omitempty"`
	AnnotationsPath       *string `json:"annotationsPath,omitempty"`
	ResourcesPath         *string `json:"resourcesPath,omitempty"`
	ResourceClaimsPath    *string `json:"resourceClaimsPath,omitempty"`
	PodAffinityPath       *string `json:"podAffinityPath,omitempty"`
	NodeAffinityPath      *string `json:"nodeAffinityPath,omitempty"`
	ContainersPath        *string `json:"containersPath,omitempty"`
	ContainerPath         *string `json:"containerPath,omitempty"`
	PriorityClassNamePath *string `json:"priorityClassNamePath,omitempty"`
	ImagePath             *string `json:"imagePath,omitempty"`
}

// ScaleDefinition locates replica counts.
type ScaleDefinition struct {
	ReplicasPath    *string `json:"replicasPath,omitempty"`
	MinReplicasPath *string `json:"minReplicasPath,omitempty"`
	MaxReplicasPath *string `json:"maxReplicasPath,omitempty"`
}

// PodSelector maps a pod (its jq paths run on the pod) to a component, instance and replica.
type PodSelector struct {
	ComponentTypeSelector     *ComponentTypeSelector     `json:"componentTypeSelector,omitempty"`
	ComponentInstanceSelector *ComponentInstanceSelector `json:"componentInstanceSelector,omitempty"`
	ReplicaSelector           *ReplicaSelector           `json:"replicaSelector,omitempty"`
}

// ComponentTypeSelector matches pods whose KeyPath equals Value, or exists when Value is nil.
type ComponentTypeSelector struct {
	KeyPath string  `json:"keyPath"`
	Value   *string `json:"value,omitempty"`
}

// ComponentInstanceSelector gives the instance id of a pod.
type ComponentInstanceSelector struct {
	IDPath string `json:"idPath"`
}

// ReplicaSelector gives the replica key of a pod.
type ReplicaSelector struct {
	KeyPath string `json:"keyPath"`
}

// StatusDefinition maps the native status to Karta's states.
type StatusDefinition struct {
	PhaseDefinition      *PhaseDefinition      `json:"phaseDefinition,omitempty"`
	ConditionsDefinition *ConditionsDefinition `json:"conditionsDefinition,omitempty"`
	StatusMappings       StatusMappings        `json:"statusMappings"`
}

// PhaseDefinition locates a phase string.
type PhaseDefinition struct {
	Path string `json:"path"`
}

// ConditionsDefinition locates a list of conditions and names their fields.
type ConditionsDefinition struct {
	Path             string  `json:"path"`
	TypeFieldName    string  `json:"typeFieldName,omitempty"`
	StatusFieldName  string  `json:"statusFieldName,omitempty"`
	MessageFieldName *string `json:"messageFieldName,omitempty"`
	ReasonFieldName  *string `json:"reasonFieldName,omitempty"`
}

// StatusMappings lists matchers per state; the matchers of one state are ORed.
type StatusMappings struct {
	Initializing []StatusMatcher `json:"initializing,omitempty"`
	Running      []StatusMatcher `json:"running,omitempty"`
	Completed    []StatusMatcher `json:"completed,omitempty"`
	Failed       []StatusMatcher `json:"failed,omitempty"`
	Degraded     []StatusMatcher `json:"degraded,omitempty"`
	Suspended    []StatusMatcher `json:"suspended,omitempty"`
	Suspending   []StatusMatcher `json:"suspending,omitempty"`
	Resuming     []StatusMatcher `json:"resuming,omitempty"`
}

// StatusMatcher is one matcher; its parts are ANDed.
type StatusMatcher struct {
	ByPhase      string              `json:"byPhase,omitempty"`
	ByConditions []ExpectedCondition `json:"byConditions,omitempty"`
	ByExpression *ExpressionMatcher  `json:"byExpression,omitempty"`
}

// ExpectedCondition is a condition that must be present.
type ExpectedCondition struct {
	Type   string  `json:"type"`
	Status *string `json:"status,omitempty"`
	Reason *string `json:"reason,omitempty"`
}

// ExpressionMatcher is a jq expression whose result must equal ExpectedResult.
type ExpressionMatcher struct {
	Expression     string `json:"expression"`
	ExpectedResult string `json:"expectedResult"`
}

// OptimizationInstructions are hints for schedulers.
type OptimizationInstructions struct {
	GangScheduling *GangScheduling `json:"gangScheduling,omitempty"`
}

// GangScheduling has the deprecated podGroups form and the later podGroup form.
type GangScheduling struct {
	PodGroups []PodGroupDefinition `json:"podGroups,omitempty"`
	PodGroup  *PodGroup            `json:"podGroup,omitempty"`
}

// PodGroupDefinition is one gang of the podGroups form.
type PodGroupDefinition struct {
	Name    string                     `json:"name"`
	Members []PodGroupMemberDefinition `json:"members"`
}

// PodGroupMemberDefinition adds a component's pods to a gang, split by GroupByKeyPaths and
// restricted by Filters (jq on the pod).
type PodGroupMemberDefinition struct {
	ComponentName   string   `json:"componentName"`
	GroupByKeyPaths []string `json:"groupByKeyPaths,omitempty"`
	Filters         []string `json:"filters,omitempty"`
}

// PodGroup is the later gang form: one group with sub-groups per component.
type PodGroup struct {
	Name      string          `json:"name"`
	Topology  json.RawMessage `json:"topology,omitempty"`
	SubGroups []SubGroup      `json:"subGroups,omitempty"`
}

// SubGroup is one component of a PodGroup.
type SubGroup struct {
	ComponentName string          `json:"componentName"`
	Topology      json.RawMessage `json:"topology,omitempty"`
}
