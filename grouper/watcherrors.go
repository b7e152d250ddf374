package grouper

import (
	"context"
	"errors"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// The reasons of a failed list or watch (the reason label of workmap_watch_errors_total).
const (
	// WatchForbidden: the API server refused it for want of permission (RBAC).
	WatchForbidden = "forbidden"
	// WatchNotFound: the API server does not serve the resource (its CRD was deleted).
	WatchNotFound = "not_found"
	// WatchAPIError: the API server answered with another error.
	WatchAPIError = "api_error"
	// WatchUnreachable: the API server could not be reached.
	WatchUnreachable = "unreachable"
)

// WatchReasons are the reasons a failed list or watch is counted under.
var WatchReasons = []string{WatchForbidden, WatchNotFound, WatchAPIError, WatchUnreachable}

// WatchErrors counts the lists and watches of a process's caches that failed, by resource and
// reason: a cache that cannot be filled or kept current (an owner kind the process may not
// read, a CRD deleted, an API server out of reach) shows here rather than only in the log.
// A nil *WatchErrors counts nothing.
type WatchErrors struct {
	counter *prometheus.CounterVec
}

// NewWatchErrors creates workmap_watch_errors_total and registers it with reg (when not nil).
func NewWatchErrors(reg prometheus.Registerer) *WatchErrors {
	w := &WatchErrors{counter: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "workmap_watch_errors_total",
		Help: "Lists and watches of the cluster that failed, by resource and reason (forbidden, not_found, api_error, unreachable).",
	}, []string{"resource", "reason"})}
	if reg != nil {
		reg.MustRegister(w.counter)
	}
	return w
}

// Count records one failed list or watch of a resource; errors that end a watch normally (a
// closed connection, an expired resource version) are not failures and are not counted.
func (w *WatchErrors) Count(resource schema.GroupResource, err error) {
	if w == nil {
		return
	}
	if reason := WatchErrorReason(err); reason != "" {
		w.counter.WithLabelValues(resource.String(), reason).Inc()
	}
}

// Counter is the counter behind workmap_watch_errors_total (labels resource and reason).
func (w *WatchErrors) Counter() *prometheus.CounterVec { return w.counter }

// Expect exports a resource's counters at zero from the start, so that a reader tells "no
// error yet" from "not watched".
func (w *WatchErrors) Expect(resource schema.GroupResource) {
	if w == nil {
		return
	}
	for _, reason := range WatchReasons {
		w.counter.WithLabelValues(resource.String(), reason)
	}
}

// Watch has the informer of a resource count its failed lists and watches, which are still
// logged as client-go logs them; also, when not nil, is told of each error. Call it before the
// informer runs.
func (w *WatchErrors) Watch(informer cache.SharedInformer, resource schema.GroupResource, also func(error)) error {
	w.Expect(resource)
	return informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		w.Count(resource, err)
		if also != nil {
			also(err)
		}
	})
}

// WatchErrorReason classifies a failed list or watch: "" for the normal end of a watch.
func WatchErrorReason(err error) string {
	switch {
	case err == nil, errors.Is(err, io.EOF), apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return ""
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return WatchForbidden
	case apierrors.IsNotFound(err):
		return WatchNotFound
	case errors.As(err, new(apierrors.APIStatus)):
		return WatchAPIError
	}
	return WatchUnreachable
}
