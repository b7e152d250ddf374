package grouper

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// The reasons a pod is not grouped as its workload would be (the reason label of
// workmap_grouper_grouping_errors_total and workmap_webhook_grouping_errors_total).
const (
	// ProblemOwnerNotFound: a controller owner does not exist (or was recreated with another UID).
	ProblemOwnerNotFound = "owner_not_found"
	// ProblemOwnerForbidden: the process may not list an owner's kind.
	ProblemOwnerForbidden = "owner_read_forbidden"
	// ProblemOwnerUnreadable: an owner's kind could not be read for another reason (no longer
	// served, an API error).
	ProblemOwnerUnreadable = "owner_unreadable"
	// ProblemOwnerKindUnknown: the API server serves no such kind of owner.
	ProblemOwnerKindUnknown = "owner_kind_unknown"
	// ProblemOwnerInvalid: a controller owner reference misses a field or its apiVersion does
	// not parse.
	ProblemOwnerInvalid = "owner_reference_invalid"
	// ProblemOwnerCycle: the controller owners form a cycle.
	ProblemOwnerCycle = "ownership_cycle"
	// ProblemOwnerChainTooLong: more controller owners than the resolver follows.
	ProblemOwnerChainTooLong = "owner_chain_too_long"
	// ProblemWorkloadInvalid: the workload object does not fit its definition.
	ProblemWorkloadInvalid = "workload_invalid"
	// ProblemDefinitionInvalid: the kind's latest definition is invalid; an earlier one groups
	// the pod.
	ProblemDefinitionInvalid = "definition_invalid"
	// ProblemTimeout: the decision ran out of time.
	ProblemTimeout = "timeout"
	// ProblemOther: anything else (an API error while reading a workload, for one).
	ProblemOther = "other"
)

// ProblemReasons are every reason ProblemReason returns.
var ProblemReasons = []string{ProblemOwnerNotFound, ProblemOwnerForbidden, ProblemOwnerUnreadable, ProblemOwnerKindUnknown,
	ProblemOwnerInvalid, ProblemOwnerCycle, ProblemOwnerChainTooLong, ProblemWorkloadInvalid, ProblemDefinitionInvalid,
	ProblemTimeout, ProblemOther}

// ProblemReason classifies why a pod could not be grouped (a decision's error or Problem); ""
// for nil.
func ProblemReason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrOwnerCycle):
		return ProblemOwnerCycle
	case errors.Is(err, ErrOwnerChainTooLong):
		return ProblemOwnerChainTooLong
	case errors.Is(err, ErrOwnerInvalid):
		return ProblemOwnerInvalid
	case errors.Is(err, ErrOwnerNotFound):
		return ProblemOwnerNotFound
	case apierrors.IsForbidden(err):
		return ProblemOwnerForbidden
	case errors.Is(err, ErrOwnerUnreadable):
		return ProblemOwnerUnreadable
	case meta.IsNoMatchError(err):
		return ProblemOwnerKindUnknown
	case isExpansionError(err):
		return ProblemWorkloadInvalid
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ProblemTimeout
	}
	return ProblemOther
}
