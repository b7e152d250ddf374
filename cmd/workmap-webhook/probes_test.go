package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// A client that keeps connections open and idle (a scraper with a new transport per
// scrape) must not hold a goroutine in the webhook for good.
func TestServerClosesIdleConnections(t *testing.T) {
	server := newServer("127.0.0.1:0", probeMux(prometheus.NewRegistry(), false))
	require.Equal(t, idleTimeout, server.IdleTimeout)
	require.NotZero(t, server.ReadHeaderTimeout)

	server.IdleTimeout = 100 * time.Millisecond // the same server, a timeout a test can wait for
	l, err := net.Listen("tcp", server.Addr)
	require.NoError(t, err)
	go func() { _ = server.Serve(l) }()
	t.Cleanup(func() { _ = server.Close() })

	conn, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: probe\r\n\r\n")
	require.NoError(t, err)
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, resp.Close, "the connection is kept alive after the answer")

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = reader.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closes the idle connection")
}
