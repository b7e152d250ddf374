package definitions_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// validDef is a structurally valid definition with two roles, a child kind, a pod selector,
// status rules and one gang; the validation tests break one thing at a time.
func validDef() *v1alpha1.WorkloadDefinition {
	return &v1alpha1.WorkloadDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"},
		Spec: v1alpha1.WorkloadDefinitionSpec{
			Workload: v1alpha1.WorkloadType{Group: "example.com", Kind: "Thing", Versions: []string{"v1"}},
			Roles: []v1alpha1.Role{
				{
					Name:        "leader",
					PodTemplate: "spec.leader.template",
					PodReplica:  "pod.metadata.labels['group-index']",
				},
				{
					Name:           "workers",
					PodTemplate:    "spec.workers[*].template",
					InstanceName:   "item.name",
					Replicas:       "item.?replicas.orValue(1)",
					PodsPerReplica: "item.?hosts.orValue(1)",
					PodReplica:     "pod.metadata.labels['group-index']",
				},
			},
			Children: []v1alpha1.ChildKind{{Group: "batch", Version: "v1", Kind: "Job"}},
			Pods:     &v1alpha1.PodSelection{Selector: "{'app': self.metadata.name}"},
			Status: []v1alpha1.StatusRule{
				{State: v1alpha1.StateFailed, When: "self.?status.?failed.orValue(false)"},
				{State: v1alpha1.StateRunning, When: "size(pods) > 0", Reason: "string(size(pods)) + ' pods'"},
			},
			Gang: &v1alpha1.Gang{Groups: []v1alpha1.GangGroup{
				{Name: "all", Members: []string{"leader", "workers"}, TimeoutSeconds: ptr.To[int32](60)},
			}},
		},
	}
}

