package definitions

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions/expr"
)

// Children returns the child kinds of the definition.
func (d *Definition) Children() []Child { return d.children }

// LabelSelector returns the labels every child of this kind carries, or nil when the
// definition gives no selector (then children are found through owner references).
func (c Child) LabelSelector(root *unstructured.Unstructured) (map[string]string, error) {
	if c.selector == nil {
		return nil, nil
	}
	return c.selector.EvalStringMap(&expr.Activation{Self: root.Object})
}

// PodLabelSelector returns the labels every pod of the workload carries, or nil when the
// definition gives no pod selector (then pods are found through owner references).
func (d *Definition) PodLabelSelector(root *unstructured.Unstructured) (map[string]string, error) {
	if d.selector == nil {
		return nil, nil
	}
	return d.selector.EvalStringMap(&expr.Activation{Self: root.Object})
}
