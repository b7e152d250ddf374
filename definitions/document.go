package definitions

// The versioned documents workmap prints (`-o json|yaml`) and `workmap serve` serves.
const (
	// DocumentAPIVersion is the apiVersion of workmap's own documents.
	DocumentAPIVersion = "workmap.dev/v1alpha1"
	// WorkloadTreeKind is the kind of one workload's document.
	WorkloadTreeKind = "WorkloadTree"
	// ListAPIVersion and ListKind make the document of several objects, as kubectl prints it.
	ListAPIVersion = "v1"
	ListKind       = "List"
)

// WorkloadTree is the document of one workload: the Workload's fields next to apiVersion and
// kind. docs/workloadtree.schema.json is its JSON Schema.
type WorkloadTree struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*Workload
}

// NewWorkloadTree wraps a workload in its document.
func NewWorkloadTree(w *Workload) WorkloadTree {
	return WorkloadTree{APIVersion: DocumentAPIVersion, Kind: WorkloadTreeKind, Workload: w}
}

// List is the document of several objects (`apiVersion: v1`, `kind: List`); Items is never
// null.
type List[T any] struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []T    `json:"items"`
}

// NewList makes a List of the items.
func NewList[T any](items []T) List[T] {
	if items == nil {
		items = []T{}
	}
	return List[T]{APIVersion: ListAPIVersion, Kind: ListKind, Items: items}
}

// NewWorkloadTreeList makes the List of the workloads' documents.
func NewWorkloadTreeList(ws []*Workload) List[WorkloadTree] {
	items := make([]WorkloadTree, len(ws))
	for i, w := range ws {
		items[i] = NewWorkloadTree(w)
	}
	return NewList(items)
}
