package definitions

import (
	"runtime"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workmap/workmap/definitions/expr"
)

// Compiling a definition's expressions (parsing, type-checking and planning each CEL program)
// is most of Compile's work, and no expression depends on another. The compiler queues them
// as it walks the spec and compiles them on every processor at the end (finish). Problems
// keep the order of the spec: a problem found while walking, an expression that does not
// compile, and a check of compiled programs each take their place in one list, in the order
// the walk met them.

// compileStep is one entry of that list: exactly one of its fields is set.
type compileStep struct {
	// problem was found while walking the spec.
	problem *field.Error
	// job is an expression; it adds its problem when it does not compile.
	job *exprJob
	// check runs once every expression is compiled and returns its problems.
	check func() field.ErrorList
}

// exprJob is an expression to compile into *dst.
type exprJob struct {
	dst  **expr.Program
	env  *expr.Env
	fld  *field.Path
	src  string
	want expr.Result
	err  *field.Error
}

// fail records a problem found while walking the spec.
func (c *compiler) fail(err *field.Error) {
	c.steps = append(c.steps, compileStep{problem: err})
	c.failures++
}

// expr queues src to be compiled into *dst, which stays nil when src is empty or does not
// compile. dst must not move until finish (not an element of a slice that still grows).
func (c *compiler) expr(dst **expr.Program, env *expr.Env, p *field.Path, src string, want expr.Result) {
	if src == "" {
		return
	}
	c.steps = append(c.steps, compileStep{job: &exprJob{dst: dst, env: env, fld: p, src: src, want: want}})
}

// afterCompile runs check once every expression is compiled, its problems in their place.
func (c *compiler) afterCompile(check func() field.ErrorList) {
	c.steps = append(c.steps, compileStep{check: check})
}

// finish compiles the queued expressions and lists every problem, in order, in c.errs.
func (c *compiler) finish() {
	var jobs []*exprJob
	for _, s := range c.steps {
		if s.job != nil {
			jobs = append(jobs, s.job)
		}
	}
	compileJobs(jobs)
	for _, s := range c.steps {
		switch {
		case s.problem != nil:
			c.errs = append(c.errs, s.problem)
		case s.job != nil && s.job.err != nil:
			c.errs = append(c.errs, s.job.err)
		case s.check != nil:
			c.errs = append(c.errs, s.check()...)
		}
	}
	c.steps = nil
}

// compileJobs compiles jobs on up to GOMAXPROCS goroutines (a CEL environment is safe for
// concurrent use).
func compileJobs(jobs []*exprJob) {
	run := func(j *exprJob) {
		prog, err := j.env.Compile(j.fld, j.src, j.want)
		if err != nil {
			j.err = err
			return
		}
		*j.dst = prog
	}
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	if workers <= 1 {
		for _, j := range jobs {
			run(j)
		}
		return
	}
	next := make(chan *exprJob)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range next {
				run(j)
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
}
