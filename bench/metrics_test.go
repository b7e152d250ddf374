package bench

import (
	"strings"
	"testing"
)

const sampleMetrics = `# HELP rest_client_requests_total [ALPHA] Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:1",method="GET"} 10
rest_client_requests_total{code="201",host="127.0.0.1:1",method="POST"} 7
rest_client_requests_total{code="409",host="127.0.0.1:1",method="POST"} 1
# HELP rest_client_rate_limiter_duration_seconds [ALPHA] Client side rate limiter latency in seconds.
# TYPE rest_client_rate_limiter_duration_seconds histogram
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:1",verb="POST",le="0.005"} 6
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:1",verb="POST",le="0.025"} 7
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:1",verb="POST",le="+Inf"} 8
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:1",verb="POST"} 0.5
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:1",verb="POST"} 8
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:1",verb="GET",le="0.005"} 10
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:1",verb="GET"} 0.25
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:1",verb="GET"} 10
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 3.5
`

func TestParseClientStats(t *testing.T) {
	s, err := ParseClientStats(strings.NewReader(sampleMetrics))
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests["GET"] != 10 || s.Requests["POST"] != 8 || s.TotalRequests() != 18 {
		t.Errorf("requests = %v", s.Requests)
	}
	if tl := s.TotalLimiter(); tl.Waits != 18 || tl.Throttled != 2 || tl.Seconds != 0.75 || s.CPUSeconds != 3.5 {
		t.Errorf("stats = %+v, limiter %+v", s, tl)
	}
	if v, l := s.MostThrottled(1); v != "POST" || l.Throttled != 2 {
		t.Errorf("most throttled = %s %+v", v, l)
	}
	if v, _ := s.MostThrottled(20); v != "" {
		t.Errorf("most throttled among verbs with 20 requests = %s, want none", v)
	}
	d := s.Sub(ClientStats{Requests: map[string]float64{"GET": 10, "POST": 2}, Limiter: map[string]LimiterStats{"GET": {Waits: 10, Seconds: 0.25}}, CPUSeconds: 1})
	if len(d.Requests) != 1 || d.Requests["POST"] != 6 || len(d.Limiter) != 1 || d.Limiter["POST"].Waits != 8 || d.CPUSeconds != 2.5 {
		t.Errorf("difference = %+v", d)
	}
}

func TestParseServerStats(t *testing.T) {
	const in = `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="PATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 7
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="POST",le="+Inf"} 99
apiserver_request_duration_seconds_sum{verb="POST"} 1
apiserver_request_duration_seconds_count{verb="POST"} 99
process_cpu_seconds_total 12.5
`
	s, err := ParseServerStats(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUSeconds != 12.5 || s.Writes() != 8 || s.Requests["LIST"] != 7 || s.WritesByResource["POST pods/binding"] != 5 || s.WritesByResource["PATCH pods"] != 3 || len(s.WritesByResource) != 2 {
		t.Errorf("stats = %+v", s)
	}
	if d := s.Sub(ServerStats{CPUSeconds: 2.5, Requests: map[string]float64{"LIST": 7, "POST": 1}}); d.CPUSeconds != 10 || d.Writes() != 7 || len(d.Requests) != 2 {
		t.Errorf("difference = %+v", d)
	}
}

func TestPodWrites(t *testing.T) {
	s := ServerStats{Requests: map[string]float64{"POST": 10, "PATCH": 7, "PUT": 2, "LIST": 4},
		WritesByResource: map[string]float64{"POST pods/binding": 10, "PATCH pods": 3, "PATCH nodes/status": 4, "PUT leases": 2}}
	if s.Writes() != 19 || s.PodWrites() != 13 {
		t.Errorf("writes %v, pod writes %v; want 19 and 13 (the node heartbeats left out)", s.Writes(), s.PodWrites())
	}
}
