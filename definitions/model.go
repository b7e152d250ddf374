package definitions

import (
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
	groupOf   [][]*gangGroup   // per definition role: the gang groups that apply, computed ones first
}

// ObjectRef names the root object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
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
}

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
	// MinResources are the summed effective requests of MinMember pods.
	MinResources corev1.ResourceList `json:"minResources,omitempty"`
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
