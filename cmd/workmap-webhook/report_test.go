package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLeaseName(t *testing.T) {
	cases := map[string]struct {
		lease, secret           string
		wantNamespace, wantName string
		wantErr                 string
	}{
		"a name alone lives beside the webhook's certificate Secret": {
			lease: "workmap-webhook-report", secret: "ml-platform/workmap-webhook-certs",
			wantNamespace: "ml-platform", wantName: "workmap-webhook-report",
		},
		"a namespace given wins": {
			lease: "team-a/report", secret: "workmap-system/workmap-webhook-certs",
			wantNamespace: "team-a", wantName: "report",
		},
		"an empty namespace is refused": {
			lease: "/report", secret: "workmap-system/certs", wantErr: `--report-lease "/report": want NAME or NAMESPACE/NAME`,
		},
		"an empty name is refused": {
			lease: "team-a/", secret: "workmap-system/certs", wantErr: `--report-lease "team-a/": want NAME or NAMESPACE/NAME`,
		},
		"a name alone with a Secret without namespace": {
			lease: "report", secret: "certs", wantErr: `--report-lease "report" names no namespace and --cert-secret "certs" has none to take: give NAMESPACE/NAME`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			namespace, lease, err := leaseName(tc.lease, tc.secret)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantNamespace, namespace)
			assert.Equal(t, tc.wantName, lease)
		})
	}
}
