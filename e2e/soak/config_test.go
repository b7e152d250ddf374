//go:build soak

package soak

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Environment variables that shape a run.
const (
	// envDuration is how long workloads are submitted and faults injected (a Go duration).
	envDuration = "WORKMAP_SOAK_DURATION"
	// envReport is a file to write the run's report to (Markdown); none when unset.
	envReport = "WORKMAP_SOAK_REPORT"
	// envNodes is the number of kwok nodes.
	envNodes = "WORKMAP_SOAK_NODES"
	// envProfiles is a directory to write each process's heap profile and goroutines to, at the end of
	// the warm-up of each role it takes (see growthOf) and at the end of the run; none when unset.
	envProfiles = "WORKMAP_SOAK_PROFILES"
)

// config is one run's shape.
type config struct {
	duration time.Duration
	report   string
	profiles string
	nodes    int
	// faultEvery is the pause between two faults.
	faultEvery time.Duration
	// warmUp is how long after a process's start, or a replica's change of role, its memory
	// and goroutines are first taken as its baseline.
	warmUp time.Duration
	// leaderMemoryWarmUp is that for a leader's memory: its event recorder fills for
	// eventWindow, then a minute of margin.
	leaderMemoryWarmUp time.Duration
	// schedulerFaultsUntil: after this much of the run, the scheduler faults (kill, leadership
	// move) stop but the first of each kind, so that the last leader lives through its
	// memory warm-up and a window after it.
	schedulerFaultsUntil time.Duration
	// targetPods is how many pods the live workloads ask for at most: more than the nodes
	// hold, so that gangs queue for room.
	targetPods int
}

// Limits the invariants are held to.
const (
	// partialGrace is how long a gang that has never been whole may be seen partly bound:
	// an admitted gang's pods are bound in parallel, and a fault (kube-apiserver going away)
	// can interrupt that for a moment.
	partialGrace = 15 * time.Second
	// fitBound is how long a gang may wait while it fits the free nodes (counted in the order
	// gangs were created) before all its pods are bound.
	fitBound = 150 * time.Second
	// gcGrace is how long a PodGroup may outlive its deleted workload.
	gcGrace = 60 * time.Second
	// goroutineSlack is the goroutines a process may gain over its run beyond maxGrowth, for
	// the work in flight at the moment of a sample.
	goroutineSlack = 10
	// goroutineWindow: goroutines are held to their limit over windows of at least this. A
	// replica measured for less, right after a start that a kube-apiserver restart delayed,
	// may still be opening its watches (the 3-minute form once saw 255 → 313 over 33 s).
	goroutineWindow = time.Minute
)

// The scheduler replicas' leader election: a leader renews its Lease through a kube-apiserver
// restart (5 s of draining at most, then a start), as a deployment that expects such
// restarts would configure it; a killed leader's Lease is taken over once it expires.
const (
	leaseDuration = 40 * time.Second
	renewDeadline = 30 * time.Second
)

func loadConfig(t *testing.T) config {
	t.Helper()
	c := config{duration: 3 * time.Minute, report: os.Getenv(envReport), profiles: os.Getenv(envProfiles), nodes: 200}
	if c.profiles != "" {
		if err := os.MkdirAll(c.profiles, 0o755); err != nil {
			t.Fatalf("%s: %v", envProfiles, err)
		}
	}
	if v := os.Getenv(envDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			t.Fatalf("%s=%q: want a duration of at least 1m", envDuration, v)
		}
		c.duration = d
	}
	if v := os.Getenv(envNodes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 80 {
			t.Fatalf("%s=%q: want a number of at least 80 (gangs go up to 64 pods)", envNodes, v)
		}
		c.nodes = n
	}
	c.faultEvery = min(max(c.duration/15, 10*time.Second), time.Minute)
	c.warmUp = min(max(c.duration/3, time.Minute), 5*time.Minute)
	c.leaderMemoryWarmUp = max(c.warmUp, eventWindow+time.Minute)
	c.schedulerFaultsUntil = c.duration / 3
	c.targetPods = c.nodes * 13 / 10
	return c
}

// memoryWarmUp is how long a process in a role (leading or not) is warmed up before its memory
// is first taken as its baseline.
func (c config) memoryWarmUp(leads bool) time.Duration {
	if leads {
		return c.leaderMemoryWarmUp
	}
	return c.warmUp
}

// measuresLeaderMemory: the run is long enough for the leader after the last scheduler fault
// to be measured over memoryWindow after its memory warm-up.
func (c config) measuresLeaderMemory() bool {
	return c.schedulerFaultsUntil+c.leaderMemoryWarmUp+memoryWindow <= c.duration
}