type fieldErr struct {
	Field string
	Type  field.ErrorType
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		mutate func(d *v1alpha1.WorkloadDefinition)
		// want lists every error, in order; nil means the definition compiles.
		want []fieldErr
		// wantMsg are substrings of the error message.
		wantMsg []string
	}{
		"valid definition compiles": {
			mutate: func(*v1alpha1.WorkloadDefinition) {},
		},
		"problems of every kind, listed in the order of the spec": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Roles[0].PodTemplate = "spec.leader["  // a path: found while walking the spec
				d.Spec.Roles[1].Replicas = "item.replicas +"  // an expression that does not compile
				d.Spec.Roles[1].PodsPerReplica = "size(pods)" // a check of a compiled expression
				d.Spec.Children[0].Selector = "{'app': 1}"
				d.Spec.Gang.Groups[0].MinMember = "size(pods)"
			},
			want: []fieldErr{
				{"spec.roles[0].podTemplate", field.ErrorTypeInvalid},
				{"spec.roles[1].replicas", field.ErrorTypeInvalid},
				{"spec.roles[1].podsPerReplica", field.ErrorTypeInvalid},
				{"spec.children[0].selector", field.ErrorTypeInvalid},
				{"spec.gang.groups[0].minMember", field.ErrorTypeInvalid},
			},
			wantMsg: []string{"the workload's shape comes from its spec", "gangs are decided before pods exist"},
		},
		"missing name": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Name = "" },
			want:   []fieldErr{{"metadata.name", field.ErrorTypeRequired}},
		},
		"missing kind and versions": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Workload.Kind, d.Spec.Workload.Versions = "", nil },
			want: []fieldErr{
				{"spec.workload.kind", field.ErrorTypeRequired},
				{"spec.workload.versions", field.ErrorTypeRequired},
			},
		},
		"no roles": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles, d.Spec.Gang = nil, nil },
			want:    []fieldErr{{"spec.roles", field.ErrorTypeRequired}},
			wantMsg: []string{"at least one role"},
		},
		"duplicate role names": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Roles[1].Name = "leader"
				d.Spec.Gang.Groups[0].Members = []string{"leader"}
			},
			want:    []fieldErr{{"spec.roles[1].name", field.ErrorTypeDuplicate}},
			wantMsg: []string{"leader (also spec.roles[0])"},
		},
		"role without a name": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Roles[1].Name = ""
				d.Spec.Gang.Groups[0].Members = []string{"leader"}
			},
			want: []fieldErr{{"spec.roles[1].name", field.ErrorTypeRequired}},
		},
		"role name that is not a DNS label": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Roles[1].Name = "my_workers"
				d.Spec.Gang.Groups[0].Members = []string{"leader", "my_workers"}
			},
			want: []fieldErr{{"spec.roles[1].name", field.ErrorTypeInvalid}},
		},
		"role with none of podTemplate, podSpec and podFields": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles[0].PodTemplate = "" },
			want:    []fieldErr{{"spec.roles[0]", field.ErrorTypeInvalid}},
			wantMsg: []string{"exactly one of podTemplate, podSpec and podFields"},
		},
		"role with podTemplate and podSpec": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles[0].PodSpec = "spec.leader.template.spec" },
			want:    []fieldErr{{"spec.roles[0]", field.ErrorTypeInvalid}},
			wantMsg: []string{"exactly one of podTemplate, podSpec and podFields"},
		},
		"role with podTemplate and podFields": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Roles[0].PodFields = &v1alpha1.PodFields{Resources: "spec.resources"}
			},
			want: []fieldErr{{"spec.roles[0]", field.ErrorTypeInvalid}},
		},
		"podFields path with [*]": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Roles[0].PodTemplate = ""
				d.Spec.Roles[0].PodFields = &v1alpha1.PodFields{Base: "spec", Resources: "parts[*].resources", Labels: "labels"}
			},
			want:    []fieldErr{{"spec.roles[0].podFields.resources", field.ErrorTypeInvalid}},
			wantMsg: []string{"must not contain [*]: put the [*] in podFields.base"},
		},
		"podFields path that does not parse": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Roles[0].PodTemplate = ""
				d.Spec.Roles[0].PodFields = &v1alpha1.PodFields{Base: "spec", Labels: "labels[", Resources: "resources"}
			},
			want: []fieldErr{{"spec.roles[0].podFields.labels", field.ErrorTypeInvalid}},
		},
		"podTemplate path that does not parse": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles[1].PodTemplate = "spec.workers[*" },
			want:    []fieldErr{{"spec.roles[1].podTemplate", field.ErrorTypeInvalid}},
			wantMsg: []string{`spec.workers[*`},
		},
		"duplicate child names from the same kind": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Children = append(d.Spec.Children, v1alpha1.ChildKind{Group: "batch", Version: "v2", Kind: "Job"})
			},
			want:    []fieldErr{{"spec.children[1]", field.ErrorTypeDuplicate}},
			wantMsg: []string{"jobs (also spec.children[0]); set name to tell them apart"},
		},
		"duplicate explicit child names": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Children = []v1alpha1.ChildKind{
					{Version: "v1", Kind: "Service", Name: "things"},
					{Group: "apps", Version: "v1", Kind: "Deployment", Name: "things"},
				}
			},
			want: []fieldErr{{"spec.children[1]", field.ErrorTypeDuplicate}},
		},
		"same kind twice with distinct names is fine": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Children = []v1alpha1.ChildKind{
					{Group: "batch", Version: "v1", Kind: "Job", Name: "mainJobs"},
					{Group: "batch", Version: "v1", Kind: "Job", Name: "otherJobs"},
				}
			},
		},
		"child without kind and version": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Children = []v1alpha1.ChildKind{{Group: "batch"}} },
			want: []fieldErr{
				{"spec.children[0].kind", field.ErrorTypeRequired},
				{"spec.children[0].version", field.ErrorTypeRequired},
			},
		},
		"empty pod selector": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Pods.Selector = "" },
			want:   []fieldErr{{"spec.pods.selector", field.ErrorTypeRequired}},
		},
		"bad status state": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Status[1].State = "Done" },
			want:    []fieldErr{{"spec.status[1].state", field.ErrorTypeNotSupported}},
			wantMsg: []string{`"Done"`, `"Running"`},
		},
		"status rule without when": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Status[0].When = "" },
			want:   []fieldErr{{"spec.status[0].when", field.ErrorTypeRequired}},
		},
		"gang without groups": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Gang.Groups = nil },
			want:   []fieldErr{{"spec.gang.groups", field.ErrorTypeRequired}},
		},
		"gang group without name or members": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Gang.Groups[0].Name, d.Spec.Gang.Groups[0].Members = "", nil
			},
			want: []fieldErr{
				{"spec.gang.groups[0].name", field.ErrorTypeRequired},
				{"spec.gang.groups[0].members", field.ErrorTypeRequired},
			},
		},
		"gang member that is not a role": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Gang.Groups[0].Members = append(d.Spec.Gang.Groups[0].Members, "launcher")
			},
			want:    []fieldErr{{"spec.gang.groups[0].members[2]", field.ErrorTypeNotFound}},
			wantMsg: []string{`"launcher"`},
		},
		"role in two groups": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Gang.Groups = append(d.Spec.Gang.Groups, v1alpha1.GangGroup{Name: "workers", Members: []string{"workers"}})
			},
			want:    []fieldErr{{"spec.gang.groups[1].members[0]", field.ErrorTypeInvalid}},
			wantMsg: []string{`already a member of group "all"`},
		},
		"duplicate group names": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Gang.Groups = []v1alpha1.GangGroup{
					{Name: "g", Members: []string{"leader"}},
					{Name: "g", Members: []string{"workers"}},
				}
			},
			want: []fieldErr{{"spec.gang.groups[1].name", field.ErrorTypeDuplicate}},
		},
		"group name that is not a DNS label": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Gang.Groups[0].Name = "All" },
			want:   []fieldErr{{"spec.gang.groups[0].name", field.ErrorTypeInvalid}},
		},
		"scope replica with a member that lacks podReplica": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Gang.Groups[0].Scope = v1alpha1.ScopeReplica
				d.Spec.Roles[1].PodReplica = ""
			},
			want:    []fieldErr{{"spec.roles[1].podReplica", field.ErrorTypeRequired}},
			wantMsg: []string{"role workers is in gang group all of scope replica"},
		},
		"scope replica whose members have podReplica": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Gang.Groups[0].Scope = v1alpha1.ScopeReplica },
		},
		"bad scope": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Gang.Groups[0].Scope = "cluster" },
			want:    []fieldErr{{"spec.gang.groups[0].scope", field.ErrorTypeNotSupported}},
			wantMsg: []string{`"cluster"`, `"replica"`},
		},
		"timeoutSeconds zero": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Gang.Groups[0].TimeoutSeconds = ptr.To[int32](0) },
			want:    []fieldErr{{"spec.gang.groups[0].timeoutSeconds", field.ErrorTypeInvalid}},
			wantMsg: []string{"between 1 and 86400"},
		},
		"timeoutSeconds above a day": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Gang.Groups[0].TimeoutSeconds = ptr.To[int32](86401) },
			want:   []fieldErr{{"spec.gang.groups[0].timeoutSeconds", field.ErrorTypeInvalid}},
		},
		"timeoutSeconds of exactly a day": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Gang.Groups[0].TimeoutSeconds = ptr.To[int32](86400) },
		},
		"undeclared CEL variable": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles[1].Replicas = "itme.replicas" },
			want:    []fieldErr{{"spec.roles[1].replicas", field.ErrorTypeInvalid}},
			wantMsg: []string{"spec.roles[1].replicas:", "undeclared reference to 'itme'"},
		},
		"CEL syntax error": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles[1].InstanceName = "item.name +" },
			want:   []fieldErr{{"spec.roles[1].instanceName", field.ErrorTypeInvalid}},
		},
		"replicas of the wrong type": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles[1].Replicas = "'three'" },
			want:    []fieldErr{{"spec.roles[1].replicas", field.ErrorTypeInvalid}},
			wantMsg: []string{"must evaluate to int, has type string"},
		},
		"status when of the wrong type": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Status[0].When = "1" },
			want:    []fieldErr{{"spec.status[0].when", field.ErrorTypeInvalid}},
			wantMsg: []string{"must evaluate to bool, has type int"},
		},
		"status reason of the wrong type": {
			mutate: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Status[0].Reason = "true" },
			want:   []fieldErr{{"spec.status[0].reason", field.ErrorTypeInvalid}},
		},
		"pod selector of the wrong type": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Pods.Selector = "self.metadata.name == 'x'" },
			want:    []fieldErr{{"spec.pods.selector", field.ErrorTypeInvalid}},
			wantMsg: []string{"must evaluate to map(string, string)"},
		},
		"minMember using pods": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Gang.Groups[0].MinMember = "size(pods)" },
			want:    []fieldErr{{"spec.gang.groups[0].minMember", field.ErrorTypeInvalid}},
			wantMsg: []string{"must not use children or pods"},
		},
		"minMember using children": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Gang.Groups[0].MinMember = "size(children.jobs)"
			},
			want: []fieldErr{{"spec.gang.groups[0].minMember", field.ErrorTypeInvalid}},
		},
		"replicas using children": {
			mutate:  func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles[1].Replicas = "size(children.jobs)" },
			want:    []fieldErr{{"spec.roles[1].replicas", field.ErrorTypeInvalid}},
			wantMsg: []string{"the workload's shape comes from its spec"},
		},
		"status rules may use children and pods": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Status[0].When = "children.jobs.all(j, has(j.status)) && pods.all(p, has(p.status))"
			},
		},
		"minMember may use replica in scope replica": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Gang.Groups[0].Scope = v1alpha1.ScopeReplica
				d.Spec.Gang.Groups[0].MinMember = "replica == 0 ? 3 : 2"
			},
		},
		"every structural problem is reported at once": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Name = ""
				d.Spec.Roles[0].PodTemplate = ""
				d.Spec.Status[0].State = "Bad"
				d.Spec.Gang.Groups[0].Scope = "x"
			},
			want: []fieldErr{
				{"metadata.name", field.ErrorTypeRequired},
				{"spec.roles[0]", field.ErrorTypeInvalid},
				{"spec.status[0].state", field.ErrorTypeNotSupported},
				{"spec.gang.groups[0].scope", field.ErrorTypeNotSupported},
			},
		},
		"every expression problem is reported at once": {
			mutate: func(d *v1alpha1.WorkloadDefinition) {
				d.Spec.Roles[0].Replicas = "nope"
				d.Spec.Roles[1].PodsPerReplica = "item.hosts == 1"
				d.Spec.Status[1].Reason = "size(pods)"
			},
			want: []fieldErr{
				{"spec.roles[0].replicas", field.ErrorTypeInvalid},
				{"spec.roles[1].podsPerReplica", field.ErrorTypeInvalid},
				{"spec.status[1].reason", field.ErrorTypeInvalid},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			def := validDef()
			tc.mutate(def)
			d, err := definitions.Compile(def, definitions.CompileOptions{})
			if tc.want == nil {
				require.NoError(t, err)
				require.NotNil(t, d)
				require.Empty(t, definitions.Validate(def))
				return
			}
			require.Error(t, err)
			require.Nil(t, d)
			var defErr *definitions.DefinitionError
			require.True(t, errors.As(err, &defErr), "error %T is not a *DefinitionError", err)
			require.Equal(t, def.Name, defErr.Name)
			var got []fieldErr
			for _, e := range defErr.Errors {
				got = append(got, fieldErr{e.Field, e.Type})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error: %v", diff, err)
			}
			require.Contains(t, err.Error(), "is invalid:")
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w.Field+":")
			}
			for _, msg := range tc.wantMsg {
				require.Contains(t, err.Error(), msg)
			}
		})
	}
}

