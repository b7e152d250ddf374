package deploy_test

// Tests that the Helm chart (helm/workmap-scheduler) does not drift from the kustomization:
// its CRDs are the generated ones, and with the default values it renders the same RBAC and
// the same Deployment under the same names (with serve.enabled=true, those of with-serve; with
// webhook.enabled=true, those of with-webhook, and with webhook.certManager.enabled=true too,
// those of webhook-cert-manager). (Its configuration is compared by meaning in
// cmd/workmap-scheduler/config_test.go, which loads both the way kube-scheduler does.)

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHelmChartCRDsAreGenerated: the chart's crds/ folder is a copy of crds/, made by
// `make generate` (and checked by `make verify-generate`).
func TestHelmChartCRDsAreGenerated(t *testing.T) {
	want, err := filepath.Glob("crds/*.yaml")
	require.NoError(t, err)
	got, err := filepath.Glob(chartDir + "/crds/*.yaml")
	require.NoError(t, err)
	require.Equal(t, len(want), len(got), "the chart has every CRD and no other: run `make generate`")
	for _, f := range want {
		a, err := os.ReadFile(f)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(f)))
		require.NoError(t, err, "run `make generate`")
		assert.Equal(t, string(a), string(b), "%s is stale: run `make generate`", f)
	}
}

// kustomizeHash is the content hash kustomize appends to a generated ConfigMap's name.
var kustomizeHash = regexp.MustCompile(`-[a-z0-9]{10}$`)

// TestHelmMatchesKustomization: as the release workmap-scheduler in workmap-system, the chart
// renders every object of the kustomization but the Namespace (helm install --create-namespace
// makes it), with the same names, rules, bindings and pod spec: with the default values those
// of deploy/, with serve.enabled=true those of deploy/with-serve (workmap serve's too), with
// webhook.enabled=true those of deploy/with-webhook and with webhook.certManager.enabled=true
// those of deploy/webhook-cert-manager (workmap-webhook's). Labels and annotations may differ
// (Helm's own, the configuration checksum; webhook_test.go checks the cainjector's).
func TestHelmMatchesKustomization(t *testing.T) {
	normalize := func(t *testing.T, o *unstructured.Unstructured) map[string]any {
		c := o.DeepCopy()
		c.SetLabels(nil)
		c.SetAnnotations(nil)
		if c.GetKind() == "ConfigMap" {
			c.SetName(kustomizeHash.ReplaceAllString(c.GetName(), ""))
			// Compared by meaning in cmd/workmap-scheduler/config_test.go.
			unstructured.RemoveNestedField(c.Object, "data")
		}
		if c.GetKind() == "Deployment" {
			unstructured.RemoveNestedField(c.Object, "spec", "template", "metadata", "annotations")
			volumes, found, _ := unstructured.NestedSlice(c.Object, "spec", "template", "spec", "volumes")
			for _, v := range volumes {
				if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
					cm["name"] = kustomizeHash.ReplaceAllString(cm["name"].(string), "")
				}
			}
			if found {
				require.NoError(t, unstructured.SetNestedSlice(c.Object, volumes, "spec", "template", "spec", "volumes"))
			}
		}
		return c.Object
	}

	tests := map[string]struct {
		kustomization string
		values        []string
	}{
		"default values":       {kustomization: "."},
		"serve.enabled=true":   {kustomization: "with-serve", values: []string{"--set", "serve.enabled=true"}},
		"webhook.enabled=true": {kustomization: "with-webhook", values: []string{"--set", "webhook.enabled=true"}},
		"webhook.certManager.enabled=true": {kustomization: "webhook-cert-manager",
			values: []string{"--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			want := map[string]map[string]any{}
			for _, o := range kustomize(t, tc.kustomization) {
				if o.GetKind() == "Namespace" {
					continue
				}
				n := normalize(t, o)
				want[o.GetKind()+"/"+(&unstructured.Unstructured{Object: n}).GetName()] = n
			}
			got := map[string]map[string]any{}
			for _, o := range helmTemplate(t, releaseName, namespace, tc.values...) {
				k := o.GetKind() + "/" + o.GetName()
				require.NotContains(t, got, k, "the chart renders %s twice", k)
				got[k] = normalize(t, o)
			}
			require.ElementsMatch(t, keys(want), keys(got), "the same objects")
			for k, w := range want {
				assert.Equal(t, w, got[k], "%s", k)
			}
		})
	}
}

// TestHelmServeLabels: the chart labels workmap serve's objects as its own app, part of
// workmap, and its pods so that only its Service selects them.
func TestHelmServeLabels(t *testing.T) {
	for _, o := range helmTemplate(t, releaseName, namespace, "--set", "serve.enabled=true") {
		if o.GetName() != serveName {
			continue
		}
		l := o.GetLabels()
		assert.Equal(t, serveName, l["app.kubernetes.io/name"], "%s %s", o.GetKind(), o.GetName())
		assert.Equal(t, "workmap", l["app.kubernetes.io/part-of"], "%s %s", o.GetKind(), o.GetName())
		assert.Equal(t, "Helm", l["app.kubernetes.io/managed-by"], "%s %s", o.GetKind(), o.GetName())
	}
}

func keys(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
