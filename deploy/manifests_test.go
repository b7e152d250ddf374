package deploy_test

// Helpers shared by the tests of the shipped manifests: reading multi-document YAML, rendering
// the kustomization (with the control plane's kubectl) and the Helm chart (with bin/helm), and
// applying objects to a test control plane with server-side apply.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/e2e/harness"

	"github.com/workmap/workmap/internal/needs"
)

// The release name and namespace the README installs the chart with: with them the chart's
// objects have the same names as the kustomization's.
const (
	releaseName = "workmap-scheduler"
	namespace   = "workmap-system"
	chartDir    = "helm/workmap-scheduler"
)

// decodeObjects splits multi-document YAML into objects, skipping empty documents. Numbers
// decode as int64 where integral, as the API machinery's own JSON decoding does.
func decodeObjects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		js, err := yaml.YAMLToJSON(doc)
		require.NoError(t, err)
		if s := string(bytes.TrimSpace(js)); s == "null" || s == "{}" {
			continue
		}
		obj, _, err := unstructured.UnstructuredJSONScheme.Decode(js, nil, nil)
		require.NoError(t, err, "%s", doc)
		out = append(out, obj.(*unstructured.Unstructured))
	}
}

// readObjects decodes the objects of manifest files.
func readObjects(t *testing.T, files ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, decodeObjects(t, data)...)
	}
	return out
}

// rbacFiles are the shipped RBAC manifests (every YAML file in rbac/ but its kustomization).
func rbacFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("rbac/*.yaml")
	require.NoError(t, err)
	var out []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			out = append(out, f)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// kustomize renders a kustomization with the control plane's kubectl (skipping the test when
// the binaries are absent).
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	kubectl := filepath.Join(harness.BinDir(t), "kubectl")
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl kustomize %s: %s", dir, stderr.String())
	return decodeObjects(t, out)
}

// helmBinary returns the helm built by `make helm` ($WORKMAP_HELM, else bin/helm), or skips.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("WORKMAP_HELM"); h != "" {
		return h
	}
	h, err := filepath.Abs("../bin/helm")
	require.NoError(t, err)
	if _, err := os.Stat(h); err != nil {
		needs.Skip(t, "helm not found at %s: run `make helm` (or set WORKMAP_HELM) to check the chart", h)
	}
	return h
}

// helmTemplate renders the chart (CRDs included) as release in ns, with helm's own files kept
// out of the user's home.
func helmTemplate(t *testing.T, release, ns string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(helmBinary(t), append([]string{"template", release, chartDir, "--namespace", ns, "--include-crds"}, args...)...)
	dir := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm template: %s", stderr.String())
	return decodeObjects(t, out)
}

// applier applies objects to a test control plane with server-side apply, finding each
// object's resource through discovery.
type applier struct {
	c      *harness.Cluster
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(c *harness.Cluster) *applier {
	disc := discovery.NewDiscoveryClientForConfigOrDie(c.Config)
	return &applier{c: c, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// apply applies one object, for real or (dryRun) only through admission and validation
// (dryRun: All): nothing is stored.
func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) error {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// A CRD applied a moment ago: discover again.
		a.mapper.Reset()
		if m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return err
		}
	}
	opts := metav1.ApplyOptions{FieldManager: "workmap-deploy-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	ri := a.c.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		_, err = ri.Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, opts)
	} else {
		_, err = ri.Apply(ctx, obj.GetName(), obj, opts)
	}
	return err
}

// find returns the object of a kind and name, or nil.
func find(objs []*unstructured.Unstructured, gk schema.GroupKind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == gk && o.GetName() == name {
			return o
		}
	}
	return nil
}
