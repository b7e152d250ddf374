package definitions_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/crdschema"
)

// topologyDef is a Thing definition whose one gang reads its topology levels from the object,
// the way catalog definitions read a framework's topology fields.
func topologyDef(topology string) string {
	return thingDef(`
roles:
- name: worker
  podTemplate: spec.template
  replicas: "self.spec.replicas"
gang:
  groups:
  - name: all
    members: [worker]
` + indent(topology, "    "))
}

// topologyThing is a Thing of 3 pods with the given annotations and spec fields.
func topologyThing(annotations, spec string) string {
	return `
apiVersion: example.com/v1
kind: Thing
metadata:
  name: t
  namespace: ns
  annotations: {` + annotations + `}
spec:
  replicas: 3
  template: {spec: {containers: [{name: c, image: i}]}}
` + indent(spec, "  ")
}

// fromSpec maps the object's spec.required and spec.preferred, "" when absent.
const fromSpec = `
topology:
  required: "self.spec.?required.orValue('')"
  preferred: "self.spec.?preferred.orValue('')"
`

// TestGangTopology: the definition's topology levels, evaluated for the object, and the
// workload's annotations, each overriding its level on its own.
func TestGangTopology(t *testing.T) {
	tests := map[string]struct {
		topology    string // the group's topology in the definition, "" for none
		annotations string
		spec        string
		want        *definitions.GroupTopology
		// wantWarnings are substrings of the workload's warnings, in order; nil: none.
		wantWarnings []string
	}{
		"definition gives both levels": {
			topology: fromSpec,
			spec:     "required: topology.kubernetes.io/zone\npreferred: rack",
			want:     &definitions.GroupTopology{Required: "topology.kubernetes.io/zone", Preferred: "rack", Source: "definition"},
		},
		"definition gives the required level only": {
			topology: fromSpec,
			spec:     "required: rack",
			want:     &definitions.GroupTopology{Required: "rack", Source: "definition"},
		},
		"nested: each part of the gang in one rack, the gang in one zone": {
			topology: "topology:\n  required: \"'zone'\"\n  nested: {scope: instance, required: \"'rack'\"}",
			want:     &definitions.GroupTopology{Required: "zone", Source: "definition", Nested: &definitions.NestedGroupTopology{Scope: v1alpha1.ScopeInstance, Required: "rack"}},
		},
		"nested alone: the parts constrained, the gang anywhere": {
			topology: "topology:\n  nested: {scope: replica, required: \"'rack'\"}",
			want:     &definitions.GroupTopology{Source: "definition", Nested: &definitions.NestedGroupTopology{Scope: v1alpha1.ScopeReplica, Required: "rack"}},
		},
		"two nested levels: each part in one block, each smaller part in one rack of it": {
			topology: "topology:\n  required: \"'zone'\"\n  nested: {scope: replica, required: \"'block'\", nested: {scope: instanceReplica, required: \"'rack'\"}}",
			want: &definitions.GroupTopology{Required: "zone", Source: "definition", Nested: &definitions.NestedGroupTopology{
				Scope: v1alpha1.ScopeReplica, Required: "block", Nested: &definitions.NestedGroupTopology{Scope: v1alpha1.ScopeInstanceReplica, Required: "rack"},
			}},
		},
		"two nested levels, the outer empty: the inner is the only one": {
			topology: "topology:\n  nested: {scope: replica, required: \"self.spec.?outer.orValue('')\", nested: {scope: instanceReplica, required: \"'rack'\"}}",
			want:     &definitions.GroupTopology{Source: "definition", Nested: &definitions.NestedGroupTopology{Scope: v1alpha1.ScopeInstanceReplica, Required: "rack"}},
		},
		"empty strings are no constraint": {
			topology: fromSpec,
			want:     nil,
		},
		"definition without topology, no annotations": {
			want: nil,
		},
		"required annotation overrides the definition's required level only": {
			topology:    fromSpec,
			annotations: `workmap.dev/topology-required: block`,
			spec:        "required: rack\npreferred: host",
			want:        &definitions.GroupTopology{Required: "block", Preferred: "host", Source: "annotation"},
		},
		"preferred annotation overrides the definition's preferred level only": {
			topology:    fromSpec,
			annotations: `workmap.dev/topology-preferred: kubernetes.io/hostname`,
			spec:        "required: rack\npreferred: host",
			want:        &definitions.GroupTopology{Required: "rack", Preferred: "kubernetes.io/hostname", Source: "annotation"},
		},
		"both annotations override both levels": {
			topology:    fromSpec,
			annotations: `workmap.dev/topology-required: block, workmap.dev/topology-preferred: rack`,
			spec:        "required: zone\npreferred: host",
			want:        &definitions.GroupTopology{Required: "block", Preferred: "rack", Source: "annotation"},
		},
		"annotations constrain a group the definition leaves unconstrained": {
			annotations: `workmap.dev/topology-required: rack`,
			want:        &definitions.GroupTopology{Required: "rack", Source: "annotation"},
		},
		"annotation gives a level the definition leaves empty": {
			topology:    fromSpec,
			annotations: `workmap.dev/topology-preferred: rack`,
			want:        &definitions.GroupTopology{Preferred: "rack", Source: "annotation"},
		},
		"empty annotation removes the definition's level": {
			topology:    fromSpec,
			annotations: `workmap.dev/topology-required: ""`,
			spec:        "required: rack",
			want:        nil,
		},
		"annotation values are trimmed": {
			annotations: `workmap.dev/topology-required: " rack "`,
			want:        &definitions.GroupTopology{Required: "rack", Source: "annotation"},
		},
		"annotation that is not a level is ignored with a warning": {
			topology:     fromSpec,
			annotations:  `workmap.dev/topology-required: "two racks!"`,
			spec:         "required: rack",
			want:         &definitions.GroupTopology{Required: "rack", Source: "definition"},
			wantWarnings: []string{`annotation workmap.dev/topology-required ignored: "two racks!" is neither a topology level name nor a node label key`},
		},
		"evaluation error is reported and leaves the group unconstrained": {
			topology:     "topology: {required: \"self.spec.level\", preferred: \"'rack'\"}",
			want:         nil,
			wantWarnings: []string{"gang group all: spec.gang.groups[0].topology.required: no such key: level"},
		},
		"evaluation error of the preferred level drops the required one too": {
			topology:     "topology: {required: \"'rack'\", preferred: \"self.spec.level\"}",
			want:         nil,
			wantWarnings: []string{"gang group all: spec.gang.groups[0].topology.preferred: no such key: level"},
		},
		"evaluation error with an annotation: the annotation still applies": {
			topology:     "topology: {required: \"self.spec.level\"}",
			annotations:  `workmap.dev/topology-preferred: rack`,
			want:         &definitions.GroupTopology{Preferred: "rack", Source: "annotation"},
			wantWarnings: []string{"gang group all: spec.gang.groups[0].topology.required: no such key: level"},
		},
		"an overridden level is not evaluated": {
			topology:    "topology: {required: \"self.spec.level\"}",
			annotations: `workmap.dev/topology-required: rack`,
			want:        &definitions.GroupTopology{Required: "rack", Source: "annotation"},
		},
		"value that is not a level is reported and leaves the group unconstrained": {
			topology:     fromSpec,
			spec:         "required: rack/../zone\npreferred: host",
			want:         nil,
			wantWarnings: []string{`gang group all: spec.gang.groups[0].topology.required: "rack/../zone" is neither a topology level name nor a node label key`},
		},
		"null is no constraint": {
			topology: "topology: {required: \"self.spec.?level.orValue(null)\"}",
			want:     nil,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, topologyDef(tc.topology), topologyThing(tc.annotations, tc.spec))
			require.Len(t, w.Groups, 1)
			if diff := cmp.Diff(tc.want, w.Groups[0].Topology); diff != "" {
				t.Errorf("topology (-want +got):\n%s", diff)
			}
			require.Len(t, w.Warnings, len(tc.wantWarnings), "warnings %q", w.Warnings)
			for i, want := range tc.wantWarnings {
				require.Contains(t, w.Warnings[i], want)
			}
		})
	}
}

