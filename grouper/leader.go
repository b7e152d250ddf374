package grouper

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leader says whether this process leads. Only the leader writes (PodGroups, their status,
// labels); a standby decides and keeps its caches warm, so it is ready when it takes over.
// kube-scheduler exits when it loses the lease, so leadership, once won, lasts as long as the
// process.
type Leader struct {
	once    sync.Once
	elected chan struct{}
}

// NewLeader returns a Leader that does not lead yet.
func NewLeader() *Leader { return &Leader{elected: make(chan struct{})} }

// Lead makes the process the leader (no leader election: it is the only one).
func (l *Leader) Lead() { l.once.Do(func() { close(l.elected) }) }

// Elected is closed once the process leads.
func (l *Leader) Elected() <-chan struct{} { return l.elected }

// Leading reports whether the process leads.
func (l *Leader) Leading() bool {
	select {
	case <-l.elected:
		return true
	default:
		return false
	}
}

// Watch wraps the leader election's lock: the elector creates or updates the lock's record
// only once it holds the lease (acquiring or renewing it), so the first write that succeeds
// means this process leads.
func (l *Leader) Watch(lock resourcelock.Interface) resourcelock.Interface {
	return &watchedLock{Interface: lock, leader: l}
}

type watchedLock struct {
	resourcelock.Interface
	leader *Leader
}

func (w *watchedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := w.Interface.Create(ctx, ler)
	w.won(err, ler)
	return err
}

func (w *watchedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := w.Interface.Update(ctx, ler)
	w.won(err, ler)
	return err
}

func (w *watchedLock) won(err error, ler resourcelock.LeaderElectionRecord) {
	if err == nil && ler.HolderIdentity == w.Identity() {
		w.leader.Lead()
	}
}
