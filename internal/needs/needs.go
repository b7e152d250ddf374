// Package needs lets a test say what it needs from its surroundings (control-plane binaries,
// Helm, the upstream data beside the checkout): without it, the test skips — or fails, when
// WORKMAP_REQUIRE_ALL is set, as `make test` and CI set it, so nothing CI must run is skipped
// in silence.
package needs

import "os"

// EnvRequireAll, when set to anything but "", turns every Skip into a failure.
const EnvRequireAll = "WORKMAP_REQUIRE_ALL"

// T is the part of testing.TB (or of the harness's T) that Skip uses.
type T interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Skip skips the test with the message, or fails it when EnvRequireAll is set.
func Skip(t T, format string, args ...any) {
	t.Helper()
	if os.Getenv(EnvRequireAll) != "" {
		t.Fatalf(format+" (required: %s is set)", append(args, EnvRequireAll)...)
		return
	}
	t.Skipf(format, args...)
}
