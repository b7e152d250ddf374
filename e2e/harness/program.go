package harness

import (
	"errors"
	"fmt"
	"os"
)

// Program lets a command (`make demo`, `make serve`) run the harness outside `go test`: it
// implements T. A harness call that fails unwinds to Run, which returns the failure as an
// error; Teardown runs the cleanups (stopping the cluster) in reverse order.
type Program struct {
	cleanups []func()
	failed   bool
}

// programStop unwinds a failed harness call to Run.
type programStop struct{ msg string }

func (p *Program) Helper()           {}
func (p *Program) Fatal(args ...any) { p.failed = true; panic(programStop{fmt.Sprint(args...)}) }
func (p *Program) Fatalf(format string, args ...any) {
	p.failed = true
	panic(programStop{fmt.Sprintf(format, args...)})
}

// Skipf fails: a program has nothing to skip to.
func (p *Program) Skipf(format string, args ...any) { p.Fatalf(format, args...) }
func (p *Program) Logf(format string, args ...any)  { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (p *Program) Cleanup(f func())                 { p.cleanups = append(p.cleanups, f) }
func (p *Program) Failed() bool                     { return p.failed }

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
		p.failed = true
	}
	return err
}

// Teardown runs the cleanups registered so far, last first.
func (p *Program) Teardown() {
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	p.cleanups = nil
}