// TestValidateDoesNotCompileExpressions checks that Validate is structural only: a broken
// expression passes it and fails in Compile.
func TestValidateDoesNotCompileExpressions(t *testing.T) {
	def := validDef()
	def.Spec.Roles[0].Replicas = "itme.replicas"
	require.Empty(t, definitions.Validate(def))
	_, err := definitions.Compile(def, definitions.CompileOptions{})
	require.ErrorContains(t, err, "spec.roles[0].replicas")
}

func TestValidateSet(t *testing.T) {
	def := func(name, group, kind string) *v1alpha1.WorkloadDefinition {
		d := validDef()
		d.Name, d.Spec.Workload.Group, d.Spec.Workload.Kind = name, group, kind
		return d
	}
	tests := map[string]struct {
		defs    []*v1alpha1.WorkloadDefinition
		wantErr []string
	}{
		"empty set": {},
		"distinct kinds": {
			defs: []*v1alpha1.WorkloadDefinition{def("a", "example.com", "Thing"), def("b", "example.com", "Other")},
		},
		"same kind in different groups": {
			defs: []*v1alpha1.WorkloadDefinition{def("a", "example.com", "Thing"), def("b", "example.org", "Thing")},
		},
		"two definitions for one group/kind": {
			defs:    []*v1alpha1.WorkloadDefinition{def("a", "example.com", "Thing"), def("c", "x.io", "Y"), def("b", "example.com", "Thing")},
			wantErr: []string{`"a"`, `"b"`, "Thing.example.com", "keep one"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := definitions.ValidateSet(tc.defs)
			_, compileErr := definitions.CompileAll(tc.defs, nil)
			if tc.wantErr == nil {
				require.NoError(t, err)
				require.NoError(t, compileErr)
				return
			}
			require.Error(t, err)
			require.Equal(t, err, compileErr)
			for _, s := range tc.wantErr {
				require.ErrorContains(t, err, s)
			}
		})
	}
}

