package definitions_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGroupRoles: each gang names the roles of the tree whose pods it holds.
func TestGroupRoles(t *testing.T) {
	perInstanceReplica := thingDef(`
roles:
- name: component
  podTemplate: spec.components[*].template
  instanceName: item.name
  replicas: item.?replicas.orValue(1)
  podsPerReplica: item.?nodes.orValue(1)
  podInstance: pod.metadata.labels.component
  podReplica: pod.metadata.labels.replica
gang:
  groups:
  - name: multinode
    members: [component]
    scope: instanceReplica
`)
	perReplica := thingDef(`
roles:
- name: leader
  podTemplate: spec.template
  replicas: self.spec.replicas
  podInstance: "'leader'"
  podReplica: pod.metadata.labels.replica
- name: worker
  podTemplate: spec.template
  replicas: self.spec.workers
  podsPerReplica: "2"
  podInstance: "'worker'"
  podReplica: pod.metadata.labels.replica
gang:
  groups:
  - name: group
    members: [leader, worker]
    scope: replica
`)
	computed := thingDef(`
roles:
- name: worker
  podTemplate: spec.template
  replicas: "1"
gang:
  groups:
  - name: scaled
    members: [worker]
    computed: "[{'name': 'copy', 'minMember': 2}]"
    podGroup: "'copy'"
`)
	tests := map[string]struct {
		def, obj string
		want     []string // per gang: name/instance/replica: roles
	}{
		"workload scope: every member role with pods": {
			def: rayDef, obj: rayThing("", twoWorkerGroups+`
  - groupName: idle
    replicas: 0
    template: {spec: {containers: [{name: w}]}}`),
			want: []string{"cluster//-: [head big small]"},
		},
		"instance and replica: the instance alone, though two instances share the gang's name": {
			def: perInstanceReplica,
			obj: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  components:
  - {name: decode, nodes: 2, template: {spec: {containers: [{name: c}]}}}
  - {name: prefill, nodes: 2, template: {spec: {containers: [{name: c}]}}}
`,
			want: []string{"multinode/decode/0: [decode]", "multinode/prefill/0: [prefill]"},
		},
		"replica scope: the roles that have the replica": {
			def: perReplica,
			obj: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec: {replicas: 1, workers: 2, template: {spec: {containers: [{name: c}]}}}
`,
			want: []string{"group//0: [leader worker]", "group//1: [worker]"},
		},
		"computed: named by its entry, every member role may join": {
			def: computed,
			obj: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec: {template: {spec: {containers: [{name: c}]}}}
`,
			want: []string{"scaled/copy/-: [worker]"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, tc.def, tc.obj)
			var got []string
			for _, g := range w.Groups {
				replica := "-"
				if g.Replica != nil {
					replica = fmt.Sprint(*g.Replica)
				}
				got = append(got, fmt.Sprintf("%s/%s/%s: %v", g.Name, g.Instance, replica, w.GroupRoles(g)))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("gangs' roles (-want +got):\n%s", diff)
			}
		})
	}
}
