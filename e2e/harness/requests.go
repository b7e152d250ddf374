package harness

import (
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
)

// Requests records the API requests ("METHOD /path") made through the configs it wraps, so
// tests can count them.
type Requests struct {
	mu   sync.Mutex
	list []string
}

// Wrap returns a copy of cfg whose requests are recorded.
func (r *Requests) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recording{rt, r} })
	return cfg
}

// List returns the requests recorded so far.
func (r *Requests) List() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.list...)
}

// Reset forgets the requests recorded so far.
func (r *Requests) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = nil
}

type recording struct {
	next http.RoundTripper
	r    *Requests
}

func (t recording) RoundTrip(req *http.Request) (*http.Response, error) {
	t.r.mu.Lock()
	t.r.list = append(t.r.list, req.Method+" "+req.URL.Path)
	t.r.mu.Unlock()
	return t.next.RoundTrip(req)
}
