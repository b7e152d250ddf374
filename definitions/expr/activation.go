package expr

import "github.com/google/cel-go/interpreter"

// Activation binds the variables of one evaluation. Unset fields are unbound: an expression
// that reads them fails with an error instead of seeing a zero value.
type Activation struct {
	Self     map[string]any
	Item     any
	HasItem  bool
	Key      string
	Children map[string][]any
	Pods     []any
	Pod      map[string]any
	Replica  int64
	// HasReplica marks Replica as bound.
	HasReplica bool
}

var _ interpreter.Activation = (*Activation)(nil)

// ResolveName implements interpreter.Activation.
func (a *Activation) ResolveName(name string) (any, bool) {
	switch name {
	case VarSelf:
		return a.Self, a.Self != nil
	case VarItem:
		return a.Item, a.HasItem
	case VarKey:
		return a.Key, a.HasItem
	case VarChildren:
		return a.Children, a.Children != nil
	case VarPods:
		return a.Pods, a.Pods != nil
	case VarPod:
		return a.Pod, a.Pod != nil
	case VarReplica:
		return a.Replica, a.HasReplica
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *Activation) Parent() interpreter.Activation { return nil }
