package certs

import (
	"errors"
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Defaults of Options.
const (
	DefaultServingValidity = 365 * 24 * time.Hour
	DefaultCAValidity      = 10 * DefaultServingValidity
	DefaultCheckInterval   = time.Hour
	DefaultStartTimeout    = 2 * time.Minute
	DefaultClusterDomain   = "cluster.local"
)

// Options configures a Manager. Setting Dir selects files mode; otherwise the Manager is
// self-managed and Client, SecretNamespace and SecretName are required. All replicas of the
// webhook should be given the same options.
type Options struct {
	// Dir is the directory holding tls.crt and tls.key, as a mounted cert-manager Secret
	// provides them. Setting it selects files mode.
	Dir string

	// Client talks to the cluster in self-managed mode.
	Client kubernetes.Interface
	// SecretNamespace and SecretName name the Secret that holds the CA and serving
	// certificate, e.g. workmap-system/workmap-webhook-certs.
	SecretNamespace, SecretName string
	// MutatingWebhookConfigurations and ValidatingWebhookConfigurations are the names of the
	// configurations whose caBundle is kept current, in all their webhooks.
	MutatingWebhookConfigurations, ValidatingWebhookConfigurations []string

	// ServiceName is the webhook's Service; the certificate is valid for
	// <ServiceName>.<ServiceNamespace>.svc and <ServiceName>.<ServiceNamespace>.svc.<ClusterDomain>.
	ServiceName string
	// ServiceNamespace defaults to SecretNamespace.
	ServiceNamespace string
	// ClusterDomain defaults to cluster.local.
	ClusterDomain string
	// DNSNames and IPs are further names the certificate is valid for.
	DNSNames []string
	IPs      []net.IP

	// ServingValidity and CAValidity are the lifetimes of new certificates (defaults one and
	// ten years). A certificate is renewed once less than a third of its lifetime is left.
	ServingValidity, CAValidity time.Duration
	// CheckInterval is how often the Secret and caBundles are checked (default one hour).
	CheckInterval time.Duration
	// StartTimeout bounds how long Start waits for the first certificate (default two minutes).
	StartTimeout time.Duration
	// Now returns the current time; tests set it to move time. Defaults to time.Now.
	Now func() time.Time
}

// selfManaged reports whether o selects self-managed mode.
func (o *Options) selfManaged() bool { return o.Dir == "" }

// complete checks o and fills in its defaults.
func (o *Options) complete() error {
	if o.StartTimeout < 0 {
		return errors.New("certs: Options.StartTimeout must not be negative")
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if !o.selfManaged() {
		if o.SecretName != "" || o.SecretNamespace != "" || len(o.configurations()) > 0 {
			return errors.New("certs: Options.Dir (files mode) cannot be combined with SecretNamespace, SecretName or webhook configurations (self-managed mode)")
		}
		return nil
	}
	switch {
	case o.Client == nil:
		return errors.New("certs: Options.Client is required unless Options.Dir is set")
	case o.SecretNamespace == "" || o.SecretName == "":
		return errors.New("certs: Options.SecretNamespace and Options.SecretName are required unless Options.Dir is set")
	case o.ServiceName == "" && len(o.DNSNames) == 0 && len(o.IPs) == 0:
		return errors.New("certs: the certificate needs a name: set Options.ServiceName, DNSNames or IPs")
	}
	for i, n := range o.DNSNames {
		if n == "" {
			return fmt.Errorf("certs: Options.DNSNames[%d] is empty", i)
		}
	}
	for i, ip := range o.IPs {
		if ip == nil || ip.To16() == nil {
			return fmt.Errorf("certs: Options.IPs[%d] is not an IP address", i)
		}
	}
	for field, names := range map[string][]string{"MutatingWebhookConfigurations": o.MutatingWebhookConfigurations, "ValidatingWebhookConfigurations": o.ValidatingWebhookConfigurations} {
		for i, n := range names {
			if n == "" {
				return fmt.Errorf("certs: Options.%s[%d] is empty", field, i)
			}
		}
	}
	durations := []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"ServingValidity", &o.ServingValidity, DefaultServingValidity},
		{"CAValidity", &o.CAValidity, DefaultCAValidity},
		{"CheckInterval", &o.CheckInterval, DefaultCheckInterval},
	}
	for _, d := range durations {
		if *d.d < 0 {
			return fmt.Errorf("certs: Options.%s must not be negative", d.name)
		}
		if *d.d == 0 {
			*d.d = d.def
		}
	}
	if o.ServingValidity > o.CAValidity {
		return fmt.Errorf("certs: Options.ServingValidity (%s) must not exceed Options.CAValidity (%s)", o.ServingValidity, o.CAValidity)
	}
	if o.ServiceNamespace == "" {
		o.ServiceNamespace = o.SecretNamespace
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = DefaultClusterDomain
	}
	return nil
}

// dnsNames are the DNS names the serving certificate is valid for.
func (o *Options) dnsNames() []string {
	var names []string
	if o.ServiceName != "" {
		svc := o.ServiceName + "." + o.ServiceNamespace + ".svc"
		names = append(names, svc, svc+"."+o.ClusterDomain)
	}
	return append(names, o.DNSNames...)
}
