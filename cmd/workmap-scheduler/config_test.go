// Tests of the shipped scheduler configuration, deploy/scheduler/config.yaml: it is loaded,
// defaulted and validated exactly as kube-scheduler does at start (options.LoadConfigFromFile,
// validation.ValidateKubeSchedulerConfiguration), the scheduling framework is built from its
// profile with the real in-tree plugins so the effective plugin order per extension point is
// checked (not only the YAML lists, which kube-scheduler merges with its defaults), and the
// WorkmapGang arguments go through the plugin's own decoder. The Helm chart's rendered
// configuration must mean the same (TestHelmConfigMatchesShipped).
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	schedulercache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/plugin"

	"github.com/workmap/workmap/internal/needs"
)

// shippedConfig is the KubeSchedulerConfiguration the Deployment, the kustomization and the
// e2e harness use.
const shippedConfig = "../../deploy/scheduler/config.yaml"

// loadConfig reads a configuration the way kube-scheduler's --config does (decode with the
// scheduler's scheme, convert to the internal version, default) and validates it.
func loadConfig(t *testing.T, path string) *config.KubeSchedulerConfiguration {
	t.Helper()
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	require.NoError(t, err, "kube-scheduler could not load %s", path)
	require.NoError(t, validation.ValidateKubeSchedulerConfiguration(cfg), "kube-scheduler rejects %s", path)
	return cfg
}

// gangArgs returns the raw WorkmapGang arguments of a profile.
func gangArgs(t *testing.T, profile *config.KubeSchedulerProfile) runtime.Object {
	t.Helper()
	for _, pc := range profile.PluginConfig {
		if pc.Name == plugin.Name {
			return pc.Args
		}
	}
	require.Failf(t, "no pluginConfig", "profile %s has no pluginConfig for %s", profile.SchedulerName, plugin.Name)
	return nil
}

// effectivePlugins builds the scheduling framework for a profile as kube-scheduler would
// (in-tree registry plus WorkmapGang; multiPoint defaults merged with the per-point lists) and
// returns the plugins it runs at each extension point, in order. WorkmapGang is the real
// plugin type with its real argument decoding, but not started (it needs an API server): the
// framework only checks which extension points it implements, so enabling it at one it does
// not implement fails here.
func effectivePlugins(t *testing.T, profile *config.KubeSchedulerProfile) *config.Plugins {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	return buildFramework(t, ctx, profile).ListPlugins()
}

// effectivePluginLogs builds the framework for a profile and returns what it logged.
func effectivePluginLogs(t *testing.T, profile *config.KubeSchedulerProfile) string {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	buildFramework(t, klog.NewContext(context.Background(), logger), profile)
	underlier, ok := logger.GetSink().(ktesting.Underlier)
	require.True(t, ok)
	return underlier.GetBuffer().String()
}

func buildFramework(t *testing.T, ctx context.Context, profile *config.KubeSchedulerProfile) framework.Framework {
	t.Helper()
	registry := frameworkplugins.NewInTreeRegistry()
	require.NoError(t, registry.Register(plugin.Name, func(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
		if _, err := plugin.DecodeArgs(obj); err != nil {
			return nil, err
		}
		return &plugin.Gang{}, nil
	}))
	// The framework records per-plugin metrics; kube-scheduler registers them at start.
	schedulermetrics.Register()
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	client := fake.NewClientset()
	f, err := frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithSnapshotSharedLister(schedulercache.NewEmptySnapshot()),
	)
	require.NoError(t, err, "building the scheduling framework of profile %s", profile.SchedulerName)
	return f
}

func names(set config.PluginSet) []string {
	out := make([]string, 0, len(set.Enabled))
	for _, p := range set.Enabled {
		out = append(out, p.Name)
	}
	return out
}

// TestShippedConfig: what kube-scheduler makes of deploy/scheduler/config.yaml.
func TestShippedConfig(t *testing.T) {
	cfg := loadConfig(t, shippedConfig)

	// A secondary scheduler with one profile: workloads opt in by schedulerName.
	require.Len(t, cfg.Profiles, 1)
	profile := &cfg.Profiles[0]
	assert.Equal(t, "workmap-scheduler", profile.SchedulerName)
	assert.NotEqual(t, corev1.DefaultSchedulerName, profile.SchedulerName, "must not take over default-scheduler's pods")

	// Leader election through the Lease the shipped RBAC (deploy/rbac/leader_election.yaml) grants.
	assert.True(t, cfg.LeaderElection.LeaderElect)
	assert.Equal(t, "leases", cfg.LeaderElection.ResourceLock)
	assert.Equal(t, "workmap-system", cfg.LeaderElection.ResourceNamespace)
	assert.Equal(t, "workmap-scheduler", cfg.LeaderElection.ResourceName)

	t.Run("effective plugins", func(t *testing.T) {
		plugins := effectivePlugins(t, profile)
		// The only queue sort: a second one (PrioritySort) would make the framework fail, and
		// WorkmapGang's order is what keeps a gang's pods together.
		assert.Equal(t, []string{plugin.Name}, names(plugins.QueueSort))
		// WorkmapGang alone: it preempts for gangs, and runs kube-scheduler's preemption (with
		// whole gangs as victims) for the other pods.
		assert.Equal(t, []string{plugin.Name}, names(plugins.PostFilter))
		for point, set := range map[string]config.PluginSet{
			"preEnqueue": plugins.PreEnqueue,
			"preFilter":  plugins.PreFilter,
			"filter":     plugins.Filter,
			"reserve":    plugins.Reserve,
			"permit":     plugins.Permit,
		} {
			assert.Contains(t, names(set), plugin.Name, "WorkmapGang at %s", point)
		}
		// kube-scheduler's defaults stay on around it (fit, volume binding, default binding).
		assert.Contains(t, names(plugins.Filter), "NodeResourcesFit")
		assert.Contains(t, names(plugins.Reserve), "VolumeBinding")
		// Gang members are bound by WorkmapGang (with their pod-group label on the Binding),
		// every other pod by DefaultBinder.
		assert.Equal(t, []string{plugin.Name, "DefaultBinder"}, names(plugins.Bind))
	})

	t.Run("opportunistic batching stays on", func(t *testing.T) {
		// kube-scheduler turns signatures (and with them batching) off for a profile in which
		// a filtering or scoring plugin cannot sign pods, and logs it.
		logs := effectivePluginLogs(t, profile)
		assert.NotContains(t, logs, "Disabling signatures", "the framework's log:\n%s", logs)
	})

	t.Run("plugin args", func(t *testing.T) {
		raw := gangArgs(t, profile)
		// Out-of-tree arguments stay raw after the scheme's decoding; the plugin decodes them.
		require.IsType(t, &runtime.Unknown{}, raw)
		args, err := plugin.DecodeArgs(raw)
		require.NoError(t, err)
		assert.Equal(t, int64(60), *args.PermitWaitingTimeSeconds)
		assert.Equal(t, int64(10), *args.PodGroupBackoffSeconds)
		assert.Equal(t, int32(4), *args.GrouperWorkers)
	})
}

// TestShippedConfigRejectsBadArgs: a broken WorkmapGang argument in the shipped file would stop
// the scheduler at start with an error naming the field. kube-scheduler's own validation does
// not look inside out-of-tree arguments, so the plugin's decoder is the check.
func TestShippedConfigRejectsBadArgs(t *testing.T) {
	data, err := os.ReadFile(shippedConfig)
	require.NoError(t, err)
	tests := map[string]struct {
		args      map[string]any
		wantField string
	}{
		"negative permit timeout":   {args: map[string]any{"permitWaitingTimeSeconds": -1}, wantField: "permitWaitingTimeSeconds"},
		"zero permit timeout":       {args: map[string]any{"permitWaitingTimeSeconds": 0}, wantField: "permitWaitingTimeSeconds"},
		"permit beyond 15 minutes":  {args: map[string]any{"permitWaitingTimeSeconds": 901}, wantField: "permitWaitingTimeSeconds"},
		"negative backoff":          {args: map[string]any{"podGroupBackoffSeconds": -5}, wantField: "podGroupBackoffSeconds"},
		"backoff longer than a day": {args: map[string]any{"podGroupBackoffSeconds": 86401}, wantField: "podGroupBackoffSeconds"},
		"no grouper workers":        {args: map[string]any{"grouperWorkers": 0}, wantField: "grouperWorkers"},
		"too many grouper workers":  {args: map[string]any{"grouperWorkers": 65}, wantField: "grouperWorkers"},
		"unknown field":             {args: map[string]any{"permitTimeoutSeconds": 30}, wantField: "permitTimeoutSeconds"},
		"wrong type":                {args: map[string]any{"grouperWorkers": "four"}, wantField: "grouperWorkers"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var doc map[string]any
			require.NoError(t, yaml.Unmarshal(data, &doc))
			args := doc["profiles"].([]any)[0].(map[string]any)["pluginConfig"].([]any)[0].(map[string]any)
			require.Equal(t, plugin.Name, args["name"])
			for k, v := range tc.args {
				args["args"].(map[string]any)[k] = v
			}
			out, err := yaml.Marshal(doc)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(path, out, 0o644))

			// kube-scheduler itself accepts the file; the plugin refuses its arguments.
			cfg := loadConfig(t, path)
			_, err = plugin.DecodeArgs(gangArgs(t, &cfg.Profiles[0]))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantField)
		})
	}
}

// helmBinary returns the helm built by `make helm` ($WORKMAP_HELM, else bin/helm), or skips.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("WORKMAP_HELM"); h != "" {
		return h
	}
	h, err := filepath.Abs("../../bin/helm")
	require.NoError(t, err)
	if _, err := os.Stat(h); err != nil {
		needs.Skip(t, "helm not found at %s: run `make helm` (or set WORKMAP_HELM) to check the chart's configuration", h)
	}
	return h
}

// helmTemplate renders the chart as the release workmap-scheduler in workmap-system, with
// helm's own files kept out of the user's home.
func helmTemplate(t *testing.T, helm string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	cmd := exec.Command(helm, append([]string{"template", "workmap-scheduler", "../../deploy/helm/workmap-scheduler",
		"--namespace", "workmap-system"}, args...)...)
	dir := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	stdout, err = cmd.Output()
	return stdout, errBuf.Bytes(), err
}

