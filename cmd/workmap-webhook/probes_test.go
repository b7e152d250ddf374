package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
)

func TestProbeMux(t *testing.T) {
	tests := map[string]struct {
		profiling bool
		want      map[string]int
	}{
		"without --profiling, no profiles": {
			want: map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/debug/pprof/heap": 404, "/debug/pprof/": 404},
		},
		"with --profiling, the heap and goroutine profiles too": {
			profiling: true,
			want:      map[string]int{"/healthz": 200, "/metrics": 200, "/debug/pprof/heap": 200, "/debug/pprof/goroutine": 200, "/debug/pprof/": 200},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			mux := probeMux(prometheus.NewRegistry(), tc.profiling)
			for path, code := range tc.want {
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				assert.Equal(t, code, rec.Code, path)
			}
		})
	}
}
