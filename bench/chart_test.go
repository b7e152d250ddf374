package bench

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestThroughputSVG(t *testing.T) {
	runs := []Run{
		{Mode: Backlog, Scheduler: Plain, Pair: 1, PodsPerSecond: 50, Curve: []float64{0.1, 0.2, 0.5}},
		{Mode: Backlog, Scheduler: Gang, Pair: 1, PodsPerSecond: 40, Curve: []float64{0.3, 0.4, 0.9}},
		{Mode: Running, Scheduler: Plain, Pair: 1, Error: "failed"},
	}
	svg := ThroughputSVG(runs, []Mode{Running, Backlog}, "title <&>", "")
	var doc struct{ XMLName xml.Name }
	if err := xml.Unmarshal(svg, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Fatalf("not an SVG document (%v):\n%s", err, svg)
	}
	s := string(svg)
	if strings.Count(s, "<polyline") != 2 || !strings.Contains(s, "no successful run") || !strings.Contains(s, "title &lt;&amp;&gt;") || strings.Contains(s, "O: ") {
		t.Errorf("unexpected chart:\n%s", s)
	}
	withOther := string(ThroughputSVG(append(runs, Run{Mode: Backlog, Scheduler: Other, Pair: 1, PodsPerSecond: 45, Curve: []float64{0.2, 0.6}}), []Mode{Backlog}, "t", "coscheduling"))
	if strings.Count(withOther, "<polyline") != 3 || !strings.Contains(withOther, "O: coscheduling") || !strings.Contains(withOther, schedulerColour[Other]) {
		t.Errorf("chart without O's run:\n%s", withOther)
	}
}

func TestNiceStep(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 7: 2, 10: 2, 13: 5, 512: 200, 0.9: 0.2} {
		if got := niceStep(v); got != want {
			t.Errorf("niceStep(%v) = %v, want %v", v, got, want)
		}
	}
}
