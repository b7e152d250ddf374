package webview

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/workmap/workmap/definitions"
)

//go:embed assets
var assets embed.FS

// listShown is how many pods of a role or instance, or instances of a role, a workload's page
// lists before it folds the rest ("and 60 more", expandable).
const listShown = 10

// shown are the items of a list the page shows; folded the rest.
func shown[T any](items []T) []T  { return items[:min(len(items), listShown)] }
func folded[T any](items []T) []T { return items[min(len(items), listShown):] }

var funcs = template.FuncMap{
	"shown":           shown[definitions.FoundPod],
	"folded":          folded[definitions.FoundPod],
	"shownInstances":  shown[definitions.Instance],
	"foldedInstances": folded[definitions.Instance],
	"number":          number,
	"age":             age,
	"phases":          podPhases,
	"lower":           strings.ToLower,
	"slug":            func(v any) string { return strings.ReplaceAll(strings.ToLower(fmt.Sprint(v)), " ", "-") },
	"rfc3339":         func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"resources": func(rs []Resource) string {
		if len(rs) == 0 {
			return "-"
		}
		return resourcesText(rs)
	},
	"quantity": func(q resource.Quantity) string { return q.String() },
	"priority": func(p *int32) int32 { return *p },
	"deref": func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	},
}

// pageTemplates are the pages, each the layout around its own body.
type pageTemplates struct{ overview, workload, topology *template.Template }

// parsePages parses the embedded templates when the first server is made, not when the
// program starts: every workmap command links this package, and only `serve` renders pages.
// The templates are part of the binary and tested, so one that does not parse is a bug.
var parsePages = sync.OnceValue(func() pageTemplates {
	parse := func(body string) *template.Template {
		return template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+body+".html"))
	}
	return pageTemplates{overview: parse("overview"), workload: parse("workload"), topology: parse("topology")}
})

// page is what the layout needs.
type page struct {
	Title string
	// Events is the URL of the page's event stream.
	Events string
	Snap   *Snapshot
	View   any
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveOverview)
	mux.HandleFunc("GET /workloads/{group}/{kind}/{namespace}/{name}", s.serveWorkload)
	mux.HandleFunc("GET /workloads/{group}/{kind}/{namespace}/{name}/json", s.serveWorkloadJSON)
	mux.HandleFunc("GET /api/workloads", s.serveWorkloadsJSON)
	mux.HandleFunc("GET /topology", s.serveTopology)
	mux.HandleFunc("GET /events", s.serveEvents)
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	metrics := prometheus.NewPedanticRegistry()
	metrics.MustRegister(newCollector(s.Snapshot), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	metrics.MustRegister(s.health.collectors()...)
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	return secure(mux)
}

// secure sets headers that keep the pages to their own assets.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

func (s *Server) serveOverview(w http.ResponseWriter, r *http.Request) {
	snap := s.Snapshot()
	q := parseOverviewQuery(r.URL.Query())
	events := q.values()
	events.Set("view", "overview")
	events.Set("since", strconv.FormatUint(snap.Version, 10))
	s.render(w, http.StatusOK, s.pages.overview, page{Title: "Workloads", Events: "/events?" + events.Encode(), Snap: snap, View: newOverviewView(snap, q)})
}

func keyOf(r *http.Request) Key {
	k := Key{Group: r.PathValue("group"), Kind: r.PathValue("kind"), Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if k.Group == "core" {
		k.Group = ""
	}
	return k
}

func (s *Server) serveWorkload(w http.ResponseWriter, r *http.Request) {
	snap := s.Snapshot()
	k := keyOf(r)
	v := newWorkloadView(snap, k)
	if v.Entry != nil {
		v.Events, v.EventsNote = s.watcher.workloadEvents(v.Entry)
	}
	events := url.Values{"view": {"workload"}, "group": {k.Group}, "kind": {k.Kind}, "namespace": {k.Namespace}, "name": {k.Name}, "since": {strconv.FormatUint(snap.Version, 10)}}
	status := http.StatusOK
	if v.Entry == nil {
		status = http.StatusNotFound
	}
	s.render(w, status, s.pages.workload, page{Title: k.Kind + " " + k.Namespace + "/" + k.Name, Events: "/events?" + events.Encode(), Snap: snap, View: v})
}

// serveTopology draws the nodes in their topology domains with the GPUs workloads hold, and
// lists the gangs that wait.
func (s *Server) serveTopology(w http.ResponseWriter, _ *http.Request) {
	snap := s.Snapshot()
	events := url.Values{"view": {"topology"}, "since": {strconv.FormatUint(snap.Version, 10)}}
	s.render(w, http.StatusOK, s.pages.topology, page{Title: "Topology", Events: "/events?" + events.Encode(), Snap: snap, View: newTopologyView(snap, s.opts.TopologyLevels)})
}

// serveWorkloadJSON writes the workload as `workmap tree -o json` does.
func (s *Server) serveWorkloadJSON(w http.ResponseWriter, r *http.Request) {
	snap := s.Snapshot()
	k := keyOf(r)
	e, ok := snap.Lookup(k)
	switch {
	case !ok:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": missingText(snap, k)})
	case e.Workload == nil:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": e.Err})
	default:
		writeJSON(w, http.StatusOK, definitions.NewWorkloadTree(e.Workload))
	}
}

// serveWorkloadsJSON writes every workload resolved, as `workmap get -o json` does: a List
// of WorkloadTree documents.
func (s *Server) serveWorkloadsJSON(w http.ResponseWriter, _ *http.Request) {
	snap := s.Snapshot()
	var out []*definitions.Workload
	for _, e := range snap.Entries {
		if e.Workload != nil {
			out = append(out, e.Workload)
		}
	}
	writeJSON(w, http.StatusOK, definitions.NewWorkloadTreeList(out))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Server) render(w http.ResponseWriter, status int, t *template.Template, p page) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "page", p); err != nil {
		s.log.Error("rendering a page", "error", err)
		http.Error(w, "cannot render the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// fragmentRenderer renders the live part of the page an event stream's query names.
func (s *Server) fragmentRenderer(q url.Values) func(io.Writer, *Snapshot) error {
	switch q.Get("view") {
	case "overview":
		oq := parseOverviewQuery(q)
		return func(w io.Writer, snap *Snapshot) error {
			return s.pages.overview.ExecuteTemplate(w, "live", newOverviewView(snap, oq))
		}
	case "workload":
		k := Key{Group: q.Get("group"), Kind: q.Get("kind"), Namespace: q.Get("namespace"), Name: q.Get("name")}
		return func(w io.Writer, snap *Snapshot) error {
			return s.pages.workload.ExecuteTemplate(w, "live", newWorkloadView(snap, k))
		}
	case "topology":
		return func(w io.Writer, snap *Snapshot) error {
			return s.pages.topology.ExecuteTemplate(w, "live", newTopologyView(snap, s.opts.TopologyLevels))
		}
	}
	return nil
}

// number prints a count that may be fractional: 12, 0.5.
func number(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }
