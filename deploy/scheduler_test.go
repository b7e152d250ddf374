package deploy_test

// The shipped RBAC is not only tight (rbac_test.go) but enough: the real workmap-scheduler
// binary, run with the shipped configuration as the shipped ServiceAccount (a token from the
// TokenRequest API, for its API client, its leader election and its delegated
// authentication), groups and gang-schedules a Job on a real control plane without a single
// "forbidden", and answers the Deployment's probes. Pods owned by a kind the shipped RBAC does
// not cover are scheduled on their own, each with an event saying why, without holding up the
// grouping of the others.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// serviceAccountKubeconfig writes a kubeconfig that authenticates as a ServiceAccount with a
// token from the TokenRequest API, as a pod's projected token would.
func serviceAccountKubeconfig(ctx context.Context, t *testing.T, c *harness.Cluster, ns, name string) string {
	t.Helper()
	tok, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestSchedulerRunsWithShippedRBAC runs workmap-scheduler as workmap-system/workmap-scheduler
// with nothing but the shipped RBAC.
func TestSchedulerRunsWithShippedRBAC(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true})
	binary, err := harness.SchedulerBinary()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	a := newApplier(c)
	for _, o := range readObjects(t, append([]string{"scheduler/namespace.yaml"}, rbacFiles(t)...)...) {
		require.NoError(t, a.apply(ctx, o, false), "%s %s", o.GetKind(), o.GetName())
	}
	kubeconfig := serviceAccountKubeconfig(ctx, t, c, namespace, "workmap-scheduler")

	// The shipped configuration, leader election included; only the API client differs (the
	// Deployment's pod uses its in-cluster ServiceAccount token).
	data, err := os.ReadFile("scheduler/config.yaml")
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(data, &cfg))
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
	data, err = yaml.Marshal(cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, data, 0o644))

	port := freePort(t)
	logPath := filepath.Join(dir, "workmap-scheduler.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	cmd := exec.Command(binary, "--config="+cfgPath, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), "--v=2",
		// Delegated authentication and authorization of the secure port, as in a pod (where the
		// in-cluster configuration is used): they read kube-system/extension-apiserver-authentication.
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "HOME="+dir)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("workmap-scheduler log:\n%s", out)
		}
	})
	logText := func() string {
		out, _ := os.ReadFile(logPath)
		return string(out)
	}

	// The Deployment's probes: /livez and /readyz answer without credentials.
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback, self-signed
	probe := func(path string) bool {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	require.Eventually(t, func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("workmap-scheduler exited: %v", err)
		default:
		}
		return probe("/livez") && probe("/readyz")
	}, time.Minute, 200*time.Millisecond, "/livez and /readyz answer 200")

	// It leads through its own Lease.
	require.Eventually(t, func() bool {
		lease, err := c.Kube.CoordinationV1().Leases(namespace).Get(ctx, "workmap-scheduler", metav1.GetOptions{})
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	}, time.Minute, 200*time.Millisecond, "the Lease workmap-system/workmap-scheduler is held")

	// A gang of 3: the grouper reads the Job (owner chain), makes its PodGroup and labels the
	// pods; the plugin reads the PodGroup; the scheduler binds all 3.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "gang", Namespace: "default"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](3), Completions: ptr.To[int32](3), BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				SchedulerName: "workmap-scheduler",
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
				}}},
			}},
		},
	}
	_, err = c.Kube.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=gang"})
		if err != nil || len(pods.Items) != 3 {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Labels[v1alpha1.PodGroupLabel] == "" {
				return false
			}
		}
		return true
	}, 2*time.Minute, 200*time.Millisecond, "the Job's 3 pods are grouped and bound")

	// The PodGroup is written beside scheduling, not before it: it may follow the bindings.
	require.Eventually(t, func() bool {
		groups, err := c.Dynamic.Resource(v1alpha1.Resource).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(groups.Items) == 1
	}, 30*time.Second, 200*time.Millisecond, "one PodGroup for the Job")

	// Nothing it tried was refused.
	for _, line := range strings.Split(logText(), "\n") {
		assert.NotContains(t, line, "forbidden", "the shipped RBAC refused workmap-scheduler something")
	}

	// Pods owned by a kind the shipped RBAC does not let it read, more of them than the
	// grouper has workers: each is scheduled on its own with an event saying why, and none
	// holds the grouping of the pods that follow.
	unreadable := harness.CustomKind{Group: "example.com", Version: "v1", Kind: "Unlisted", Plural: "unlisteds"}
	c.InstallCustomKind(ctx, unreadable)
	for i := range 5 {
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unlisted-%d", i), Namespace: "default", OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "example.com/v1", Kind: "Unlisted", Name: "u", UID: "u-uid", Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{SchedulerName: "workmap-scheduler", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	after := job.DeepCopy()
	after.ObjectMeta = metav1.ObjectMeta{Name: "after", Namespace: "default"}
	after.Spec.Parallelism, after.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
	after.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	_, err = c.Kube.BatchV1().Jobs("default").Create(ctx, after, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=after"})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Labels[v1alpha1.PodGroupLabel] != "after-job" {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond, "a gang created after the unreadable pods is grouped and bound")
	for i := range 5 {
		name := fmt.Sprintf("unlisted-%d", i)
		require.Eventually(t, func() bool {
			pod, err := c.Kube.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || pod.Spec.NodeName == "" {
				return false
			}
			events, err := c.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=NoGang,involvedObject.name=" + name})
			return err == nil && len(events.Items) > 0 && strings.Contains(events.Items[0].Message, "unlisteds.example.com is forbidden")
		}, time.Minute, 200*time.Millisecond, "pod %s is scheduled on its own, and a NoGang event says its owner's kind may not be read", name)
	}
}
