package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
)

// catalogRegistry holds the embedded definitions as the commands have them: the catalog's
// frameworks and Kubernetes' own kinds the scheduler gangs.
func catalogRegistry(t *testing.T) *definitions.Registry {
	t.Helper()
	reg, err := catalog.WithKubernetesKinds()
	require.NoError(t, err)
	return reg
}

// TestResolveKindOffline: without a cluster, a kind is named by the definition's own names.
func TestResolveKindOffline(t *testing.T) {
	tests := map[string]struct {
		arg      string
		wantKind string
		wantErr  string
	}{
		"kind":                             {arg: "JobSet", wantKind: "JobSet"},
		"lower-case kind":                  {arg: "jobset", wantKind: "JobSet"},
		"plural":                           {arg: "jobsets", wantKind: "JobSet"},
		"resource.group":                   {arg: "jobsets.jobset.x-k8s.io", wantKind: "JobSet"},
		"kind.group":                       {arg: "JobSet.jobset.x-k8s.io", wantKind: "JobSet"},
		"resource.version.group":           {arg: "jobsets.v1alpha2.jobset.x-k8s.io", wantKind: "JobSet"},
		"irregular plural":                 {arg: "milvuses", wantKind: "Milvus"},
		"the only Service is Knative's":    {arg: "services", wantKind: "Service"},
		"a Job, which the scheduler gangs": {arg: "job", wantKind: "Job"},
		"jobs.batch":                       {arg: "jobs.batch", wantKind: "Job"},
		"a pod, which the scheduler gangs": {arg: "pods", wantKind: "Pod"},
		"unknown":                          {arg: "widget", wantErr: `unknown workload kind "widget"`},
		"wrong group":                      {arg: "jobsets.example.com", wantErr: `unknown workload kind "jobsets.example.com"`},
	}
	reg := catalogRegistry(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d, err := definitionNamed(reg, tc.arg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantKind, d.GroupKind.Kind)
		})
	}
}

func resources(gv string, rs ...metav1.APIResource) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: rs}
}

func resource(name, singular, kind string, shortNames, categories []string) metav1.APIResource {
	return metav1.APIResource{Name: name, SingularName: singular, Kind: kind, Namespaced: true, ShortNames: shortNames, Categories: categories, Verbs: metav1.Verbs{"get", "list"}}
}

// fakeReader is a reader of the definitions reg whose discovery serves the core kinds and the
// CRDs of several catalog frameworks, with their upstream short names and categories.
func fakeReader(errOut *bytes.Buffer, reg *definitions.Registry) *workloadReader {
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		resources("v1",
			resource("services", "service", "Service", []string{"svc"}, []string{"all"}),
			resource("pods", "pod", "Pod", []string{"po"}, []string{"all"}),
			resource("configmaps", "configmap", "ConfigMap", []string{"cm"}, nil)),
		resources("batch/v1", resource("jobs", "job", "Job", nil, []string{"all"})),
		resources("jobset.x-k8s.io/v1alpha2", resource("jobsets", "jobset", "JobSet", nil, nil)),
		resources("leaderworkerset.x-k8s.io/v1", resource("leaderworkersets", "leaderworkerset", "LeaderWorkerSet", []string{"lws"}, nil)),
		resources("grove.io/v1alpha1", resource("podcliquesets", "podcliqueset", "PodCliqueSet", []string{"pcs"}, nil)),
		resources("serving.kserve.io/v1beta1", resource("inferenceservices", "inferenceservice", "InferenceService", []string{"isvc"}, nil)),
		resources("serving.knative.dev/v1", resource("services", "service", "Service", []string{"kservice", "ksvc"}, []string{"all", "knative", "serving"})),
		resources("milvus.io/v1beta1", resource("milvuses", "milvus", "Milvus", []string{"mi"}, nil)),
		resources("nvidia.com/v1beta1", resource("dynamographdeployments", "dynamographdeployment", "DynamoGraphDeployment", []string{"dgd"}, nil)),
		resources("nvidia.com/v1alpha1", resource("dynamographdeployments", "dynamographdeployment", "DynamoGraphDeployment", []string{"dgd"}, nil)),
		resources("ray.io/v1", resource("rayjobs", "rayjob", "RayJob", nil, []string{"all"})),
	}}}
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, func(s string) { errOut.WriteString("warning: " + s + "\n") })
	return &workloadReader{cluster: &cluster{mapper: mapper, discovery: cached, categories: restmapper.NewDiscoveryCategoryExpander(cached), errOut: errOut}, definitions: reg}
}

