package plugin

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/workmap/workmap/grouper"
)

// A gang backed off after a failed attempt is retried as soon as the cluster changes in a way
// that may let it fit (see the queueing hints), not when its backoff ends. The retries events
// cause are coalesced: a gang asked for is retried retryDelay later, so a burst of events (a
// workload's pods deleted one after the other) is one retry; and it is not retried by events
// more often than once per retryGap: when room is freed piece by piece, a gang that still does
// not fit is retried once more after the gap, not once per event.
const (
	retryDelay = 20 * time.Millisecond
	retryGap   = 500 * time.Millisecond
)

// retrier retries backed-off gangs when the queueing hints say room may have appeared for
// them. The hints run under the scheduling queue's lock, so they only note the gang here; the
// retry (ending the gang's backoff and moving its pods to the active queue, which takes that
// lock) runs on the clock's timer.
type retrier struct {
	members *grouper.Membership
	clock   clock.WithDelayedExecution

	mu sync.Mutex
	// asked are the gangs to retry; last is when each gang was last retried (forgotten after
	// retryGap); timerAt is when the next flush is due (zero: none is).
	asked   map[string]struct{}
	last    map[string]time.Time
	timerAt time.Time
}

func newRetrier(members *grouper.Membership, clk clock.WithDelayedExecution) *retrier {
	return &retrier{members: members, clock: clk, asked: map[string]struct{}{}, last: map[string]time.Time{}}
}

// request asks for a gang to be retried (soon; see retryDelay and retryGap). It never blocks
// on the scheduling queue.
func (r *retrier) request(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked[key] = struct{}{}
	r.flushInLocked(retryDelay)
}

// flushInLocked makes sure a flush runs within d.
func (r *retrier) flushInLocked(d time.Duration) {
	at := r.clock.Now().Add(d)
	if !r.timerAt.IsZero() && !r.timerAt.After(at) {
		return
	}
	r.timerAt = at
	// On its own goroutine: a fake clock runs timers while it holds its lock, and flush reads
	// the clock.
	r.clock.AfterFunc(d, func() { go r.flush() })
}

// flush retries the gangs asked for whose last retry is retryGap ago, and waits for the others.
func (r *retrier) flush() {
	now := r.clock.Now()
	var due []string
	var next time.Duration
	r.mu.Lock()
	r.timerAt = time.Time{}
	for key, at := range r.last {
		if _, asked := r.asked[key]; !asked && now.Sub(at) >= retryGap {
			delete(r.last, key)
		}
	}
	for key := range r.asked {
		if wait := r.last[key].Add(retryGap).Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		delete(r.asked, key)
		r.last[key] = now
		due = append(due, key)
	}
	if next > 0 {
		r.flushInLocked(next)
	}
	r.mu.Unlock()
	for _, key := range due {
		r.members.Retry(key, now)
	}
}

// pending reports how many gangs wait for a retry (for tests).
func (r *retrier) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.asked)
}
