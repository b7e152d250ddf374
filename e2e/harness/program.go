package harness

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Program lets a command (`make demo`, `make serve`) run the harness outside `go test`: it
// implements T. A harness call that fails unwinds to Run, which returns the failure as an
// error; Teardown runs the cleanups (stopping the cluster) in reverse order.
type Program struct {
	mu       sync.Mutex
	cleanups []func()
	failed   bool
	// stopped: Teardown ran; a cleanup registered later runs at once.
	stopped  bool
	teardown sync.Once
	// signal is the stop signal received (nil: none).
	signal os.Signal
}

// programStop unwinds a failed harness call to Run.
type programStop struct{ msg string }

func (p *Program) Helper()           {}
func (p *Program) Fatal(args ...any) { p.setFailed(); panic(programStop{fmt.Sprint(args...)}) }
func (p *Program) Fatalf(format string, args ...any) {
	p.setFailed()
	panic(programStop{fmt.Sprintf(format, args...)})
}

// Skipf fails: a program has nothing to skip to.
func (p *Program) Skipf(format string, args ...any) { p.Fatalf(format, args...) }
func (p *Program) Logf(format string, args ...any)  { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// Cleanup registers f to run at Teardown; after Teardown it runs f at once (a process started
// while the program was being stopped is stopped too).
func (p *Program) Cleanup(f func()) {
	p.mu.Lock()
	if !p.stopped {
		p.cleanups = append(p.cleanups, f)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	f()
}

func (p *Program) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

func (p *Program) setFailed() {
	p.mu.Lock()
	p.failed = true
	p.mu.Unlock()
}

// Run calls f, turning a failed harness call inside it into an error (other panics go on).
func (p *Program) Run(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(programStop)
			if !ok {
				panic(r)
			}
			err = errors.New(s.msg)
		}
	}()
	err = f()
	if err != nil {
		p.setFailed()
	}
	return err
}

// Teardown runs the cleanups registered so far, last first, once; a second call waits until
// the first is done.
func (p *Program) Teardown() {
	p.teardown.Do(func() {
		p.mu.Lock()
		cleanups := p.cleanups
		p.cleanups, p.stopped = nil, true
		p.mu.Unlock()
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	})
}

// Interrupted says whether a stop signal is tearing the program down (TeardownOnSignal): a
// step that failed because of it is not a failure to report, and the program exits when the
// teardown is done.
func (p *Program) Interrupted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signal != nil
}

// StopSignals are the signals that stop a program: Ctrl-C (SIGINT), `kill` (SIGTERM), and its
// terminal closing (SIGHUP).
var StopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// TeardownOnSignal makes a stop signal, whatever step the program is in, tear its processes
// down and exit (128 + the signal's number, as a shell reports it). The processes the harness
// starts run in process groups of their own, so neither Ctrl-C nor a hangup reaches them: this
// is what stops them.
func (p *Program) TeardownOnSignal() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, StopSignals...)
	go func() {
		sig := <-signals
		p.mu.Lock()
		p.signal = sig
		p.mu.Unlock()
		fmt.Fprintf(os.Stderr, "\n==> %s: tearing down the control plane\n", sig)
		p.Teardown()
		code := 1
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		os.Exit(code)
	}()
}