// helmConfig renders the chart and returns the config.yaml of its ConfigMap.
func helmConfig(t *testing.T, helm string, args ...string) []byte {
	t.Helper()
	out, stderr, err := helmTemplate(t, helm, append([]string{"--show-only", "templates/configmap.yaml"}, args...)...)
	require.NoError(t, err, "helm template: %s", stderr)
	var cm corev1.ConfigMap
	require.NoError(t, yaml.UnmarshalStrict(out, &cm))
	require.Contains(t, cm.Data, "config.yaml")
	return []byte(cm.Data["config.yaml"])
}

// TestHelmConfigMatchesShipped: the chart renders its configuration from values; with the
// default values kube-scheduler must end up with exactly the configuration of the shipped
// file (compared after loading and defaulting both, so only meaning counts, not layout), and
// values must reach the fields they name.
func TestHelmConfigMatchesShipped(t *testing.T) {
	helm := helmBinary(t)
	want := loadConfig(t, shippedConfig)
	write := func(t *testing.T, data []byte) string {
		path := filepath.Join(t.TempDir(), "config.yaml")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		return path
	}

	t.Run("default values", func(t *testing.T) {
		got := loadConfig(t, write(t, helmConfig(t, helm)))
		// The raw plugin arguments differ in layout (JSON from YAML either way); compare them
		// decoded, then the rest of the configuration as kube-scheduler holds it.
		wantArgs, err := plugin.DecodeArgs(gangArgs(t, &want.Profiles[0]))
		require.NoError(t, err)
		gotArgs, err := plugin.DecodeArgs(gangArgs(t, &got.Profiles[0]))
		require.NoError(t, err)
		assert.Equal(t, wantArgs, gotArgs)
		w := want.DeepCopy()
		for _, c := range []*config.KubeSchedulerConfiguration{w, got} {
			for i := range c.Profiles[0].PluginConfig {
				if c.Profiles[0].PluginConfig[i].Name == plugin.Name {
					c.Profiles[0].PluginConfig[i].Args = nil
				}
			}
		}
		assert.Equal(t, w, got)
	})

	t.Run("values reach the configuration", func(t *testing.T) {
		got := loadConfig(t, write(t, helmConfig(t, helm,
			"--set", "plugin.permitWaitingTimeSeconds=120", "--set", "plugin.podGroupBackoffSeconds=0",
			"--set", "plugin.grouperWorkers=8", "--set-json", "clientConnection.qps=75.5", "--set", "clientConnection.burst=150",
			"--set", "leaderElection.resourceName=other", "--set", "leaderElection.resourceNamespace=elsewhere",
			"--set", "schedulerName=gangs")))
		require.Len(t, got.Profiles, 1)
		assert.Equal(t, "gangs", got.Profiles[0].SchedulerName)
		assert.Equal(t, float32(75.5), got.ClientConnection.QPS)
		assert.Equal(t, int32(150), got.ClientConnection.Burst)
		assert.Equal(t, "other", got.LeaderElection.ResourceName)
		assert.Equal(t, "elsewhere", got.LeaderElection.ResourceNamespace)
		args, err := plugin.DecodeArgs(gangArgs(t, &got.Profiles[0]))
		require.NoError(t, err)
		assert.Equal(t, int64(120), *args.PermitWaitingTimeSeconds)
		assert.Equal(t, int64(0), *args.PodGroupBackoffSeconds)
		assert.Equal(t, int32(8), *args.GrouperWorkers)
	})

	t.Run("leader election off", func(t *testing.T) {
		got := loadConfig(t, write(t, helmConfig(t, helm, "--set", "leaderElection.enabled=false")))
		assert.False(t, got.LeaderElection.LeaderElect)
	})

	// The chart's values.schema.json bounds are the plugin's: every value the schema lets
	// through starts the scheduler, and the first ones past them are refused by helm already.
	t.Run("schema bounds are the plugin's", func(t *testing.T) {
		for field, bounds := range map[string][2]int64{
			"permitWaitingTimeSeconds": {1, 900},
			"podGroupBackoffSeconds":   {0, 86400},
			"grouperWorkers":           {1, 64},
		} {
			for _, v := range bounds {
				set := fmt.Sprintf("plugin.%s=%d", field, v)
				cfg := loadConfig(t, write(t, helmConfig(t, helm, "--set", set)))
				_, err := plugin.DecodeArgs(gangArgs(t, &cfg.Profiles[0]))
				assert.NoError(t, err, "%s is in the schema, so the plugin must take it", set)
			}
			for _, v := range []int64{bounds[0] - 1, bounds[1] + 1} {
				set := fmt.Sprintf("plugin.%s=%d", field, v)
				_, stderr, err := helmTemplate(t, helm, "--set", set)
				if assert.Error(t, err, "%s is out of range", set) {
					assert.Contains(t, string(stderr), field, "helm names the field")
				}
			}
		}
	})
}