func TestCompileAllNamesTheSource(t *testing.T) {
	good, bad := validDef(), validDef()
	bad.Spec.Workload.Kind = "Other"
	bad.Spec.Roles[0].Replicas = "itme"
	_, err := definitions.CompileAll([]*v1alpha1.WorkloadDefinition{good, bad}, []string{"good.yaml", "bad.yaml"})
	require.ErrorContains(t, err, "bad.yaml: ")
	require.ErrorContains(t, err, "spec.roles[0].replicas")
	var defErr *definitions.DefinitionError
	require.ErrorAs(t, err, &defErr)
}

func TestChildNames(t *testing.T) {
	def := validDef()
	def.Spec.Children = []v1alpha1.ChildKind{
		{Group: "batch", Version: "v1", Kind: "Job"},
		{Group: "grove.io", Version: "v1alpha1", Kind: "PodClique"},
		{Version: "v1", Kind: "Service"},
		{Group: "x.io", Version: "v1", Kind: "Policy"},
		{Group: "x.io", Version: "v1", Kind: "Gateway"},
		{Group: "x.io", Version: "v1", Kind: "Box"},
		{Group: "x.io", Version: "v1", Kind: "Switch"},
		{Group: "x.io", Version: "v1", Kind: "Mesh"},
		{Group: "x.io", Version: "v1", Kind: "Ingress", Name: "ingressObjects"},
	}
	d, err := definitions.Compile(def, definitions.CompileOptions{})
	require.NoError(t, err)
	var got []string
	for _, c := range d.Children() {
		got = append(got, c.Name+"="+c.GroupVersionKind.String())
	}
	want := []string{
		"jobs=batch/v1, Kind=Job",
		"podCliques=grove.io/v1alpha1, Kind=PodClique",
		"services=/v1, Kind=Service",
		"policies=x.io/v1, Kind=Policy",
		"gateways=x.io/v1, Kind=Gateway",
		"boxes=x.io/v1, Kind=Box",
		"switches=x.io/v1, Kind=Switch",
		"meshes=x.io/v1, Kind=Mesh",
		"ingressObjects=x.io/v1, Kind=Ingress",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
}

func TestDecode(t *testing.T) {
	const header = "apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\n"
	tests := map[string]struct {
		src       string
		wantNames []string
		wantErr   []string
	}{
		"one definition": {
			src:       jobSetDef,
			wantNames: []string{"jobsets.jobset.x-k8s.io"},
		},
		"several documents and other kinds": {
			src: header + "metadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n---\n# just a comment\n---\n" +
				header + "metadata: {name: b}\n",
			wantNames: []string{"a", "b"},
		},
		"a List of definitions": {
			src: "apiVersion: v1\nkind: List\nitems:\n" +
				"- apiVersion: workmap.dev/v1alpha1\n  kind: WorkloadDefinition\n  metadata: {name: a}\n  spec: {workload: {kind: A}}\n" +
				"- apiVersion: workmap.dev/v1alpha1\n  kind: WorkloadDefinition\n  metadata: {name: b}\n",
			wantNames: []string{"a", "b"},
		},
		"unknown field": {
			src:     header + "metadata: {name: typo}\nspec:\n  roles:\n  - name: a\n    podTemplat: spec.template\n",
			wantErr: []string{"test.yaml:1:", `"typo"`, `unknown field "podTemplat"`},
		},
		"unknown field in the second document": {
			src:     header + "metadata: {name: a}\n---\n" + header + "metadata: {name: b}\nspec:\n  gang: {groupz: []}\n",
			wantErr: []string{"test.yaml:5:", `WorkloadDefinition "b"`, `unknown field "groupz"`},
		},
		"unknown field in a List item": {
			src: "apiVersion: v1\nkind: List\nitems:\n" +
				"- apiVersion: workmap.dev/v1alpha1\n  kind: WorkloadDefinition\n  metadata: {name: a}\n  spec: {roles: [{name: x, podTemplat: y}]}\n",
			wantErr: []string{`unknown field "podTemplat"`},
		},
		"malformed YAML": {
			src:     header + "metadata:\n  name: x\nspec:\n  roles: [\n  - name: a\n",
			wantErr: []string{"test.yaml:", "malformed YAML"},
		},
		"malformed YAML in the second document": {
			src:     header + "metadata: {name: a}\n---\n" + header + "metadata:\n  name: b\n   bad: indent\n",
			wantErr: []string{"test.yaml:9:", "malformed YAML"},
		},
		"wrong type of field": {
			src:     header + "metadata: {name: a}\nspec:\n  roles: {name: a}\n",
			wantErr: []string{"test.yaml:1:", `"a"`},
		},
		"unsupported version": {
			src:     "apiVersion: workmap.dev/v1beta9\nkind: WorkloadDefinition\nmetadata: {name: a}\n",
			wantErr: []string{"test.yaml:1:", "unsupported version v1beta9"},
		},
		"document that is not an object": {
			src:     "just: a map\n",
			wantErr: []string{"test.yaml:1:", "not a Kubernetes object"},
		},
		"empty input": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			defs, err := definitions.Decode([]byte(tc.src), "test.yaml")
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, s := range tc.wantErr {
					require.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			var names []string
			for _, d := range defs {
				names = append(names, d.Name)
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeMalformedYAMLLine checks that the line reported is where the problem is.
func TestDecodeMalformedYAMLLine(t *testing.T) {
	src := strings.Join([]string{
		"apiVersion: workmap.dev/v1alpha1", // 1
		"kind: WorkloadDefinition",         // 2
		"metadata: {name: a}",              // 3
		"spec:",                            // 4
		"  workload: {kind: A}",            // 5
		"  roles:",                         // 6
		"  - name: a",                      // 7
		"    replicas: \"1\"",              // 8
		"    podTemplate: [unclosed",       // 9
		"",
	}, "\n")
	_, err := definitions.Decode([]byte(src), "defs/a.yaml")
	require.Error(t, err)
	require.Regexp(t, `^defs/a\.yaml:(9|10): malformed YAML`, err.Error())
}
