package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
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
	d := ClientStats{Requests: map[string]float64{}, Limiter: map[string]LimiterStats{}, CPUSeconds: s.CPUSeconds - o.CPUSeconds}
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

// ParseClientStats reads the Prometheus text format for client-go's request and rate-limiter
// metrics and the process's CPU time.
func ParseClientStats(r io.Reader) (ClientStats, error) {
	s := ClientStats{Requests: map[string]float64{}, Limiter: map[string]LimiterStats{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, ok := metricLine(line)
		if !ok {
			continue
		}
		l := s.Limiter[labels["verb"]]
		switch name {
		case "rest_client_requests_total":
			s.Requests[labels["method"]] += value
		case "rest_client_rate_limiter_duration_seconds_count":
			l.Waits += value
			l.Throttled += value
		case "rest_client_rate_limiter_duration_seconds_bucket":
			if labels["le"] == "0.005" {
				l.Throttled -= value
			}
		case "rest_client_rate_limiter_duration_seconds_sum":
			l.Seconds += value
		case "process_cpu_seconds_total":
			s.CPUSeconds = value
		}
		if strings.HasPrefix(name, "rest_client_rate_limiter_duration_seconds") {
			s.Limiter[labels["verb"]] = l
		}
	}
	return s, sc.Err()
}

// metricLine splits `name{a="b",...} value`.
func metricLine(line string) (string, map[string]string, float64, bool) {
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(line[sp+1:], 64)
	if err != nil {
		return "", nil, 0, false
	}
	head := line[:sp]
	name, rest, hasLabels := strings.Cut(head, "{")
	labels := map[string]string{}
	if hasLabels {
		for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
			k, val, ok := strings.Cut(kv, "=")
			if ok {
				labels[k] = strings.Trim(val, `"`)
			}
		}
	}
	return name, labels, v, true
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
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "process_cpu_seconds_total") && !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		name, labels, value, ok := metricLine(line)
		switch {
		case !ok:
		case name == "process_cpu_seconds_total":
			s.CPUSeconds = value
		case name == "apiserver_request_total":
			s.Requests[labels["verb"]] += value
			if slices.Contains(writeVerbs, labels["verb"]) {
				res := labels["resource"]
				if sub := labels["subresource"]; sub != "" {
					res += "/" + sub
				}
				s.WritesByResource[labels["verb"]+" "+res] += value
			}
		}
	}
	return s, sc.Err()
}
