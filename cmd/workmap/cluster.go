package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/live"
	"github.com/workmap/workmap/internal/access"
)

// Client limits as kubectl sets them: a command that lists every workload kind makes a few
// dozen requests at once, which client-go's defaults (5 per second, bursts of 10) would
// stretch over seconds.
const (
	clientQPS   = 50
	clientBurst = 300
)

// cluster is a connection to the API server through the user's kubeconfig.
type cluster struct {
	dynamic dynamic.Interface
	// pods lists pods as protobuf, which a thousand pods decode from several times faster
	// than JSON.
	pods      corev1client.PodsGetter
	config    *rest.Config
	namespace string
	// explicitNamespace is set when -n (or the kubeconfig's context) names the namespace.
	explicitNamespace bool
	// mapper resolves kind names as kubectl does (discovery, short names, cached on disk);
	// discovery is the cached discovery client behind it.
	mapper    meta.RESTMapper
	discovery discovery.CachedDiscoveryInterface
	// categories expands category names (`all`, `ray`, ...) as kubectl does.
	categories restmapper.CategoryExpander
	// errOut receives warnings.
	errOut io.Writer
	// expand are the expansion options of the flags (what counts as a GPU); gangs say how
	// the live state of gangs is read.
	expand definitions.ExpandOptions
	gangs  live.GangOptions
	// definitionsRefused is set when the user may not list the cluster's WorkloadDefinitions:
	// only the embedded catalog (and --definitions) is in effect.
	definitionsRefused *access.Refused
}

// connect builds clients from kubectl's flags.
func (o *options) connect() (*cluster, error) {
	// Discovery as kubectl does it; short-name warnings go to stderr.
	o.kube.WithDiscoveryQPS(clientQPS).WithDiscoveryBurst(clientBurst).
		WithWarningPrinter(genericiooptions.IOStreams{Out: o.out, ErrOut: o.errOut})
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS = clientQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = clientBurst
	}
	ns, explicit, err := o.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	protobuf := rest.CopyConfig(cfg)
	protobuf.ContentType = runtime.ContentTypeProtobuf
	protobuf.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	pods, err := corev1client.NewForConfig(protobuf)
	if err != nil {
		return nil, err
	}
	disc, err := o.kube.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	mapper, err := o.kube.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	return &cluster{
		dynamic: client, pods: pods, config: cfg, namespace: ns, explicitNamespace: explicit,
		mapper: mapper, discovery: disc, categories: restmapper.NewDiscoveryCategoryExpander(disc),
		errOut: o.errOut, expand: o.expandOptions(), gangs: live.GangOptions{Schedulers: o.gangSchedulers},
	}, nil
}

// warnf prints one warning line on stderr.
func (c *cluster) warnf(format string, args ...any) {
	fmt.Fprintf(c.errOut, "warning: "+format+"\n", args...)
}

// explain turns a client error into one clear line: a refused request names the verb, the
// resource, where, and the role to ask for (access.Explain); other API errors (not found)
// keep the API server's message; transport errors say the cluster could not be reached.
func (c *cluster) explain(err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return access.Explain(err)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	var urlErr *url.Error
	var netErr net.Error
	if errors.As(err, &urlErr) || errors.As(err, &netErr) {
		return fmt.Errorf("cannot reach the cluster at %s: %v", c.config.Host, innermost(err))
	}
	return err
}

func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
