package webview

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// broker wakes the open event streams when a new snapshot is published.
type broker struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func (b *broker) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[chan struct{}]struct{}{}
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}
}

func (b *broker) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- struct{}{}:
		default: // already woken; it will render the newest snapshot
		}
	}
}

// heartbeat keeps idle event streams open through proxies.
const heartbeat = 20 * time.Second

// serveEvents streams the live part of a page as server-sent events: an `update` event
// carrying the part re-rendered (HTML, escaped by html/template) whenever the snapshot
// changes. The query names the page (view=overview with its filters, view=workload with
// group, kind, namespace and name, or view=topology); since (or Last-Event-ID) is the version the page shows.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported by this connection", http.StatusInternalServerError)
		return
	}
	q := r.URL.Query()
	render := s.fragmentRenderer(q)
	if render == nil {
		http.Error(w, "unknown view: use view=overview, view=workload or view=topology", http.StatusBadRequest)
		return
	}
	last, _ := strconv.ParseUint(q.Get("since"), 10, 64)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		last, _ = strconv.ParseUint(id, 10, 64)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()

	woken, unsubscribe := s.events.subscribe()
	defer unsubscribe()
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	for {
		if snap := s.Snapshot(); snap.Version != last {
			var buf bytes.Buffer
			if err := render(&buf, snap); err != nil {
				s.log.Error("rendering an update", "error", err)
				return
			}
			writeEvent(w, snap.Version, "update", buf.String())
			flusher.Flush()
			last = snap.Version
		}
		select {
		case <-r.Context().Done():
			return
		case <-woken:
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
			flusher.Flush()
		}
	}
}

func writeEvent(w http.ResponseWriter, id uint64, event, data string) {
	var b strings.Builder
	fmt.Fprintf(&b, "id: %d\nevent: %s\n", id, event)
	for _, line := range strings.Split(data, "\n") {
		b.WriteString("data: ")
		b.WriteString(strings.TrimSuffix(line, "\r"))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, _ = w.Write([]byte(b.String()))
}
