package plugin

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestDecodeArgs(t *testing.T) {
	tests := map[string]struct {
		in        runtime.Object
		want      GangArgs
		wantError string
	}{
		"no args: the defaults": {
			in:   nil,
			want: GangArgs{PermitWaitingTimeSeconds: ptr.To[int64](60), PodGroupBackoffSeconds: ptr.To[int64](10), GrouperWorkers: ptr.To[int32](4)},
		},
		"raw JSON from the configuration, partly set": {
			in:   &runtime.Unknown{Raw: []byte(`{"permitWaitingTimeSeconds": 30}`), ContentType: runtime.ContentTypeJSON},
			want: GangArgs{PermitWaitingTimeSeconds: ptr.To[int64](30), PodGroupBackoffSeconds: ptr.To[int64](10), GrouperWorkers: ptr.To[int32](4)},
		},
		"backoff 0 is allowed": {
			in:   &GangArgs{PodGroupBackoffSeconds: ptr.To[int64](0)},
			want: GangArgs{PermitWaitingTimeSeconds: ptr.To[int64](60), PodGroupBackoffSeconds: ptr.To[int64](0), GrouperWorkers: ptr.To[int32](4)},
		},
		"an unknown field is an error": {
			in:        &runtime.Unknown{Raw: []byte(`{"permitWaitTimeSeconds": 30}`)},
			wantError: `unknown field "permitWaitTimeSeconds"`,
		},
		"a negative timeout names the field": {
			in:        &GangArgs{PermitWaitingTimeSeconds: ptr.To[int64](-1)},
			wantError: "pluginConfig[WorkmapGang].args.permitWaitingTimeSeconds: Invalid value: -1",
		},
		"a zero timeout would reject every gang at once": {
			in:        &GangArgs{PermitWaitingTimeSeconds: ptr.To[int64](0)},
			wantError: "permitWaitingTimeSeconds",
		},
		"a wait longer than kube-scheduler allows": {
			in:        &GangArgs{PermitWaitingTimeSeconds: ptr.To[int64](901)},
			wantError: "permitWaitingTimeSeconds: Invalid value: 901",
		},
		"a backoff over a day": {
			in:        &GangArgs{PodGroupBackoffSeconds: ptr.To[int64](90000)},
			wantError: "podGroupBackoffSeconds: Invalid value: 90000",
		},
		"no grouper workers": {
			in:        &GangArgs{GrouperWorkers: ptr.To[int32](0)},
			wantError: "grouperWorkers",
		},
		"a wrong type": {
			in:        &runtime.Unknown{Raw: []byte(`{"grouperWorkers": "four"}`)},
			wantError: "grouperWorkers",
		},
		"an unexpected object": {
			in:        &metav1.Status{},
			wantError: "want *runtime.Unknown or *GangArgs",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeArgs(tc.in)
			if tc.wantError != "" {
				require.ErrorContains(t, err, tc.wantError)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, *got)
		})
	}
}
