package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/internal/access"
	"github.com/workmap/workmap/live"
)

// A workloadReader is the one way the commands read workloads from a live cluster: tree, get,
// groups, set, serve and completion build one from kubectl's flags (--kubeconfig, --context,
// -n, ...) and read through it. It holds:
//
//   - one connection: the clients, one discovery client (cached on disk as kubectl's) and
//     the one REST mapper built on it; every kind name, served version and native PodGroup
//     is looked up there, so a command reads discovery once;
//   - the definitions in effect, in layers: --definitions files over the cluster's
//     WorkloadDefinitions over the embedded catalog, read from the cluster when first needed;
//   - what the flags say about reading a workload: what counts as a GPU, which schedulers
//     gang pods.
//
// Read (read.go) is the call a command makes for one workload: it resolves the KIND argument
// as kubectl does (kinds.go), fetches the object, its children, pods and gangs' states, and
// returns the workload whole. ReadAll (read_all.go) does the same for every workload of some
// kinds; ReadGangs (groups_live.go) groups an object of any kind as workmap-scheduler does;
// set reads only the object it changes (readObject).
type workloadReader struct {
	*cluster
	// definitionDirs are the --definitions files and directories, the top layer.
	definitionDirs []string
	// definitions are those in effect, once read (see registry); definitionsRefused is set
	// when the user may not list the cluster's WorkloadDefinitions, so only the embedded
	// catalog (and --definitions) is in effect.
	definitions        *definitions.Registry
	definitionsRefused *access.Refused
	// expand are the expansion options of the flags (what counts as a GPU); gangs say how
	// the live state of gangs is read.
	expand definitions.ExpandOptions
	gangs  live.GangOptions
	// native is the native PodGroup resource discovery says the cluster serves.
	native servedPodGroups
}

// workloadReader connects to the cluster of the kubeconfig; it makes no request until it
// reads.
func (o *options) workloadReader() (*workloadReader, error) {
	c, err := o.connect()
	if err != nil {
		return nil, err
	}
	return &workloadReader{cluster: c, definitionDirs: o.definitionDirs, expand: o.expandOptions(), gangs: live.GangOptions{Schedulers: o.gangSchedulers}}, nil
}

// expandOptions are the expansion options the flags ask for (what counts as a GPU), for a
// reader and for manifests read offline.
func (o *options) expandOptions() definitions.ExpandOptions {
	var opts definitions.ExpandOptions
	for _, r := range o.gpuResources {
		opts.GPUs.Resources = append(opts.GPUs.Resources, corev1.ResourceName(r))
	}
	opts.GPUs.DeviceClasses = o.gpuDeviceClasses
	return opts
}

// registry is the definitions in effect, read from the cluster the first time.
func (r *workloadReader) registry(ctx context.Context) (*definitions.Registry, error) {
	if r.definitions != nil {
		return r.definitions, nil
	}
	_, err := r.readDefinitions(ctx)
	return r.definitions, err
}

// readDefinitions reads the WorkloadDefinitions installed in the cluster again and layers
// them between the catalog and --definitions. A cluster without the CRD simply has none; a
// user not allowed to list them is warned that only the embedded catalog (and --definitions)
// is in effect; an invalid one is skipped with a warning per problem, or, when its status
// records its last valid generation (workmap-scheduler keeps that one in effect), that
// generation is used, with the same warnings saying so.
func (r *workloadReader) readDefinitions(ctx context.Context) (*definitions.Registry, error) {
	fromCluster, refused, err := r.clusterDefinitions(ctx)
	if err != nil {
		return nil, err
	}
	r.definitionsRefused = refused
	if refused != nil {
		fmt.Fprintf(r.errOut, "warning: %s: %s\n", definitionsInEffect(r.definitionDirs), refused.Message())
	}
	var valid []*definitions.Definition
	for _, d := range fromCluster {
		if !d.valid() {
			warnInvalid(r.errOut, d)
		}
		if d.compiled != nil {
			valid = append(valid, d.compiled)
		}
	}
	reg, err := layeredRegistry(valid, r.definitionDirs)
	if err != nil {
		return nil, err
	}
	r.definitions = reg
	return reg, nil
}

// layeredRegistry layers the catalog (with Kubernetes' own kinds workmap-scheduler gangs, a
// Job, a bare pod), then the cluster's definitions (when given), then the --definitions files:
// a later layer's definition of a kind overrides an earlier one's.
func layeredRegistry(fromCluster []*definitions.Definition, dirs []string) (*definitions.Registry, error) {
	reg, err := catalog.WithKubernetesKinds()
	if err != nil {
		return nil, err
	}
	reg.Add(fromCluster...)
	if len(dirs) > 0 {
		local, err := definitions.LoadFiles(dirs...)
		if err != nil {
			return nil, err
		}
		reg.Add(local...)
	}
	return reg, nil
}

