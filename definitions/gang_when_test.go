package definitions_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
)

// TestGangWhen: groups with a `when` apply only when it holds, so one role can belong to
// alternative groups; overlapping conditions keep the first group and warn.
func TestGangWhen(t *testing.T) {
	def := func(whenA, whenB string) string {
		return thingDef(`
roles:
- name: worker
  podTemplate: spec.template
  replicas: "self.spec.replicas"
gang:
  groups:
  - {name: together, members: [worker], when: "` + whenA + `"}
  - {name: alone, members: [worker], scope: instance, minMember: "1", when: "` + whenB + `"}
`)
	}
	obj := `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t, namespace: ns, labels: {mode: gang}}
spec:
  replicas: 3
  template: {spec: {containers: [{name: c, image: i}]}}
`
	tests := map[string]struct {
		whenA, whenB string
		wantGroups   []string
		wantWarning  string
	}{
		"first condition holds":       {whenA: "self.metadata.labels.mode == 'gang'", whenB: "self.metadata.labels.mode != 'gang'", wantGroups: []string{"together"}},
		"second condition holds":      {whenA: "self.metadata.labels.mode != 'gang'", whenB: "self.metadata.labels.mode == 'gang'", wantGroups: nil},
		"both hold: first wins":       {whenA: "true", whenB: "true", wantGroups: []string{"together"}, wantWarning: "gang group alone ignored: role worker is already in group together"},
		"condition fails to evaluate": {whenA: "self.spec.nope == 1", whenB: "false", wantGroups: nil, wantWarning: "gang group together"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, def(tc.whenA, tc.whenB), obj)
			var got []string
			for _, g := range w.Groups {
				got = append(got, g.Name)
			}
			require.Equal(t, tc.wantGroups, got)
			if tc.wantWarning != "" {
				require.Contains(t, strings.Join(w.Warnings, "\n"), tc.wantWarning)
			} else {
				require.Empty(t, w.Warnings)
			}
		})
	}
}

func TestGangWhenValidation(t *testing.T) {
	_, err := definitions.Compile(decodeOne(t, thingDef(`
roles:
- {name: worker, podTemplate: spec.template}
gang:
  groups:
  - {name: a, members: [worker], when: "true"}
  - {name: b, members: [worker]}
`)), definitions.CompileOptions{})
	require.ErrorContains(t, err, "unless every group it is in has a when")
}