// TestGangTopologyPerPodGroup: the levels are evaluated for each PodGroup in the activation
// of its minMember: `replica` per replica, `item` and `key` per instance, both per instance
// and replica, `replica` per computed entry.
func TestGangTopologyPerPodGroup(t *testing.T) {
	obj := `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t, namespace: ns}
spec:
  replicas: 2
  template: {spec: {containers: [{name: c, image: i}]}}
  parts:
  - {name: big, hosts: 4, level: rack, template: {spec: {containers: [{name: c, image: i}]}}}
  - {name: small, hosts: 2, template: {spec: {containers: [{name: c, image: i}]}}}
`
	perReplica := `
roles:
- name: worker
  podTemplate: spec.template
  replicas: "self.spec.replicas"
  podsPerReplica: "3"
  podReplica: "pod.metadata.labels.replica"
gang:
  groups:
  - name: group
    members: [worker]
    scope: replica
    topology:
      required: "replica == 0 ? 'rack' : 'block'"
      preferred: "'host-' + string(replica)"
`
	parts := func(scope, topology string) string {
		return `
roles:
- name: part
  podTemplate: spec.parts[*].template
  instanceName: item.name
  replicas: "self.spec.replicas"
  podsPerReplica: "item.hosts"
  podReplica: "pod.metadata.labels.replica"
gang:
  groups:
  - name: part
    members: [part]
    scope: ` + scope + `
    topology:
` + indent(topology, "      ")
	}
	computed := `
roles:
- name: worker
  podTemplate: spec.template
  replicas: "self.spec.replicas"
  podsPerReplica: "4"
  podInstance: "'worker'"
  podReplica: "pod.metadata.labels.replica"
gang:
  groups:
  - name: copies
    members: [worker]
    scope: replica
    computed: "[{'name': 'copy', 'minMember': 2, 'count': 2}]"
    podGroup: "pod.metadata.labels.copy"
    topology:
      required: "'rack-of-replica-' + string(replica)"
`
	tests := map[string]struct {
		def  string
		want []string
	}{
		"per replica, with replica bound": {
			def:  perReplica,
			want: []string{"group/0: rack host-0 definition", "group/1: block host-1 definition"},
		},
		"per instance, with item and key bound": {
			def: parts("instance", `required: "item.?level.orValue('')"
preferred: "key == '1' ? 'host' : ''"`),
			want: []string{"part/big: rack  definition", "part/small:  host definition"},
		},
		"per instance and replica, with item and replica bound": {
			def:  parts("instanceReplica", `required: "item.name + '-' + string(replica)"`),
			want: []string{"part/big/0: big-0  definition", "part/big/1: big-1  definition", "part/small/0: small-0  definition", "part/small/1: small-1  definition"},
		},
		"per computed entry, with replica bound": {
			def: computed,
			want: []string{
				"copies/copy-0/0: rack-of-replica-0  definition", "copies/copy-1/0: rack-of-replica-0  definition",
				"copies/copy-0/1: rack-of-replica-1  definition", "copies/copy-1/1: rack-of-replica-1  definition",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, thingDef(tc.def), obj)
			require.Empty(t, w.Warnings)
			var got []string
			for _, g := range w.Groups {
				id := g.Name
				if g.Instance != "" {
					id += "/" + g.Instance
				}
				if g.Replica != nil {
					id += fmt.Sprintf("/%d", *g.Replica)
				}
				require.NotNil(t, g.Topology, id)
				got = append(got, fmt.Sprintf("%s: %s %s %s", id, g.Topology.Required, g.Topology.Preferred, g.Topology.Source))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestGangTopologyErrorOncePerGroup: an expression that fails for every replica is reported
// once, and no PodGroup is constrained.
func TestGangTopologyErrorOncePerGroup(t *testing.T) {
	w := expand(t, thingDef(`
roles:
- name: worker
  podTemplate: spec.template
  replicas: "self.spec.replicas"
  podsPerReplica: "2"
  podReplica: "pod.metadata.labels.replica"
gang:
  groups:
  - name: group
    members: [worker]
    scope: replica
    topology: {required: "self.spec.level"}
`), topologyThing("", ""))
	require.Len(t, w.Groups, 3)
	for _, g := range w.Groups {
		require.Nil(t, g.Topology)
	}
	require.Len(t, w.Warnings, 1)
	require.Contains(t, w.Warnings[0], "gang group group: spec.gang.groups[0].topology.required:")
}

// topologyCRD is the CRD of Thing: the types topology expressions are checked against.
const topologyCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  names: {kind: Thing, listKind: ThingList, plural: things, singular: thing}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              replicas: {type: integer}
              level: {type: string}
              template:
                type: object
                x-kubernetes-preserve-unknown-fields: true
              parts:
                type: array
                items:
                  type: object
                  properties:
                    name: {type: string}
                    hosts: {type: integer}
                    level: {type: string}
                    template:
                      type: object
                      x-kubernetes-preserve-unknown-fields: true
`

// TestGangTopologyCompile: topology levels are string expressions, checked like minMember:
// with the group's variables, without live data, and typed against the CRD when one is given.
func TestGangTopologyCompile(t *testing.T) {
	crds, err := crdschema.Parse([]byte(topologyCRD))
	require.NoError(t, err)
	require.Len(t, crds, 1)
	def := func(scope string, topology v1alpha1.GangTopology) *v1alpha1.WorkloadDefinition {
		d := decodeOne(t, thingDef(`
roles:
- name: part
  podTemplate: spec.parts[*].template
  replicas: "self.spec.replicas"
  podsPerReplica: "item.hosts"
  podReplica: "pod.metadata.labels.replica"
gang:
  groups:
  - {name: part, members: [part]}
`))
		d.Spec.Gang.Groups[0].Scope = v1alpha1.GangScope(scope)
		d.Spec.Gang.Groups[0].Topology = &topology
		return d
	}
	tests := map[string]struct {
		scope    string
		topology v1alpha1.GangTopology
		withCRD  bool
		// want is the one error expected, nil when the definition compiles.
		want    *fieldErr
		wantMsg string
	}{
		"string levels compile": {
			topology: v1alpha1.GangTopology{Required: "self.spec.?level.orValue('')", Preferred: "'rack'"},
		},
		"string levels compile against the CRD": {
			topology: v1alpha1.GangTopology{Required: "self.spec.?level.orValue('')", Preferred: "'rack'"},
			withCRD:  true,
		},
		"required of type int": {
			topology: v1alpha1.GangTopology{Required: "1"},
			want:     &fieldErr{"spec.gang.groups[0].topology.required", field.ErrorTypeInvalid},
			wantMsg:  "must evaluate to string, has type int",
		},
		"preferred of type bool": {
			topology: v1alpha1.GangTopology{Preferred: "self.spec.replicas > 1"},
			want:     &fieldErr{"spec.gang.groups[0].topology.preferred", field.ErrorTypeInvalid},
			wantMsg:  "must evaluate to string, has type bool",
		},
		"a field of type int, caught only against the CRD": {
			topology: v1alpha1.GangTopology{Required: "self.spec.replicas"},
			withCRD:  true,
			want:     &fieldErr{"spec.gang.groups[0].topology.required", field.ErrorTypeInvalid},
			wantMsg:  "must evaluate to string, has type int",
		},
		"a field the CRD does not have": {
			topology: v1alpha1.GangTopology{Preferred: "self.spec.rack"},
			withCRD:  true,
			want:     &fieldErr{"spec.gang.groups[0].topology.preferred", field.ErrorTypeInvalid},
			wantMsg:  "undefined field 'rack'",
		},
		"a field of type int, dynamic without the CRD": {
			topology: v1alpha1.GangTopology{Required: "self.spec.replicas"},
		},
		"item in scope instance, typed by the CRD": {
			scope:    "instance",
			topology: v1alpha1.GangTopology{Required: "item.?level.orValue('')"},
			withCRD:  true,
		},
		"item of the wrong type in scope instance": {
			scope:    "instance",
			topology: v1alpha1.GangTopology{Required: "item.hosts"},
			withCRD:  true,
			want:     &fieldErr{"spec.gang.groups[0].topology.required", field.ErrorTypeInvalid},
			wantMsg:  "has type int",
		},
		"item in scope workload": {
			topology: v1alpha1.GangTopology{Required: "item.level"},
			want:     &fieldErr{"spec.gang.groups[0].topology.required", field.ErrorTypeInvalid},
			wantMsg:  "undeclared reference to 'item'",
		},
		"replica in scope replica": {
			scope:    "replica",
			topology: v1alpha1.GangTopology{Preferred: "replica == 0 ? 'rack' : ''"},
		},
		"pods are not known when gangs are decided": {
			topology: v1alpha1.GangTopology{Required: "string(size(pods))"},
			want:     &fieldErr{"spec.gang.groups[0].topology.required", field.ErrorTypeInvalid},
			wantMsg:  "must not use children or pods",
		},
		"two nested levels compile": {
			topology: v1alpha1.GangTopology{Required: "'zone'", Nested: &v1alpha1.NestedTopology{
				Scope: v1alpha1.ScopeInstance, Required: "'block'",
				Nested: &v1alpha1.InnerNestedTopology{Scope: v1alpha1.ScopeInstanceReplica, Required: "self.spec.?rack.orValue('')"},
			}},
		},
		"the inner nested level of type int": {
			topology: v1alpha1.GangTopology{Nested: &v1alpha1.NestedTopology{
				Scope: v1alpha1.ScopeReplica, Required: "'block'",
				Nested: &v1alpha1.InnerNestedTopology{Scope: v1alpha1.ScopeInstanceReplica, Required: "1"},
			}},
			want:    &fieldErr{"spec.gang.groups[0].topology.nested.nested.required", field.ErrorTypeInvalid},
			wantMsg: "must evaluate to string, has type int",
		},
		"smaller parts inside parts of scope instanceReplica": {
			topology: v1alpha1.GangTopology{Nested: &v1alpha1.NestedTopology{
				Scope: v1alpha1.ScopeInstanceReplica, Required: "'block'",
				Nested: &v1alpha1.InnerNestedTopology{Scope: v1alpha1.ScopeInstanceReplica, Required: "'rack'"},
			}},
			want:    &fieldErr{"spec.gang.groups[0].topology.nested.scope", field.ErrorTypeInvalid},
			wantMsg: "parts of scope instanceReplica have no smaller parts",
		},
		"smaller parts of a scope no finer than their parts": {
			topology: v1alpha1.GangTopology{Nested: &v1alpha1.NestedTopology{
				Scope: v1alpha1.ScopeInstance, Required: "'block'",
				Nested: &v1alpha1.InnerNestedTopology{Scope: v1alpha1.ScopeReplica, Required: "'rack'"},
			}},
			want:    &fieldErr{"spec.gang.groups[0].topology.nested.nested.scope", field.ErrorTypeNotSupported},
			wantMsg: "supported values: \"instanceReplica\"",
		},
		"neither level": {
			topology: v1alpha1.GangTopology{},
			want:     &fieldErr{"spec.gang.groups[0].topology", field.ErrorTypeRequired},
			wantMsg:  "topology needs required, preferred or nested",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := def(tc.scope, tc.topology)
			var err error
			if tc.withCRD {
				_, err = definitions.CheckAgainstCRD(d, crds[0])
			} else {
				_, err = definitions.Compile(d, definitions.CompileOptions{})
			}
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			var defErr *definitions.DefinitionError
			require.True(t, errors.As(err, &defErr), "error %v is not a *DefinitionError", err)
			var got []fieldErr
			for _, e := range defErr.Errors {
				got = append(got, fieldErr{e.Field, e.Type})
			}
			require.Equal(t, []fieldErr{*tc.want}, got, "full error: %v", err)
			require.Contains(t, err.Error(), tc.want.Field+":")
			require.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

// TestGangTopologyJSON: the topology of a gang is in the workload's JSON only when it has one.
func TestGangTopologyJSON(t *testing.T) {
	w := expand(t, topologyDef(fromSpec), topologyThing(`workmap.dev/topology-preferred: rack`, "required: zone"))
	doc, err := json.Marshal(definitions.NewWorkloadTree(w))
	require.NoError(t, err)
	require.Contains(t, string(doc), `"topology":{"required":"zone","preferred":"rack","source":"annotation"}`)

	w = expand(t, topologyDef(fromSpec), topologyThing("", ""))
	doc, err = json.Marshal(definitions.NewWorkloadTree(w))
	require.NoError(t, err)
	require.False(t, strings.Contains(string(doc), `"topology"`), "%s", doc)
}

// TestGroupPartsOf: a pod's part of a gang with nested topology is its role instance, its
// replica, or both, as the nested scope says; with a second level, its smaller part too.
func TestGroupPartsOf(t *testing.T) {
	placed := definitions.Placement{Role: "workers", Replica: 2}
	nested := func(scope v1alpha1.GangScope, inner ...v1alpha1.GangScope) *definitions.NestedGroupTopology {
		n := &definitions.NestedGroupTopology{Scope: scope, Required: "block"}
		for _, s := range inner {
			n.Nested = &definitions.NestedGroupTopology{Scope: s, Required: "rack"}
		}
		return n
	}
	tests := map[string]struct {
		nested *definitions.NestedGroupTopology
		p      definitions.Placement
		want   []string
	}{
		"no nested topology: no part":           {p: placed},
		"by instance: the role instance":        {nested: nested(v1alpha1.ScopeInstance), p: placed, want: []string{"workers"}},
		"by replica: the replica":               {nested: nested(v1alpha1.ScopeReplica), p: placed, want: []string{"2"}},
		"by instance and replica: both":         {nested: nested(v1alpha1.ScopeInstanceReplica), p: placed, want: []string{"workers/2"}},
		"by replica, the pod's replica unknown": {nested: nested(v1alpha1.ScopeReplica), p: definitions.Placement{Role: "workers", Replica: -1}, want: []string{""}},
		"by instance, then by instance and replica inside it": {
			nested: nested(v1alpha1.ScopeInstance, v1alpha1.ScopeInstanceReplica), p: placed, want: []string{"workers", "workers/2"},
		},
		"by replica, then by instance and replica inside it": {
			nested: nested(v1alpha1.ScopeReplica, v1alpha1.ScopeInstanceReplica), p: placed, want: []string{"2", "workers/2"},
		},
		"by instance, the pod's replica unknown: no smaller part": {
			nested: nested(v1alpha1.ScopeInstance, v1alpha1.ScopeInstanceReplica), p: definitions.Placement{Role: "workers", Replica: -1}, want: []string{"workers", ""},
		},
		"by replica, the pod's replica unknown: neither part": {
			nested: nested(v1alpha1.ScopeReplica, v1alpha1.ScopeInstanceReplica), p: definitions.Placement{Role: "workers", Replica: -1}, want: []string{"", ""},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := definitions.Group{Topology: &definitions.GroupTopology{Required: "zone", Nested: tc.nested}}
			require.Equal(t, tc.want, g.PartsOf(tc.p))
		})
	}
}
