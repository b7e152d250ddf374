package harness

// T is what the harness needs from its caller. *testing.T and *testing.B satisfy it; a
// program (the demo) supplies its own.
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	Failed() bool
}
