package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart geometry (SVG user units).
const (
	chartPanelW, chartPanelH = 460.0, 300.0
	chartLeft, chartRight    = 60.0, 20.0
	chartTop, chartBottom    = 50.0, 50.0
)

var schedulerColour = map[Scheduler]string{Plain: "#1f77b4", Gang: "#ff7f0e", Native: "#9467bd", GangWebhook: "#8c564b", Other: "#2ca02c"}

// legendEntryW is the width of one legend entry.
const legendEntryW = 330

// ThroughputSVG draws, for each mode, the pods bound over time of every run: one line per
// run, A (kube-scheduler) blue, B (workmap-scheduler) orange, D (native gangs) purple, E
// (workmap-scheduler with workmap-webhook) brown and O (other, named otherName) green.
func ThroughputSVG(runs []Run, modes []Mode, title, otherName string) []byte {
	width := chartPanelW * float64(max(len(modes), 1))
	scheds := Present(runs)
	perRow := max(int(width-20)/legendEntryW, 1)
	rows := (len(scheds) + perRow - 1) / perRow
	height := chartPanelH + 40 + 18*float64(rows-1)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" text-anchor="middle" font-size="15">%s</text>`+"\n", width/2, html.EscapeString(title))
	for i, mode := range modes {
		panel(&b, float64(i)*chartPanelW, 20, mode, runsOf(runs, mode))
	}
	// Legend.
	labels := map[Scheduler]string{Plain: "A: kube-scheduler, default profile, no gangs", Gang: "B: workmap-scheduler, gangs",
		Native: "D: kube-scheduler, native gangs (workmap-webhook)", GangWebhook: "E: workmap-scheduler with workmap-webhook", Other: "O: " + otherName}
	for i, s := range scheds {
		lx, ly := 20.0+float64(i%perRow*legendEntryW), chartPanelH+26+18*float64(i/perRow)
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="2"/>`, lx, ly-4, lx+24, ly-4, schedulerColour[s])
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", lx+30, ly, html.EscapeString(labels[s]))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func runsOf(runs []Run, mode Mode) []Run {
	var out []Run
	for _, r := range runs {
		if r.Mode == mode && len(r.Curve) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func panel(b *strings.Builder, x0, y0 float64, mode Mode, runs []Run) {
	maxT, maxN := 0.0, 0
	for _, r := range runs {
		maxT = math.Max(maxT, r.Curve[len(r.Curve)-1])
		maxN = max(maxN, len(r.Curve))
	}
	xStep, yStep := niceStep(maxT), niceStep(float64(maxN))
	maxT = math.Max(xStep, math.Ceil(maxT/xStep)*xStep)
	maxY := math.Max(yStep, math.Ceil(float64(maxN)/yStep)*yStep)
	left, top := x0+chartLeft, y0+chartTop
	w, h := chartPanelW-chartLeft-chartRight, chartPanelH-chartTop-chartBottom
	px := func(t float64) float64 { return left + t/maxT*w }
	py := func(n float64) float64 { return top + h - n/maxY*h }
	name := map[Mode]string{Running: "pods created while the scheduler runs", Backlog: "backlog: scheduler started after all pods exist"}[mode]
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", left+w/2, top-12, html.EscapeString(name))
	for t := 0.0; t <= maxT+1e-9; t += xStep {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, px(t), top, px(t), top+h)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(t), top+h+16, trimFloat(t))
	}
	for n := 0.0; n <= maxY+1e-9; n += yStep {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, left, py(n), left+w, py(n))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(n)+4, trimFloat(n))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", left, top, w, h)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">seconds</text>`+"\n", left+w/2, top+h+34)
	fmt.Fprintf(b, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">pods bound</text>`+"\n", x0+16, top+h/2)
	if len(runs) == 0 {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">no successful run</text>`+"\n", left+w/2, top+h/2)
		return
	}
	for _, r := range runs {
		var pts strings.Builder
		fmt.Fprintf(&pts, "%.1f,%.1f", px(0), py(0))
		for i, t := range r.Curve {
			fmt.Fprintf(&pts, " %.1f,%.1f", px(t), py(float64(i+1)))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-opacity="0.8"><title>%s pair %d: %.1f pods/s</title></polyline>`+"\n",
			pts.String(), schedulerColour[r.Scheduler], r.Scheduler, r.Pair, r.PodsPerSecond)
	}
}

// niceStep picks a grid step of 1, 2 or 5 × 10^k giving about five lines up to v.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	raw := v / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
