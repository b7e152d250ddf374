// Command workmap-webhook is a mutating admission webhook on pod CREATE. It groups each new
// pod with the same hub as workmap-scheduler (owner chain, definitions, built-in groupers) and
// either points it at a native scheduling.k8s.io PodGroup it makes sure exists, so that
// Kubernetes' own scheduler gangs it (GangScheduling, Kubernetes 1.36+), or, for pods of
// workmap-scheduler, sets their pod-group label at creation. It never refuses a pod: a pod
// the API server admitted unchanged while the webhook was down (failurePolicy Ignore) gets a
// CreatedWithoutGang Warning event once a webhook replica sees it. It is also a validating
// webhook on WorkloadDefinition CREATE and UPDATE, which refuses a definition that does not
// compile, each problem named by its field path.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/webhook"
	"github.com/workmap/workmap/webhook/certs"
)

type config struct {
	kubeconfig, addr, probeAddr, certDir  string
	secret, service, webhookConfiguration string
	validatingWebhookConfiguration        string
	extraIPs                              string
	workmapSchedulers, nativeSchedulers   string
	excludedNamespaces                    string
	reportUngrouped, profiling            bool
	reportLease                           string
	timeout                               time.Duration
	qps                                   float64
	burst                                 int
	topologyLevels                        string
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster)")
	flag.StringVar(&c.addr, "bind-address", ":9443", "HTTPS address the API server calls (paths /mutate-pods and /validate-workloaddefinitions)")
	flag.StringVar(&c.probeAddr, "probe-address", ":8081", "HTTP address of /healthz, /readyz and /metrics")
	flag.BoolVar(&c.profiling, "profiling", false, "also serve Go's profiles (/debug/pprof/: heap, goroutine, CPU) on --probe-address, as kube-scheduler's --profiling does on its port")
	flag.StringVar(&c.certDir, "cert-dir", "", "directory with tls.crt and tls.key (cert-manager); empty: workmap manages its own certificate")
	flag.StringVar(&c.secret, "cert-secret", "workmap-system/workmap-webhook-certs", "NAMESPACE/NAME of the Secret holding workmap's own CA and certificate")
	flag.StringVar(&c.service, "service", "workmap-webhook", "the webhook's Service (in the Secret's namespace), named in the certificate")
	flag.StringVar(&c.webhookConfiguration, "webhook-configuration", "workmap-webhook", "MutatingWebhookConfiguration whose caBundle workmap keeps current")
	flag.StringVar(&c.validatingWebhookConfiguration, "validating-webhook-configuration", "workmap-webhook", "ValidatingWebhookConfiguration (of WorkloadDefinitions) whose caBundle workmap keeps current; empty: none")
	flag.StringVar(&c.extraIPs, "cert-ips", "", "comma-separated IP addresses the certificate is also valid for")
	flag.StringVar(&c.workmapSchedulers, "workmap-schedulers", "workmap-scheduler", "schedulers whose pods get the scheduling.x-k8s.io/pod-group label")
	flag.StringVar(&c.nativeSchedulers, "native-schedulers", "default-scheduler", "schedulers whose pods join native PodGroups (spec.schedulingGroup), when the cluster serves them")
	flag.StringVar(&c.excludedNamespaces, "excluded-namespaces", "kube-system,workmap-system", "comma-separated namespaces the MutatingWebhookConfiguration leaves out (its namespaceSelector): their pods are never reported as created without their gang")
	flag.BoolVar(&c.reportUngrouped, "report-ungrouped", true, "record a CreatedWithoutGang event on each pod created without its gang while no webhook grouped it; it takes every namespace but --excluded-namespaces to be one the webhook is called for, so turn it off for a configuration whose namespaceSelector selects by label")
	flag.StringVar(&c.reportLease, "report-lease", "workmap-webhook-report", "the Lease, NAME (in --cert-secret's namespace) or NAMESPACE/NAME, that elects the one replica reporting pods created without their gang (so each gets one event however many replicas run); empty: every replica reports")
	flag.DurationVar(&c.timeout, "decision-timeout", webhook.DefaultTimeout, "how long one admission decision may take before the pod is admitted as it came")
	flag.Float64Var(&c.qps, "kube-api-qps", 50, "requests per second to the API server, one budget shared by every client of the process (PodGroups made, owners read, events): client-go's default of 5 would hold a burst of new gangs past --decision-timeout")
	flag.StringVar(&c.topologyLevels, "topology-levels", "", "the cluster's topology levels as name=node-label pairs, comma-separated (e.g. block=example.com/block,rack=example.com/rack): a gang that asks for a level by name gets its node label as its native PodGroup's topology constraint")
	flag.IntVar(&c.burst, "kube-api-burst", 100, "burst of requests to the API server, out of the same budget")
	klog.InitFlags(nil)
	flag.Parse()
	ctrllog.SetLogger(klog.NewKlogr()) // the certificate file watcher logs through controller-runtime
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		klog.ErrorS(err, "workmap-webhook")
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(c.qps), c.burst
	cfg = grouper.OneBudget(cfg) // every client below shares --kube-api-qps and --kube-api-burst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	builtin, err := catalog.Definitions()
	if err != nil {
		return err
	}
	// The process's metrics: its own, the failed lists and watches of every cache, the
	// admission decisions.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	watchErrors := grouper.NewWatchErrors(reg)
	source := grouper.NewDefinitionSource(dyn, builtin)
	if err := source.CountWatchErrors(watchErrors); err != nil {
		return err
	}
	go source.Run(ctx)
	hub, owners, err := grouper.NewClusterHub(ctx, cfg, kube, source)
	if err != nil {
		return err
	}
	owners.WatchErrors = watchErrors
	mutator := &webhook.Mutator{Hub: hub, WorkmapSchedulers: split(c.workmapSchedulers), NativeSchedulers: split(c.nativeSchedulers), WatchErrors: watchErrors}
	if gvr, ok, err := webhook.ServedNativePodGroups(kube.Discovery()); err != nil {
		return err
	} else if ok {
		levels, err := webhook.ParseLevels(c.topologyLevels)
		if err != nil {
			return fmt.Errorf("--topology-levels: %w", err)
		}
		mutator.Native = webhook.NewNativePodGroups(dyn, gvr, levels)
		if err := mutator.Native.CountWatchErrors(watchErrors); err != nil {
			return err
		}
		go mutator.Native.Run(ctx)
		owners.OnSpecChange(func(_, obj metav1.Object) { mutator.WorkloadChanged(ctx, obj) })
		klog.InfoS("native gangs: pods join native PodGroups", "resource", gvr.String(), "schedulers", mutator.NativeSchedulers)
	} else if len(mutator.NativeSchedulers) > 0 {
		// kube-apiserver serves native PodGroups only with its GenericWorkload gate on, the
		// same gate without which it drops a pod's spec.schedulingGroup: the webhook sets it
		// on no pod, and says so for each pod that would have had a gang.
		klog.ErrorS(nil, "the cluster serves no native PodGroups (scheduling.k8s.io v1beta1 or v1alpha2; kube-apiserver needs the GenericWorkload feature gate and the version in --runtime-config): pods of the native schedulers are not gang-scheduled; each one whose workload has a gang gets a CreatedWithoutGang event. Ask for workmap-scheduler to gang them, or set --native-schedulers= to group none",
			"nativeSchedulers", mutator.NativeSchedulers)
	}
	synced := []cache.InformerSynced{source.HasSynced}
	if mutator.Native != nil {
		synced = append(synced, mutator.Native.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	if err := webhook.PrepareOwners(ctx, owners, source.Registry(), webhook.AccessReviews(kube, owners.Mapper())); err != nil {
		klog.ErrorS(err, "some owner kinds could not be cached ahead (their first pods wait for it)")
	}
	if c.reportUngrouped && len(mutator.NativeSchedulers) > 0 {
		if err := reportUngrouped(ctx, c, kube, mutator); err != nil {
			return err
		}
	}
	manager, err := certificates(ctx, c, kube)
	if err != nil {
		return err
	}
	handler := &webhook.Handler{Mutator: mutator, Timeout: c.timeout, Metrics: webhook.NewMetrics(reg)}
	return serve(ctx, c, handler, manager, reg)
}

// certificates starts the serving certificate: cert-manager's files, or workmap's own.
func certificates(ctx context.Context, c config, kube kubernetes.Interface) (*certs.Manager, error) {
	opts := certs.Options{Dir: c.certDir}
	if c.certDir == "" {
		ns, name, ok := strings.Cut(c.secret, "/")
		if !ok {
			return nil, fmt.Errorf("--cert-secret %q: want NAMESPACE/NAME", c.secret)
		}
		opts = certs.Options{Client: kube, SecretNamespace: ns, SecretName: name, ServiceName: c.service,
			MutatingWebhookConfigurations: split(c.webhookConfiguration), ValidatingWebhookConfigurations: split(c.validatingWebhookConfiguration)}
		for _, s := range split(c.extraIPs) {
			ip := net.ParseIP(s)
			if ip == nil {
				return nil, fmt.Errorf("--cert-ips: %q is not an IP address", s)
			}
			opts.IPs = append(opts.IPs, ip)
		}
	}
	m, err := certs.New(opts)
	if err != nil {
		return nil, err
	}
	return m, m.Start(ctx)
}

// probeMux serves /healthz, /readyz (answered once the caches and the certificate are ready,
// which is when the probe server starts), /metrics and, with profiling, Go's profiles.
func probeMux(reg *prometheus.Registry, profiling bool) *http.ServeMux {
	probes := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	probes.HandleFunc("/healthz", ok)
	probes.HandleFunc("/readyz", ok)
	probes.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if profiling {
		probes.HandleFunc("/debug/pprof/", pprof.Index)
		probes.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		probes.HandleFunc("/debug/pprof/profile", pprof.Profile)
		probes.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		probes.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return probes
}

// idleTimeout closes a kept-alive connection that sends no request for this long, as
// kube-apiserver does: without it, every client that opens connections and never closes
// them (a scraper with a new transport per scrape) holds a goroutine and a file descriptor
// here for good.
const idleTimeout = 90 * time.Second

// newServer is an HTTP server with the timeouts both of the webhook's addresses use.
func newServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}
}

func serve(ctx context.Context, c config, h http.Handler, m *certs.Manager, reg *prometheus.Registry) error {
	mux := http.NewServeMux()
	mux.Handle("/mutate-pods", h)
	mux.Handle("/validate-workloaddefinitions", webhook.DefinitionValidator{})
	server := newServer(c.addr, mux)
	server.TLSConfig = m.TLSConfig()
	probeServer := newServer(c.probeAddr, probeMux(reg, c.profiling))
	errs := make(chan error, 2)
	go func() { errs <- server.ListenAndServeTLS("", "") }()
	go func() { errs <- probeServer.ListenAndServe() }()
	klog.InfoS("serving", "address", c.addr, "probes", c.probeAddr)
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := errors.Join(server.Shutdown(shutdown), probeServer.Shutdown(shutdown))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
