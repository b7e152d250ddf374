package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// backdate is how long before its creation a new certificate becomes valid, so that peers
// whose clocks run a little behind accept it.
const backdate = 5 * time.Minute

// keyPair is a certificate with its private key, parsed and in PEM.
type keyPair struct {
	cert            *x509.Certificate
	key             crypto.Signer
	certPEM, keyPEM []byte
}

// newKeyPair makes an ECDSA P-256 key and a certificate from tmpl for it, signed by parent, or
// self-signed when parent is nil.
func newKeyPair(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128)); err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	issuer, issuerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		issuer, issuerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), issuerKey)
	if err != nil {
		return nil, fmt.Errorf("creating certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: keyutil.PrivateKeyBlockType, Bytes: keyDER}),
	}, nil
}

// newCA makes a self-signed CA valid from now for validity.
func newCA(now time.Time, validity time.Duration) (*keyPair, error) {
	return newKeyPair(&x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("workmap-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}, nil)
}

// newServing makes a serving certificate for names and ips signed by ca, valid from now for
// validity but not beyond the CA.
func newServing(ca *keyPair, names []string, ips []net.IP, now time.Time, validity time.Duration) (*keyPair, error) {
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	cn := "workmap-webhook"
	if len(names) > 0 {
		cn = names[0]
	}
	return newKeyPair(&x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              names,
		IPAddresses:           ips,
	}, ca)
}

// parseKeyPair parses a PEM certificate (the first one in certPEM) and its PEM private key.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, errors.New("missing")
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, err
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", parsed)
	}
	pub, ok := certs[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, errors.New("private key does not match certificate")
	}
	return &keyPair{cert: certs[0], key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// parseCerts parses the PEM certificates in data, skipping what does not parse.
func parseCerts(data []byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for len(data) > 0 {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			break
		}
		if block.Type != certutil.CertificateBlockType {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			certs = append(certs, c)
		}
	}
	return certs
}

// renewAt is when cert is due for renewal: once less than a third of its lifetime is left.
func renewAt(cert *x509.Certificate) time.Time {
	return cert.NotAfter.Add(-cert.NotAfter.Sub(cert.NotBefore) / 3)
}

// encodeCert is c in PEM.
func encodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: c.Raw})
}
