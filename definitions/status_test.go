package definitions_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// statusDef has rules that read the object without guarding (so malformed objects make them
// fail), a live-only rule, and no catch-all (so nothing may match).
var statusDef = thingDef(`
roles:
- name: main
  podTemplate: spec.template
children:
- {group: batch, version: v1, kind: Job}
status:
- state: Failed
  when: "self.status.conditions.exists(c, c.type == 'Failed' && c.status == 'True')"
  reason: "'failed: ' + self.status.conditions.filter(c, c.type == 'Failed')[0].message"
- state: Completed
  when: "self.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')"
- state: Running
  when: "size(children.jobs) > 0 && pods.exists(p, p.status.phase == 'Running')"
  reason: "string(size(pods)) + ' pods, ' + string(size(children.jobs)) + ' jobs'"
- state: Suspended
  when: "self.spec.?suspend.orValue(false)"
  reason: "'suspended by the user'"
`)

func thingWithStatus(status string) string {
	return `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t1}
spec:
  suspend: ` + map[bool]string{true: "true", false: "false"}[status == "suspended"] + `
  template:
    spec:
      containers: [{name: c, image: i}]
` + map[string]string{
		"failed and complete": `status:
  conditions:
  - {type: Complete, status: "True"}
  - {type: Failed, status: "True", message: boom}
`,
		"complete": `status:
  conditions:
  - {type: Failed, status: "False", message: fine}
  - {type: Complete, status: "True"}
`,
		"failed without message": `status:
  conditions: [{type: Failed, status: "True"}]
`,
		"suspended": `status:
  conditions: []
`,
		"nothing": `status:
  conditions: [{type: Complete, status: "False"}]
`,
		"oops":           `status: oops`,
		"no status":      ``,
		"conditions map": "status:\n  conditions: {a: b}\n",
		"null status":    "status: null\n",
	}[status]
}

