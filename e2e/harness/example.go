package harness

import (
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions/manifest"
)

// ExampleJobSet reads examples/jobset-leader-workers.yaml (1 leader and 2 workers, 4 GPUs
// each), renamed, with its pods asking for schedulerName and, when workers > 0, that many
// worker replicas.
func ExampleJobSet(name, schedulerName string, workers int64) (*unstructured.Unstructured, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	docs, err := manifest.ReadFile(filepath.Join(root, "examples", "jobset-leader-workers.yaml"))
	if err != nil {
		return nil, err
	}
	obj := docs[0].Object
	obj.SetName(name)
	rjs, _, err := unstructured.NestedSlice(obj.Object, "spec", "replicatedJobs")
	if err != nil {
		return nil, err
	}
	for i := range rjs {
		rj, ok := rjs[i].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("replicatedJobs[%d] is not an object", i)
		}
		if err := unstructured.SetNestedField(rj, schedulerName, "template", "spec", "template", "spec", "schedulerName"); err != nil {
			return nil, err
		}
		if rj["name"] == "workers" && workers > 0 {
			rj["replicas"] = workers
		}
	}
	if err := unstructured.SetNestedSlice(obj.Object, rjs, "spec", "replicatedJobs"); err != nil {
		return nil, err
	}
	return obj, nil
}