// definitionsNote is what a message that no definition describes a kind adds when the
// cluster's WorkloadDefinitions could not be read ("" when they were): one of them may.
func (r *workloadReader) definitionsNote() string {
	if r.definitionsRefused == nil {
		return ""
	}
	return fmt.Sprintf(" (only the embedded catalog's and --definitions were looked at: the cluster's WorkloadDefinitions could not be read, %s)", r.definitionsRefused.Short())
}

// definitionsInEffect says, for a user who may not read the cluster's WorkloadDefinitions,
// which definitions are used instead.
func definitionsInEffect(dirs []string) string {
	if len(dirs) > 0 {
		return "the cluster's WorkloadDefinitions could not be read, so only the embedded catalog's definitions and --definitions are used"
	}
	return "the cluster's WorkloadDefinitions could not be read, so only the embedded catalog's definitions are used"
}

// warnInvalid prints one warning line for each problem of an invalid cluster definition.
func warnInvalid(errOut io.Writer, d *layeredDefinition) {
	what := "skipped"
	if d.compiled != nil {
		what = fmt.Sprintf("its generation %d, the last valid one, is used instead, as workmap-scheduler does", d.compiled.Source.Generation)
	}
	for _, p := range d.problems {
		fmt.Fprintf(errOut, "warning: WorkloadDefinition %s in the cluster is invalid, %s: %s\n", d.def.Name, what, p)
	}
}

// Client limits as kubectl sets them: a command that lists every workload kind makes a few
// dozen requests at once, which client-go's defaults (5 per second, bursts of 10) would
// stretch over seconds.
const (
	clientQPS   = 50
	clientBurst = 300
)

// cluster is a connection to the API server through the user's kubeconfig. The catalog and
// lint commands use it alone; the others read through a workloadReader built on it.
type cluster struct {
	dynamic dynamic.Interface
	// pods lists pods as protobuf, which a thousand pods decode from several times faster
	// than JSON.
	pods      corev1client.PodsGetter
	config    *rest.Config
	namespace string
	// discovery is the cached discovery client (on disk, like kubectl's) and mapper the REST
	// mapper built on it, which resolves kind names as kubectl does (short names included).
	mapper    meta.RESTMapper
	discovery discovery.CachedDiscoveryInterface
	// categories expands category names (`all`, `ray`, ...) as kubectl does.
	categories restmapper.CategoryExpander
	// errOut receives warnings.
	errOut io.Writer
}

// connect builds clients from kubectl's flags.
func (o *options) connect() (*cluster, error) {
	o.kube.WithDiscoveryQPS(clientQPS).WithDiscoveryBurst(clientBurst)
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
	ns, _, err := o.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	pods, err := live.NewPodsClient(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := o.kube.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	// The mapper as kubectl builds it, on the same discovery client; short-name warnings go
	// to stderr.
	warnings := printers.NewWarningPrinter(o.errOut, printers.WarningPrinterOptions{Color: printers.AllowsColorOutput(o.errOut)})
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(disc), disc, warnings.Print)
	return &cluster{
		dynamic: client, pods: pods, config: cfg, namespace: ns,
		mapper: mapper, discovery: disc, categories: restmapper.NewDiscoveryCategoryExpander(disc),
		errOut: o.errOut,
	}, nil
}

// clusterDefinitions reads and compiles the WorkloadDefinitions installed in the cluster, in
// the API server's order (by name). A cluster without the CRD simply has none; when the user
// may not list them there are none either, and refused says why.
func (c *cluster) clusterDefinitions(ctx context.Context) (_ []*layeredDefinition, refused *access.Refused, _ error) {
	list, err := c.dynamic.Resource(workloadDefinitions).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		return nil, nil, nil
	case apierrors.IsForbidden(err):
		return nil, access.New("list", workloadDefinitions.GroupResource(), "", err), nil
	default:
		return nil, nil, c.explain(err)
	}
	out := make([]*layeredDefinition, 0, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		d := &layeredDefinition{source: sourceCluster, def: &v1alpha1.WorkloadDefinition{}}
		out = append(out, d)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, d.def); err != nil {
			d.def = &v1alpha1.WorkloadDefinition{ObjectMeta: metav1.ObjectMeta{Name: item.GetName()}}
			d.undecoded = true
			d.problems = []string{err.Error()}
			continue
		}
		if d.compiled, err = definitions.Compile(d.def, definitions.CompileOptions{}); err != nil {
			d.problems = problems(err)
			d.compiled = definitions.CompileLastValid(d.def, definitions.CompileOptions{})
		}
	}
	return out, nil, nil
}

// problems lists what is wrong with a definition, one line each with its field path.
func problems(err error) []string {
	var de *definitions.DefinitionError
	if !errors.As(err, &de) || len(de.Errors) == 0 {
		return []string{err.Error()}
	}
	out := make([]string, len(de.Errors))
	for i, e := range de.Errors {
		out[i] = e.Error()
	}
	return out
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
