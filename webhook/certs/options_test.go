package certs

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
)

func TestOptions(t *testing.T) {
	c := fake.NewClientset()
	good := func(change func(*Options)) Options {
		o := Options{Client: c, SecretNamespace: "ns", SecretName: "certs", ServiceName: "svc"}
		if change != nil {
			change(&o)
		}
		return o
	}
	tests := map[string]struct {
		opts      Options
		wantErr   string
		wantNames []string
	}{
		"self-managed": {opts: good(nil), wantNames: []string{"svc.ns.svc", "svc.ns.svc.cluster.local"}},
		"Service in another namespace, other domain, extra names": {
			opts: good(func(o *Options) {
				o.ServiceNamespace, o.ClusterDomain, o.DNSNames = "web", "corp", []string{"hook.example.com"}
			}),
			wantNames: []string{"svc.web.svc", "svc.web.svc.corp", "hook.example.com"},
		},
		"only an IP":                     {opts: good(func(o *Options) { o.ServiceName, o.IPs = "", []net.IP{loopback} })},
		"files":                          {opts: Options{Dir: "/certs"}},
		"files and Secret":               {opts: good(func(o *Options) { o.Dir = "/certs" }), wantErr: "Options.Dir"},
		"no client":                      {opts: good(func(o *Options) { o.Client = nil }), wantErr: "Options.Client"},
		"no Secret name":                 {opts: good(func(o *Options) { o.SecretName = "" }), wantErr: "Options.SecretName"},
		"no name at all":                 {opts: good(func(o *Options) { o.ServiceName = "" }), wantErr: "ServiceName"},
		"empty DNS name":                 {opts: good(func(o *Options) { o.DNSNames = []string{""} }), wantErr: "Options.DNSNames[0]"},
		"bad IP":                         {opts: good(func(o *Options) { o.IPs = []net.IP{{1, 2}} }), wantErr: "Options.IPs[0]"},
		"empty configuration":            {opts: good(func(o *Options) { o.MutatingWebhookConfigurations = []string{"a", ""} }), wantErr: "Options.MutatingWebhookConfigurations[1]"},
		"empty validating configuration": {opts: good(func(o *Options) { o.ValidatingWebhookConfigurations = []string{""} }), wantErr: "Options.ValidatingWebhookConfigurations[0]"},
		"negative validity":              {opts: good(func(o *Options) { o.CAValidity = -time.Hour }), wantErr: "Options.CAValidity"},
		"serving outlives the CA":        {opts: good(func(o *Options) { o.ServingValidity, o.CAValidity = 2*day, day }), wantErr: "Options.ServingValidity"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := New(tc.opts)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.wantNames != nil {
				assert.Equal(t, tc.wantNames, m.policy.dnsNames)
			}
		})
	}
}
