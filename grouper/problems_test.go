package grouper_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/grouper"
)

// TestProblemReason: every way a pod can fail to be grouped is counted under a reason of its
// own, also when wrapped.
func TestProblemReason(t *testing.T) {
	jobs := schema.GroupResource{Group: "batch", Resource: "jobs"}
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"none":                  {nil, ""},
		"an owner not found":    {fmt.Errorf("%w: job x", grouper.ErrOwnerNotFound), grouper.ProblemOwnerNotFound},
		"a cycle":               {fmt.Errorf("%w: a → b → a", grouper.ErrOwnerCycle), grouper.ProblemOwnerCycle},
		"a chain too long":      {grouper.ErrOwnerChainTooLong, grouper.ProblemOwnerChainTooLong},
		"an invalid reference":  {fmt.Errorf("Pod ml/p: %w", grouper.ErrOwnerInvalid), grouper.ProblemOwnerInvalid},
		"a kind not served":     {fmt.Errorf("owner: %w", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "X"}}), grouper.ProblemOwnerKindUnknown},
		"a list forbidden":      {fmt.Errorf("%w: %w", grouper.ErrOwnerUnreadable, apierrors.NewForbidden(jobs, "", errors.New("RBAC"))), grouper.ProblemOwnerForbidden},
		"a kind gone":           {fmt.Errorf("%w: %w", grouper.ErrOwnerUnreadable, apierrors.NewNotFound(jobs, "")), grouper.ProblemOwnerUnreadable},
		"a workload misfit":     {fmt.Errorf("decide: %w", &grouper.ExpansionError{}), grouper.ProblemWorkloadInvalid},
		"out of time":           {fmt.Errorf("the jobs cache: %w", context.DeadlineExceeded), grouper.ProblemTimeout},
		"anything else":         {errors.New("boom"), grouper.ProblemOther},
		"a not found owner too": {errors.Join(errors.New("first"), fmt.Errorf("%w: y", grouper.ErrOwnerNotFound)), grouper.ProblemOwnerNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			got := grouper.ProblemReason(tc.err)
			require.Equal(t, tc.want, got)
			if got != "" {
				require.Contains(t, grouper.ProblemReasons, got, "every reason is exported from the start")
			}
		})
	}
}

// TestWatchErrors: failed lists and watches are counted by resource and reason; the normal end
// of a watch is not a failure; a nil counter counts nothing.
func TestWatchErrors(t *testing.T) {
	jobs := schema.GroupResource{Group: "batch", Resource: "jobs"}
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"a watch closed":          {io.EOF, ""},
		"a resource version gone": {apierrors.NewResourceExpired("too old"), ""},
		"forbidden":               {fmt.Errorf("failed to list: %w", apierrors.NewForbidden(jobs, "", errors.New("RBAC"))), grouper.WatchForbidden},
		"unauthorized":            {apierrors.NewUnauthorized("token expired"), grouper.WatchForbidden},
		"the kind deleted":        {apierrors.NewNotFound(jobs, ""), grouper.WatchNotFound},
		"an API error":            {apierrors.NewInternalError(errors.New("etcd")), grouper.WatchAPIError},
		"unreachable":             {&net.OpError{Op: "dial", Err: errors.New("connection refused")}, grouper.WatchUnreachable},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, grouper.WatchErrorReason(tc.err))
			w := grouper.NewWatchErrors(prometheus.NewRegistry())
			w.Expect(jobs)
			w.Count(jobs, tc.err)
			for _, reason := range grouper.WatchReasons {
				want := 0.0
				if reason == tc.want {
					want = 1
				}
				require.Equal(t, want, testutil.ToFloat64(w.Counter().WithLabelValues("jobs.batch", reason)), reason)
			}
			var none *grouper.WatchErrors
			none.Count(jobs, tc.err) // no panic
			none.Expect(jobs)
		})
	}
}
