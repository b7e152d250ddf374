package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ClientStats are a scheduler process's API client counters (client-go's metrics, served
// on its /metrics), or the difference of two readings.
type ClientStats struct {
	// Requests by HTTP method.
	Requests map[string]float64 `json:"requests"`
	// Limiter is the client rate limiter's record by verb.
	Limiter map[string]LimiterStats `json:"limiter"`
	// CPUSeconds is the process's CPU time.
	CPUSeconds float64 `json:"cpu_seconds"`
	// RSSBytes is the process's resident memory when read (in a difference: the later
	// reading's).
	RSSBytes float64 `json:"rss_bytes,omitempty"`
}

// LimiterStats count requests that went through the client rate limiter (Waits), those that
// waited more than 5 ms for it (Throttled), and the waits summed (Seconds).
type LimiterStats struct {
	Waits     float64 `json:"waits"`
	Throttled float64 `json:"throttled"`
	Seconds   float64 `json:"seconds"`
}

// TotalRequests sums the requests of every method.
func (s ClientStats) TotalRequests() float64 {
	t := 0.0
	for _, v := range s.Requests {
		t += v
	}
	return t
}

// TotalLimiter sums the limiter's record over every verb.
func (s ClientStats) TotalLimiter() LimiterStats {
	var t LimiterStats
	for _, l := range s.Limiter {
		t.Waits += l.Waits
		t.Throttled += l.Throttled
		t.Seconds += l.Seconds
	}
	return t
}

// MostThrottled returns the verb whose requests were throttled most often (as a fraction),
// among verbs with at least minWaits requests.
func (s ClientStats) MostThrottled(minWaits float64) (string, LimiterStats) {
	verbs := make([]string, 0, len(s.Limiter))
	for v := range s.Limiter {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	best, bestStats, bestFrac := "", LimiterStats{}, -1.0
	for _, v := range verbs {
		l := s.Limiter[v]
		if l.Waits < minWaits || l.Waits == 0 {
			continue
		}
		if f := l.Throttled / l.Waits; f > bestFrac {
			best, bestStats, bestFrac = v, l, f
		}
	}
	return best, bestStats
}

// Sub returns s − o.
func (s ClientStats) Sub(o ClientStats) ClientStats {
	d := ClientStats{Requests: map[string]float64{}, Limiter: map[string]LimiterStats{}, CPUSeconds: s.CPUSeconds - o.CPUSeconds, RSSBytes: s.RSSBytes}
	for k, v := range s.Requests {
		if n := v - o.Requests[k]; n != 0 {
			d.Requests[k] = n
		}
	}
	for k, v := range s.Limiter {
		p := o.Limiter[k]
		if l := (LimiterStats{Waits: v.Waits - p.Waits, Throttled: v.Throttled - p.Throttled, Seconds: v.Seconds - p.Seconds}); l.Waits != 0 {
			d.Limiter[k] = l
		}
	}
	return d
}

var insecure = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback, self-signed

// Scrape reads the client counters from a scheduler's /metrics (base is its HTTPS URL).
func Scrape(ctx context.Context, base string) (ClientStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return ClientStats{}, err
	}
	resp, err := insecure.Do(req)
	if err != nil {
		return ClientStats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ClientStats{}, fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	return ParseClientStats(resp.Body)
}

// ParseClientStats reads client-go's request and rate-limiter metrics and the process's CPU
// time from the Prometheus text format.
func ParseClientStats(r io.Reader) (ClientStats, error) {
	s := ClientStats{Requests: map[string]float64{}, Limiter: map[string]LimiterStats{}}
	families, err := parseMetrics(r)
	if err != nil {
		return s, err
	}
	for _, m := range families["rest_client_requests_total"].GetMetric() {
		s.Requests[label(m, "method")] += value(m)
	}
	for _, m := range families["rest_client_rate_limiter_duration_seconds"].GetMetric() {
		h := m.GetHistogram()
		l := s.Limiter[label(m, "verb")]
		l.Waits += float64(h.GetSampleCount())
		l.Throttled += float64(h.GetSampleCount())
		l.Seconds += h.GetSampleSum()
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == 0.005 {
				l.Throttled -= float64(b.GetCumulativeCount())
			}
		}
		s.Limiter[label(m, "verb")] = l
	}
	s.CPUSeconds = processCPU(families)
	for _, m := range families["process_resident_memory_bytes"].GetMetric() {
		s.RSSBytes = value(m)
	}
	return s, nil
}

// parseMetrics reads the Prometheus text format, by metric family name.
func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(r)
}

// label is the value of a sample's label ("" when it has none of that name).
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// value is a counter's, gauge's or untyped sample's value.
func value(m *dto.Metric) float64 {
	return m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
}

func processCPU(families map[string]*dto.MetricFamily) float64 {
	for _, m := range families["process_cpu_seconds_total"].GetMetric() {
		return value(m)
	}
	return 0
}

// ServerStats are the API server's own counters: its CPU time and the requests it served
// by verb (all clients), or the difference of two readings.
type ServerStats struct {
	CPUSeconds float64            `json:"cpu_seconds"`
	Requests   map[string]float64 `json:"requests"`
	// WritesByResource counts the writes by "VERB resource[/subresource]".
	WritesByResource map[string]float64 `json:"writes_by_resource"`
}

var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "APPLY"}

// Writes sums the requests that change objects.
func (s ServerStats) Writes() float64 {
	t := 0.0
	for _, v := range writeVerbs {
		t += s.Requests[v]
	}
	return t
}

// HeartbeatWrites are the writes of kwok's node heartbeats (node status and node Leases):
// they follow the clock, not the pods, so a longer window has more of them. With leader
// election off, no scheduler in the bench writes a Lease.
var HeartbeatWrites = []string{"PATCH nodes/status", "PUT leases"}

// PodWrites are the writes less the node heartbeats: what the pods of a run cost.
func (s ServerStats) PodWrites() float64 {
	t := s.Writes()
	for _, k := range HeartbeatWrites {
		t -= s.WritesByResource[k]
	}
	return t
}

// Sub returns s − o.
func (s ServerStats) Sub(o ServerStats) ServerStats {
	d := ServerStats{CPUSeconds: s.CPUSeconds - o.CPUSeconds, Requests: map[string]float64{}, WritesByResource: map[string]float64{}}
	for k, v := range s.Requests {
		if n := v - o.Requests[k]; n != 0 {
			d.Requests[k] = n
		}
	}
	for k, v := range s.WritesByResource {
		if n := v - o.WritesByResource[k]; n != 0 {
			d.WritesByResource[k] = n
		}
	}
	return d
}

// ParseServerStats reads process_cpu_seconds_total and apiserver_request_total by verb.
func ParseServerStats(r io.Reader) (ServerStats, error) {
	s := ServerStats{Requests: map[string]float64{}, WritesByResource: map[string]float64{}}
	families, err := parseMetrics(r)
	if err != nil {
		return s, err
	}
	s.CPUSeconds = processCPU(families)
	for _, m := range families["apiserver_request_total"].GetMetric() {
		verb, n := label(m, "verb"), value(m)
		s.Requests[verb] += n
		if slices.Contains(writeVerbs, verb) {
			res := label(m, "resource")
			if sub := label(m, "subresource"); sub != "" {
				res += "/" + sub
			}
			s.WritesByResource[verb+" "+res] += n
		}
	}
	return s, nil
}
