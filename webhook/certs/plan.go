package certs

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Keys of the self-managed Secret.
const (
	keyTLSCert  = corev1.TLSCertKey
	keyTLSKey   = corev1.TLSPrivateKeyKey
	keyCACert   = "ca.crt"
	keyCAKey    = "ca.key"
	keyCABundle = "ca-bundle.crt"
)

// caPropagation is how long after a CA is made the serving certificate moves to it when the
// old one is still good: time for every API server to see the caBundle that trusts the new CA.
const caPropagation = 10 * time.Minute

// maxClockSkew is how far in the future a certificate may begin and still be kept: made by a
// replica whose clock runs ahead, it would only be replaced back and forth otherwise.
const maxClockSkew = time.Hour

// policy is what the self-managed certificates must satisfy.
type policy struct {
	dnsNames                    []string
	ips                         []net.IP
	servingValidity, caValidity time.Duration
}

// plan is the outcome of checking a Secret's data against a policy at one instant.
type plan struct {
	// data is the Secret data to keep (a copy, even when unchanged).
	data map[string][]byte
	// changes says what was renewed and why; empty when data is unchanged.
	changes []string
	// recheck, when not zero, is when a postponed renewal becomes due.
	recheck time.Duration
}

// plan checks the CA, caBundle and serving certificate in old at now and renews what is
// missing, broken or due.
func (p *policy) plan(old map[string][]byte, now time.Time) (*plan, error) {
	out := &plan{data: maps.Clone(old)}
	if out.data == nil {
		out.data = map[string][]byte{}
	}

	ca, err := parseKeyPair(old[keyCACert], old[keyCAKey])
	if reason := caProblem(ca, err, now); reason != "" {
		if ca, err = newCA(now, p.caValidity); err != nil {
			return nil, fmt.Errorf("making CA: %w", err)
		}
		out.data[keyCACert], out.data[keyCAKey] = ca.certPEM, ca.keyPEM
		out.changes = append(out.changes, "new CA ("+reason+")")
	}

	// The bundle trusts the current CA and every earlier one until it expires, so that
	// certificates they signed keep working while replicas move on.
	trusted := []*x509.Certificate{ca.cert}
	bundle := encodeCert(ca.cert)
	for _, c := range append(parseCerts(old[keyCACert]), parseCerts(old[keyCABundle])...) {
		if !c.IsCA || !now.Before(c.NotAfter) || slices.ContainsFunc(trusted, c.Equal) {
			continue
		}
		trusted = append(trusted, c)
		bundle = append(bundle, encodeCert(c)...)
	}
	if !bytes.Equal(bundle, old[keyCABundle]) {
		out.data[keyCABundle] = bundle
		out.changes = append(out.changes, fmt.Sprintf("caBundle of %d CA(s)", len(trusted)))
	}

	serving, err := parseKeyPair(old[keyTLSCert], old[keyTLSKey])
	reason := p.servingUnusable(serving, err, trusted, now)
	if reason == "" {
		if due := servingDue(serving, ca, now); due != "" {
			if ready := ca.cert.NotBefore.Add(backdate + caPropagation); now.Before(ready) {
				out.recheck = ready.Sub(now)
			} else {
				reason = due
			}
		}
	}
	if reason != "" {
		if serving, err = newServing(ca, p.dnsNames, p.ips, now, p.servingValidity); err != nil {
			return nil, fmt.Errorf("making serving certificate: %w", err)
		}
		out.data[keyTLSCert], out.data[keyTLSKey] = serving.certPEM, serving.keyPEM
		out.changes = append(out.changes, "new serving certificate ("+reason+")")
	}
	return out, nil
}

// caProblem says why the CA must be replaced, or "" if it is good.
func caProblem(ca *keyPair, err error, now time.Time) string {
	switch {
	case err != nil:
		return "CA certificate or key: " + err.Error()
	case !ca.cert.IsCA:
		return "ca.crt is not a CA certificate"
	case ca.cert.NotBefore.After(now.Add(maxClockSkew)):
		return "CA not valid before " + ca.cert.NotBefore.UTC().Format(time.RFC3339)
	case !now.Before(renewAt(ca.cert)):
		return "CA expires " + ca.cert.NotAfter.UTC().Format(time.RFC3339)
	}
	return ""
}

// servingUnusable says why the serving certificate must be replaced at once, or "" if it
// still works for every wanted name.
func (p *policy) servingUnusable(c *keyPair, err error, trusted []*x509.Certificate, now time.Time) string {
	if err != nil {
		return "serving certificate or key: " + err.Error()
	}
	if c.cert.NotBefore.After(now.Add(maxClockSkew)) || !now.Before(c.cert.NotAfter) {
		return fmt.Sprintf("valid only from %s to %s", c.cert.NotBefore.UTC().Format(time.RFC3339), c.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	for _, name := range p.dnsNames {
		if c.cert.VerifyHostname(name) != nil {
			return "not valid for " + name
		}
	}
	for _, ip := range p.ips {
		if c.cert.VerifyHostname(ip.String()) != nil {
			return "not valid for " + ip.String()
		}
	}
	if !slices.Contains(c.cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return "not for serving"
	}
	// trusted holds only CAs that have not expired; their start is not checked, see maxClockSkew.
	for _, ca := range trusted {
		if c.cert.CheckSignatureFrom(ca) == nil {
			return ""
		}
	}
	return "not signed by a trusted CA"
}

// servingDue says why a working serving certificate should be replaced, or "" if it need not.
func servingDue(c *keyPair, ca *keyPair, now time.Time) string {
	if !now.Before(renewAt(c.cert)) {
		return "expires " + c.cert.NotAfter.UTC().Format(time.RFC3339)
	}
	if c.cert.CheckSignatureFrom(ca.cert) != nil {
		return "signed by the previous CA"
	}
	return ""
}
