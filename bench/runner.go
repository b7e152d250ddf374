package bench

import (
	"errors"
	"fmt"
	"io"
)

// Runner lets a program drive the harness, which expects a test (harness.T): Fatal unwinds
// the current step with an error, Cleanup functions run at Close in reverse order.
type Runner struct {
	Log      io.Writer
	cleanups []func()
	failed   bool
}

// abort unwinds a failed harness call to Step.
type abort struct{ msg string }

// Helper implements harness.T.
func (r *Runner) Helper() {}

// Fatal implements harness.T.
func (r *Runner) Fatal(args ...any) { r.failed = true; panic(abort{fmt.Sprint(args...)}) }

// Fatalf implements harness.T.
func (r *Runner) Fatalf(format string, args ...any) {
	r.failed = true
	panic(abort{fmt.Sprintf(format, args...)})
}

// Skipf implements harness.T: a benchmark that cannot run is a failure.
func (r *Runner) Skipf(format string, args ...any) { r.Fatalf(format, args...) }

// Logf implements harness.T.
func (r *Runner) Logf(format string, args ...any) { fmt.Fprintf(r.Log, format+"\n", args...) }

// Cleanup implements harness.T.
func (r *Runner) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// Failed implements harness.T.
func (r *Runner) Failed() bool { return r.failed }

// Step runs f, turning a Fatal inside it into an error.
func (r *Runner) Step(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			a, ok := v.(abort)
			if !ok {
				panic(v)
			}
			err = errors.New(a.msg)
		}
	}()
	return f()
}

// Close runs the cleanups (the cluster's teardown) in reverse order.
func (r *Runner) Close() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}
