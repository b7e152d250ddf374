package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/workmap/workmap/webhook"
)

// The report's leader election, as kube-scheduler's defaults: a replica that stops renewing
// is replaced within leaseDuration.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// leaseName reads --report-lease: NAMESPACE/NAME, or NAME alone for a Lease in the namespace
// of --cert-secret (where the webhook's own objects are).
func leaseName(lease, secret string) (namespace, name string, err error) {
	if namespace, name, ok := strings.Cut(lease, "/"); ok {
		if namespace == "" || name == "" {
			return "", "", fmt.Errorf("--report-lease %q: want NAME or NAMESPACE/NAME", lease)
		}
		return namespace, name, nil
	}
	namespace, _, ok := strings.Cut(secret, "/")
	if !ok || namespace == "" {
		return "", "", fmt.Errorf("--report-lease %q names no namespace and --cert-secret %q has none to take: give NAMESPACE/NAME", lease, secret)
	}
	return namespace, lease, nil
}

// reportUngrouped reports the pods created without their gang (while no webhook grouped
// them) until ctx ends. With a lease, only the replica that holds it
// reports, so that each pod gets one event however many replicas run; a replica that takes
// the lease over reports again the pods that are still without their gang. Without one,
// this replica reports alone.
func reportUngrouped(ctx context.Context, c config, kube kubernetes.Interface, mutator *webhook.Mutator) error {
	if c.reportLease == "" {
		return report(ctx, c, kube, mutator)
	}
	namespace, name, err := leaseName(c.reportLease, c.secret)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	identity := host + "_" + string(uuid.NewUUID())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	go func() {
		for ctx.Err() == nil { // a replica that lost the lease stands for it again
			leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
				Lock: lock, ReleaseOnCancel: true, Name: "workmap-webhook-report",
				LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(ctx context.Context) {
						klog.InfoS("this replica reports the pods created without their gang", "lease", c.reportLease, "identity", identity)
						if err := report(ctx, c, kube, mutator); err != nil {
							klog.ErrorS(err, "reporting the pods created without their gang")
						}
					},
					OnStoppedLeading: func() {
						klog.InfoS("this replica no longer reports the pods created without their gang", "lease", c.reportLease)
					},
					OnNewLeader: func(holder string) {
						if holder != identity {
							klog.InfoS("another replica reports the pods created without their gang", "lease", c.reportLease, "holder", holder)
						}
					},
				},
			})
		}
	}()
	return nil
}

// report runs one report of the pods created without their gang until ctx ends, with its
// own event recorder.
func report(ctx context.Context, c config, kube kubernetes.Interface, mutator *webhook.Mutator) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	reporter, err := webhook.NewUngroupedReporter(kube, mutator, broadcaster.NewRecorder(scheme, webhook.ReportingController), split(c.excludedNamespaces))
	if err != nil {
		broadcaster.Shutdown()
		return err
	}
	go func() {
		defer broadcaster.Shutdown()
		reporter.Run(ctx)
	}()
	return nil
}
