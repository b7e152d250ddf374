package certs

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	now := t0
	data := func(caAge, servingAge time.Duration) map[string][]byte {
		d, _ := seed(t, now, caAge, servingAge)
		return d
	}
	fresh, other := data(day, day), data(day, day)
	with := func(data map[string][]byte, kv ...any) map[string][]byte {
		out := map[string][]byte{}
		for k, v := range data {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(out, kv[i].(string))
			} else {
				out[kv[i].(string)] = kv[i+1].([]byte)
			}
		}
		return out
	}
	// A CA made an hour ago that replaced a previous one, with the serving certificate still
	// from the previous CA.
	rotated := data(7*365*day, 100*day)
	newer, err := newCA(now.Add(-time.Hour), DefaultCAValidity)
	require.NoError(t, err)
	rotated = with(rotated, keyCACert, newer.certPEM, keyCAKey, newer.keyPEM,
		keyCABundle, append(append([]byte{}, newer.certPEM...), rotated[keyCABundle]...))
	justRotated := with(rotated)
	justCA, err := newCA(now.Add(-time.Minute), DefaultCAValidity)
	require.NoError(t, err)
	justRotated = with(justRotated, keyCACert, justCA.certPEM, keyCAKey, justCA.keyPEM,
		keyCABundle, append(append([]byte{}, justCA.certPEM...), rotated[keyCABundle]...))

	tests := map[string]struct {
		data        map[string][]byte
		ips         []net.IP
		wantCA      bool // a new CA
		wantServing bool // a new serving certificate
		wantCAs     int  // CAs in the bundle
		wantRecheck bool
	}{
		"empty Secret":                             {data: nil, wantCA: true, wantServing: true, wantCAs: 1},
		"fresh certificates":                       {data: fresh, wantCAs: 1},
		"serving certificate not yet due":          {data: data(day, 240*day), wantCAs: 1},
		"serving certificate due":                  {data: data(day, 250*day), wantServing: true, wantCAs: 1},
		"serving certificate expired":              {data: data(day, 400*day), wantServing: true, wantCAs: 1},
		"serving certificate not yet valid":        {data: data(day, -day), wantServing: true, wantCAs: 1},
		"serving certificate from a clock ahead":   {data: data(day, -30*time.Minute), wantCAs: 1},
		"CA from a clock ahead":                    {data: data(-30*time.Minute, -30*time.Minute), wantCAs: 1},
		"CA not yet valid":                         {data: data(-day, -day), wantCA: true, wantServing: true, wantCAs: 2},
		"serving key of another":                   {data: with(fresh, keyTLSKey, other[keyTLSKey]), wantServing: true, wantCAs: 1},
		"serving certificate missing":              {data: with(fresh, keyTLSCert, nil), wantServing: true, wantCAs: 1},
		"a name is missing":                        {data: fresh, ips: []net.IP{loopback, net.ParseIP("::1")}, wantServing: true, wantCAs: 1},
		"serving certificate of another CA":        {data: with(fresh, keyTLSCert, other[keyTLSCert], keyTLSKey, other[keyTLSKey]), wantServing: true, wantCAs: 1},
		"bundle missing":                           {data: with(fresh, keyCABundle, nil), wantCAs: 1},
		"CA key missing":                           {data: with(fresh, keyCAKey, nil), wantCA: true, wantCAs: 2, wantRecheck: true},
		"CA garbage, bundle good":                  {data: with(fresh, keyCACert, []byte("garbage")), wantCA: true, wantCAs: 2, wantRecheck: true},
		"CA and bundle garbage":                    {data: with(fresh, keyCACert, []byte("garbage"), keyCABundle, []byte("garbage")), wantCA: true, wantServing: true, wantCAs: 1},
		"CA not yet due":                           {data: data(6*365*day, day), wantCAs: 1},
		"CA due: serving waits for the new bundle": {data: data(7*365*day, day), wantCA: true, wantCAs: 2, wantRecheck: true},
		"CA due, serving due: serving still waits": {data: data(7*365*day, 250*day), wantCA: true, wantCAs: 2, wantRecheck: true},
		"CA expired":                               {data: data(11*365*day, day), wantCA: true, wantServing: true, wantCAs: 1},
		"new CA published: serving moves":          {data: rotated, wantServing: true, wantCAs: 2},
		"new CA just made: serving still waits":    {data: justRotated, wantCAs: 3, wantRecheck: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pol := policy{
				dnsNames:        []string{"workmap-webhook.workmap-system.svc", "workmap-webhook.workmap-system.svc.cluster.local"},
				ips:             []net.IP{loopback},
				servingValidity: DefaultServingValidity,
				caValidity:      DefaultCAValidity,
			}
			if tc.ips != nil {
				pol.ips = tc.ips
			}
			p, err := pol.plan(tc.data, now)
			require.NoError(t, err)
			assert.Equal(t, tc.wantCA, string(p.data[keyCACert]) != string(tc.data[keyCACert]), "new CA; changes: %q", p.changes)
			assert.Equal(t, tc.wantServing, string(p.data[keyTLSCert]) != string(tc.data[keyTLSCert]), "new serving certificate; changes: %q", p.changes)
			assert.Len(t, parseCerts(p.data[keyCABundle]), tc.wantCAs, "CAs in the bundle")
			assert.Equal(t, tc.wantRecheck, p.recheck > 0, "recheck %s", p.recheck)
			assert.Equal(t, len(p.changes) > 0, !equalData(p.data, tc.data), "changes %q", p.changes)

			// Whatever the start, the result is good (within the clock skew kept) and stable.
			srv, err := parseKeyPair(p.data[keyTLSCert], p.data[keyTLSKey])
			require.NoError(t, err)
			for _, n := range append(pol.dnsNames, "127.0.0.1") {
				assert.NoError(t, verify(srv.cert, p.data[keyCABundle], n, now.Add(maxClockSkew)), n)
			}
			again, err := pol.plan(p.data, now)
			require.NoError(t, err)
			assert.Empty(t, again.changes)
		})
	}
}

func equalData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || string(v) != string(w) {
			return false
		}
	}
	return true
}
