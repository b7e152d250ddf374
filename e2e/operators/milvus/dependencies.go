package milvus

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/e2e/harness"
)

// The Milvus operator creates a Milvus' component Deployments only after its dependency
// probes have found etcd, the object storage and the message stream ready (the conditions
// EtcdReady, StorageReady and MsgStreamReady). Its in-cluster dependencies are Helm
// releases of etcd, MinIO and Pulsar or Kafka, which cannot run here (kwok runs no
// containers, and there is no chart repository), so the tests give every Milvus external
// dependencies the probes really accept:
//
//   - etcd: a real etcd on loopback. The probe connects with the etcd client, reads a key and
//     lists the alarms.
//   - storage: type S3 at an endpoint on loopback that answers the one request the probe
//     makes, GetBucketLocation of the configured bucket (the operator's default,
//     milvus-bucket), with the access keys from a Secret the probe reads. (Type MinIO would
//     call MinIO's admin API instead.)
//   - message stream: woodpecker, Milvus' built-in one, which the operator does not probe.
//     An external Pulsar or Kafka would be probed with their own clients.

// StorageSecret is the Secret (keys accesskey and secretkey) that Dependencies.Use points
// the storage at; CreateStorageSecret makes it in a namespace.
const StorageSecret = "milvus-storage"

// bucket is the operator's default bucket (config minio.bucketName), the one it probes.
const bucket = "milvus-bucket"

// Dependencies are the external etcd and S3 endpoint the Milvus objects of a test use.
type Dependencies struct {
	// Etcd is the etcd client endpoint, host:port.
	Etcd string
	// Storage is the S3 endpoint, host:port (plain HTTP).
	Storage string

	bucketProbes atomic.Int64
}

// StartDependencies runs an etcd (the control plane's binary, with its own data folder in
// the cluster's folder) and the S3 endpoint, and waits until etcd answers.
func StartDependencies(ctx context.Context, t harness.T, c *harness.Cluster) *Dependencies {
	t.Helper()
	clientPort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peerPort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	d := &Dependencies{Etcd: harness.HostPort(clientPort)}
	peer := "http://" + harness.HostPort(peerPort)
	c.Run("milvus-etcd", "etcd", nil,
		"--name=milvus-etcd",
		"--data-dir="+filepath.Join(c.Dir, "milvus-etcd"),
		"--listen-client-urls=http://"+d.Etcd, "--advertise-client-urls=http://"+d.Etcd,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=milvus-etcd="+peer,
		"--unsafe-no-fsync",
	)
	storage := httptest.NewServer(http.HandlerFunc(d.serveS3))
	t.Cleanup(storage.Close)
	d.Storage = strings.TrimPrefix(storage.URL, "http://")
	if err := waitEtcd(ctx, c, d.Etcd); err != nil {
		t.Fatalf("etcd for Milvus never answered: %v", err)
	}
	return d
}

// BucketProbes counts the GetBucketLocation requests the S3 endpoint has answered.
func (d *Dependencies) BucketProbes() int64 { return d.bucketProbes.Load() }

// serveS3 answers GetBucketLocation (GET /<bucket>/?location) for the bucket and
// NoSuchBucket for every other bucket; it implements nothing else of S3.
func (d *Dependencies) serveS3(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	if _, ok := r.URL.Query()["location"]; !ok || r.Method != http.MethodGet {
		w.WriteHeader(http.StatusNotImplemented)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code></Error>`)
		return
	}
	if strings.Trim(r.URL.Path, "/") != bucket {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code><BucketName>%s</BucketName></Error>`, strings.Trim(r.URL.Path, "/"))
		return
	}
	d.bucketProbes.Add(1)
	fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">us-east-1</LocationConstraint>`)
}

// Use replaces a Milvus' dependencies with these external ones (msgStreamType woodpecker),
// keeping nothing of the original block: in-cluster releases, and a Kafka or Pulsar the
// operator would probe.
func (d *Dependencies) Use(obj *unstructured.Unstructured) error {
	return unstructured.SetNestedMap(obj.Object, map[string]any{
		"etcd":          map[string]any{"external": true, "endpoints": []any{d.Etcd}},
		"storage":       map[string]any{"external": true, "type": "S3", "endpoint": d.Storage, "secretRef": StorageSecret},
		"msgStreamType": "woodpecker",
	}, "spec", "dependencies")
}

// CreateStorageSecret creates the storage Secret in a namespace (made when missing).
func CreateStorageSecret(ctx context.Context, c *harness.Cluster, namespace string) error {
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: StorageSecret, Namespace: namespace},
		StringData: map[string]string{"accesskey": "milvus", "secretkey": "milvus-secret"},
	}
	_, err = c.Kube.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{})
	return err
}

// waitEtcd waits until etcd reports itself healthy (GET /health on its client URL).
func waitEtcd(ctx context.Context, c *harness.Cluster, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	var last error
	err := harness.Poll(ctx, 200*time.Millisecond, func() (bool, error) {
		if err := c.CheckProcesses(); err != nil {
			return false, err
		}
		resp, err := client.Get("http://" + endpoint + "/health")
		if last = err; err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		last = fmt.Errorf("%s: %s", resp.Status, body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"health":"true"`), nil
	})
	if err != nil {
		return fmt.Errorf("%w (last answer: %v)", err, last)
	}
	return nil
}