// TestResolveKindLive: against a cluster, names resolve through discovery and the REST
// mapper as kubectl resolves them.
func TestResolveKindLive(t *testing.T) {
	tests := map[string]struct {
		arg          string
		wantResource string // group/version/resource
		wantErr      string
		wantWarning  string
	}{
		"short name lws":          {arg: "lws", wantResource: "leaderworkerset.x-k8s.io/v1, Resource=leaderworkersets"},
		"short name pcs":          {arg: "pcs", wantResource: "grove.io/v1alpha1, Resource=podcliquesets"},
		"short name isvc":         {arg: "isvc", wantResource: "serving.kserve.io/v1beta1, Resource=inferenceservices"},
		"short name ksvc":         {arg: "ksvc", wantResource: "serving.knative.dev/v1, Resource=services"},
		"short name mi":           {arg: "mi", wantResource: "milvus.io/v1beta1, Resource=milvuses"},
		"short name dgd":          {arg: "dgd", wantResource: "nvidia.com/v1beta1, Resource=dynamographdeployments"},
		"singular":                {arg: "jobset", wantResource: "jobset.x-k8s.io/v1alpha2, Resource=jobsets"},
		"plural":                  {arg: "jobsets", wantResource: "jobset.x-k8s.io/v1alpha2, Resource=jobsets"},
		"kind":                    {arg: "JobSet", wantResource: "jobset.x-k8s.io/v1alpha2, Resource=jobsets"},
		"resource.group":          {arg: "services.serving.knative.dev", wantResource: "serving.knative.dev/v1, Resource=services"},
		"resource.version.group":  {arg: "jobsets.v1alpha2.jobset.x-k8s.io", wantResource: "jobset.x-k8s.io/v1alpha2, Resource=jobsets"},
		"an explicit old version": {arg: "dynamographdeployments.v1alpha1.nvidia.com", wantResource: "nvidia.com/v1alpha1, Resource=dynamographdeployments"},
		"kind.version.group":      {arg: "DynamoGraphDeployment.v1alpha1.nvidia.com", wantResource: "nvidia.com/v1alpha1, Resource=dynamographdeployments"},
		"services are core Services, as in kubectl": {
			arg:     "services",
			wantErr: `"services" means the core kind Service (services), as in kubectl, and no definition describes that kind; for the workload kind of the same name use services.serving.knative.dev / kservice / ksvc`,
		},
		"a core kind":                             {arg: "configmaps", wantErr: `"configmaps" means the core kind ConfigMap (configmaps), as in kubectl, and no definition describes that kind; see ` + "`workmap catalog list`"},
		"a Job, which the scheduler gangs":        {arg: "job", wantResource: "batch/v1, Resource=jobs"},
		"a pod by its short name":                 {arg: "po", wantResource: "/v1, Resource=pods"},
		"a kind with a definition, not installed": {arg: "pytorchjobs", wantErr: "PyTorchJob.kubeflow.org is not installed in the cluster"},
		"unknown": {arg: "widgets", wantErr: `unknown workload kind "widgets": the cluster serves no resource of that name`},
	}
	reg := catalogRegistry(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var errOut bytes.Buffer
			k, err := fakeReader(&errOut, reg).kindNamed(context.Background(), tc.arg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantResource, k.resource.String())
			require.Equal(t, tc.wantWarning, errOut.String())
		})
	}
}

// TestKindsToList: `get` takes comma-separated names and categories, as kubectl does.
func TestKindsToList(t *testing.T) {
	tests := map[string]struct {
		arg     string
		want    []string
		wantErr string
	}{
		"two names":              {arg: "jobsets,lws", want: []string{"jobsets.jobset.x-k8s.io", "leaderworkersets.leaderworkerset.x-k8s.io"}},
		"a category":             {arg: "all", want: []string{"pods", "jobs.batch", "services.serving.knative.dev", "rayjobs.ray.io"}},
		"a name twice":           {arg: "lws,leaderworkersets", want: []string{"leaderworkersets.leaderworkerset.x-k8s.io"}},
		"an ambiguous name":      {arg: "jobsets,services", wantErr: `"services" means the core kind Service`},
		"a category of one kind": {arg: "knative", want: []string{"services.serving.knative.dev"}},
	}
	reg := catalogRegistry(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var errOut bytes.Buffer
			kinds, err := fakeReader(&errOut, reg).kindsToList(context.Background(), tc.arg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, k := range kinds {
				got = append(got, k.name())
			}
			require.ElementsMatch(t, tc.want, got)
		})
	}
}

// TestServedRootPrefersTheDefinitionsVersions: the definition's first served version wins
// over the cluster's preferred one.
func TestServedRootPrefersTheDefinitionsVersions(t *testing.T) {
	reg := catalogRegistry(t)
	d, ok := reg.Lookup(schema.GroupKind{Group: "nvidia.com", Kind: "DynamoGraphDeployment"})
	require.True(t, ok)
	var errOut bytes.Buffer
	k, ok, err := fakeReader(&errOut, reg).servedRoot(d)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, d.Source.Spec.Workload.Versions[0], k.resource.Version)
}
