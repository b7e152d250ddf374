package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/procfs"
)

// Quiet is how a run waits, before its window, for the machine to be as idle as it gets with
// the control plane up: the run before it leaves work behind (its namespace being deleted,
// its pods' events expiring, controllers catching up), and a run that starts while that work
// goes on shares the CPUs with it. Every scheduler of a pair starts from the same state.
type Quiet struct {
	// MaxBusy is the share of the machine's CPU time (all cores) that may be busy over one
	// second for that second to count as quiet.
	MaxBusy float64 `json:"max_busy,omitempty"`
	// Seconds is how many quiet seconds in a row end the wait.
	Seconds int `json:"seconds,omitempty"`
	// Limit bounds the wait; a run that reaches it starts anyway, and says so.
	Limit time.Duration `json:"limit,omitempty"`
}

// DefaultQuiet is the wait of the throughput runs: the control plane, kwok and the
// controllers idle at well under a fifth of two cores here.
var DefaultQuiet = Quiet{MaxBusy: 0.3, Seconds: 2, Limit: time.Minute}

// describe says, for the report, how runs waited (nothing when they did not).
func (q Quiet) describe() string {
	if q.Seconds == 0 {
		return ""
	}
	return fmt.Sprintf(" Then, before the next run's window (in backlog mode once its pods exist, before its scheduler starts), the bench waits until the machine's CPUs were under %.0f%% busy for %d s in a row, at most %s: the control plane settles after a run's deletions at its own pace, and a run that started during that would share the CPUs with it. Each run's wait and the busy share it began at are in bench/raw.json (`quiet_seconds`, `busy_at_start`).", 100*q.MaxBusy, q.Seconds, q.Limit)
}

// waited says, for a run's log line, how its wait for a quiet machine ended.
func (q Quiet) waited(run Run) string {
	switch {
	case q.Seconds == 0:
		return ""
	case run.BusyAtStart < 0:
		return ", the machine's CPU times unreadable"
	case run.BusyAtStart > q.MaxBusy:
		return fmt.Sprintf(", machine still %.0f%% busy after %.1fs", 100*run.BusyAtStart, run.QuietSeconds)
	}
	return fmt.Sprintf(", machine quiet after %.1fs", run.QuietSeconds)
}

// Wait waits until the machine was quiet for q.Seconds seconds in a row, or q.Limit passed.
// It returns how long it waited and the busy share of the last second; busy is -1 where the
// CPU times cannot be read (not Linux), and then it does not wait.
func (q Quiet) Wait(ctx context.Context) (waited time.Duration, busy float64, err error) {
	if q.Seconds == 0 {
		return 0, 0, nil
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, -1, nil
	}
	began := time.Now()
	prev, err := fs.Stat()
	if err != nil {
		return 0, -1, nil
	}
	for quiet := 0; quiet < q.Seconds && time.Since(began) < q.Limit; {
		select {
		case <-ctx.Done():
			return time.Since(began), busy, context.Cause(ctx)
		case <-time.After(time.Second):
		}
		cur, err := fs.Stat()
		if err != nil {
			return time.Since(began), -1, nil
		}
		busy = busyShare(prev.CPUTotal, cur.CPUTotal)
		prev = cur
		if busy <= q.MaxBusy {
			quiet++
		} else {
			quiet = 0
		}
	}
	return time.Since(began), busy, nil
}

// busyShare is the share of CPU time between two readings that was not idle.
func busyShare(a, b procfs.CPUStat) float64 {
	idle := (b.Idle + b.Iowait) - (a.Idle + a.Iowait)
	total := cpuTotal(b) - cpuTotal(a)
	if total <= 0 {
		return 0
	}
	return 1 - idle/total
}

func cpuTotal(s procfs.CPUStat) float64 {
	return s.User + s.Nice + s.System + s.Idle + s.Iowait + s.IRQ + s.SoftIRQ + s.Steal
}