func TestStatusOffline(t *testing.T) {
	d := compile(t, statusDef)
	offlineNote := " (offline: not checked for Running, which needs live data)"
	tests := map[string]struct {
		object      string
		want        v1alpha1.State
		wantReason  string // exact, when set
		wantContain []string
		wantSkipped []v1alpha1.State
	}{
		"first matching rule wins": {
			object:     thingWithStatus("failed and complete"),
			want:       v1alpha1.StateFailed,
			wantReason: "failed: boom",
		},
		"second rule when the first does not match": {
			object:     thingWithStatus("complete"),
			want:       v1alpha1.StateCompleted,
			wantReason: "matched self.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')",
		},
		"reason that fails to evaluate keeps the state": {
			object:      thingWithStatus("failed without message"),
			want:        v1alpha1.StateFailed,
			wantContain: []string{"reason unavailable: ", "spec.status[0].reason", "message"},
		},
		"a rule after a skipped live rule": {
			object:      thingWithStatus("suspended"),
			want:        v1alpha1.StateSuspended,
			wantReason:  "suspended by the user" + offlineNote,
			wantSkipped: []v1alpha1.State{v1alpha1.StateRunning},
		},
		"no rule matched": {
			object:      thingWithStatus("nothing"),
			want:        v1alpha1.StateUnknown,
			wantReason:  "no rule matched" + offlineNote,
			wantSkipped: []v1alpha1.State{v1alpha1.StateRunning},
		},
		"status is a string": {
			object:      thingWithStatus("oops"),
			want:        v1alpha1.StateUnknown,
			wantContain: []string{"spec.status[0].when"},
		},
		"status is missing": {
			object:      thingWithStatus("no status"),
			want:        v1alpha1.StateUnknown,
			wantContain: []string{"spec.status[0].when", "status"},
		},
		"status is null": {
			object:      thingWithStatus("null status"),
			want:        v1alpha1.StateUnknown,
			wantContain: []string{"spec.status[0].when"},
		},
		"conditions is a map": {
			object:      thingWithStatus("conditions map"),
			want:        v1alpha1.StateUnknown,
			wantContain: []string{"spec.status[0].when"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var w *definitions.Workload
			require.NotPanics(t, func() {
				var err error
				w, err = d.Expand(object(t, tc.object))
				require.NoError(t, err)
			})
			require.Equal(t, tc.want, w.Status.State, "reason: %s", w.Status.Reason)
			if tc.wantReason != "" {
				require.Equal(t, tc.wantReason, w.Status.Reason)
			}
			for _, s := range tc.wantContain {
				require.Contains(t, w.Status.Reason, s)
			}
			if diff := cmp.Diff(tc.wantSkipped, w.Status.Skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			// The workload itself is still expanded.
			require.Equal(t, int64(1), w.Totals.Pods)
		})
	}
}

func TestStatusLive(t *testing.T) {
	d := compile(t, statusDef)
	job := func(name string) map[string]any {
		return map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": name}}
	}
	pod := func(phase string) map[string]any {
		p := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}
		if phase != "" {
			p["status"] = map[string]any{"phase": phase}
		}
		return p
	}
	tests := map[string]struct {
		object      string
		live        *definitions.LiveData
		want        v1alpha1.State
		wantReason  string
		wantContain []string
	}{
		"live rule matches": {
			object: thingWithStatus("nothing"),
			live: &definitions.LiveData{
				Children: map[string][]map[string]any{"jobs": {job("a"), job("b")}},
				Pods:     []map[string]any{pod("Pending"), pod("Running"), pod("Running")},
			},
			want:       v1alpha1.StateRunning,
			wantReason: "3 pods, 2 jobs",
		},
		"earlier rule still wins in live mode": {
			object: thingWithStatus("complete"),
			live: &definitions.LiveData{
				Children: map[string][]map[string]any{"jobs": {job("a")}},
				Pods:     []map[string]any{pod("Running")},
			},
			want: v1alpha1.StateCompleted,
		},
		"live rule does not match and is not skipped": {
			object: thingWithStatus("suspended"),
			live: &definitions.LiveData{
				Children: map[string][]map[string]any{"jobs": {job("a")}},
				Pods:     []map[string]any{pod("Pending")},
			},
			want:       v1alpha1.StateSuspended,
			wantReason: "suspended by the user",
		},
		"nil live data is live mode with nothing found": {
			object:     thingWithStatus("nothing"),
			want:       v1alpha1.StateUnknown,
			wantReason: "no rule matched",
		},
		"children of a kind the definition does not list are ignored": {
			object: thingWithStatus("nothing"),
			live: &definitions.LiveData{
				Children: map[string][]map[string]any{"services": {job("a")}},
				Pods:     []map[string]any{pod("Running")},
			},
			want:       v1alpha1.StateUnknown,
			wantReason: "no rule matched",
		},
		"live rule that fails on a malformed pod": {
			object: thingWithStatus("nothing"),
			live: &definitions.LiveData{
				Children: map[string][]map[string]any{"jobs": {job("a")}},
				Pods:     []map[string]any{pod("")},
			},
			want:        v1alpha1.StateUnknown,
			wantContain: []string{"spec.status[2].when"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w, err := d.ExpandLive(object(t, tc.object), tc.live)
			require.NoError(t, err)
			require.Equal(t, tc.want, w.Status.State, "reason: %s", w.Status.Reason)
			if tc.wantReason != "" {
				require.Equal(t, tc.wantReason, w.Status.Reason)
			}
			for _, s := range tc.wantContain {
				require.Contains(t, w.Status.Reason, s)
			}
			require.Empty(t, w.Status.Skipped)
			require.NotNil(t, w.Live)
		})
	}
}

// TestStatusWithoutRules: a definition without status rules reports Unknown, not a panic.
func TestStatusWithoutRules(t *testing.T) {
	w := expand(t, thingDef("roles:\n- name: main\n  podTemplate: spec.template\n"), "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\n")
	require.Equal(t, definitions.Status{State: v1alpha1.StateUnknown, Reason: "no rule matched"}, w.Status)
}
