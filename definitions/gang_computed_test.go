package definitions_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
)

// TestComputedGroups: a computed group lists PodGroups the roles and replicas do not give
// (Grove-style scaled copies); each pod either names its entry or falls to the role's plain
// group.
func TestComputedGroups(t *testing.T) {
	def := thingDef(`
roles:
- name: worker
  podTemplate: spec.template
  replicas: "self.spec.replicas"
  podsPerReplica: "self.spec.copies * 2"
  podInstance: "'worker'"
  podReplica: "pod.metadata.labels.replica"
gang:
  groups:
  - name: base
    members: [worker]
    scope: replica
    minMember: "2"
  - name: scaled
    members: [worker]
    scope: replica
    computed: "[{'name': 'copy', 'minMember': 2, 'count': self.spec.copies - 1}]"
    podGroup: "pod.metadata.labels.copy == '0' ? '' : 'copy-' + string(int(pod.metadata.labels.copy) - 1)"
`)
	obj := `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t, namespace: ns}
spec:
  replicas: 2
  copies: 3
  template: {spec: {containers: [{name: c, image: i}]}}
`
	w := expand(t, def, obj)
	var got []string
	for _, g := range w.Groups {
		got = append(got, fmt.Sprintf("%s/%s/%d:%d", g.Name, g.Instance, *g.Replica, g.MinMember))
	}
	require.Equal(t, []string{
		"base//0:2", "base//1:2",
		"scaled/copy-0/0:2", "scaled/copy-1/0:2", "scaled/copy-0/1:2", "scaled/copy-1/1:2",
	}, got)
	require.Empty(t, w.Warnings)

	tests := map[string]struct {
		replica, copy string
		want          string
	}{
		"first copy joins the base gang of its replica": {replica: "1", copy: "0", want: "t-base-1"},
		"second copy has its own gang":                  {replica: "0", copy: "1", want: "t-scaled-copy-0-0"},
		"third copy of replica 1":                       {replica: "1", copy: "2", want: "t-scaled-copy-1-1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := objectMap(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {replica: %q, copy: %q}}", tc.replica, tc.copy))
			p, ok, err := w.Place(pod)
			require.NoError(t, err)
			require.True(t, ok)
			require.NotNil(t, p.Group)
			require.Equal(t, tc.want, p.Group.PodGroupName("t"))
		})
	}
}

func TestComputedGroupsValidation(t *testing.T) {
	tests := map[string]struct {
		group   string
		wantErr string
	}{
		"computed without podGroup": {group: `{name: g, members: [w], computed: "[]"}`, wantErr: "computed and podGroup go together"},
		"podGroup without computed": {group: `{name: g, members: [w], podGroup: "''"}`, wantErr: "computed and podGroup go together"},
		"computed must be a list":   {group: `{name: g, members: [w], computed: "1", podGroup: "''"}`, wantErr: "must evaluate to list"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := definitionsCompile(t, thingDef("roles:\n- {name: w, podTemplate: spec.template}\ngang:\n  groups:\n  - "+tc.group+"\n"))
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
	w := expand(t, thingDef(`
roles:
- {name: w, podTemplate: spec.template}
gang:
  groups:
  - {name: g, members: [w], computed: "[{'name': 'a', 'minMember': 2}, {'name': 'a', 'minMember': 3}]", podGroup: "''"}
`), "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {template: {}}\n")
	require.Contains(t, w.Warnings[0], `duplicate name "a"`)
}

// TestInstanceReplicaScope: one group per role and replica, pods placed by both.
func TestInstanceReplicaScope(t *testing.T) {
	w := expand(t, thingDef(`
roles:
- name: svc
  podTemplate: spec.services[*].template
  replicas: "item.replicas"
  podsPerReplica: "item.nodes"
  podInstance: "pod.metadata.labels.svc"
  podReplica: "pod.metadata.labels.replica"
gang:
  groups:
  - {name: node, members: [svc], scope: instanceReplica}
`), `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  services:
  - {name: decode, replicas: 2, nodes: 4, template: {}}
  - {name: frontend, replicas: 3, nodes: 1, template: {}}
`)
	var got []string
	for _, g := range w.Groups {
		got = append(got, g.PodGroupName("t")+fmt.Sprintf(":%d", g.MinMember))
	}
	require.Equal(t, []string{"t-node-decode-0:4", "t-node-decode-1:4"}, got, "single-pod replicas get no gang")
	p, ok, err := w.Place(objectMap(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {svc: decode, replica: '1'}}"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "t-node-decode-1", p.Group.PodGroupName("t"))
	p, _, _ = w.Place(objectMap(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: q, labels: {svc: frontend, replica: '0'}}"))
	require.Nil(t, p.Group)
}

func definitionsCompile(t *testing.T, src string) (any, error) {
	t.Helper()
	return definitions.Compile(decodeOne(t, src), definitions.CompileOptions{})
}
