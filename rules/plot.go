package rules

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/internal/model"
)

// maxPlotPanels bounds the chart's size; the rest is listed as omitted.
const maxPlotPanels = 16

// WriteSVG draws each traced series of a replay with its baseline band and
// shades the spans where its alert fired.
func WriteSVG(w io.Writer, res *ReplayResult) error {
	const (
		width, panelH = 960.0, 170.0
		padL, padR    = 70.0, 20.0
		padT, padB    = 28.0, 24.0
	)
	traces := res.Traces
	omitted := 0
	if len(traces) > maxPlotPanels {
		omitted = len(traces) - maxPlotPanels
		traces = traces[:maxPlotPanels]
	}
	height := panelH*float64(len(traces)) + 10
	if len(traces) == 0 {
		height = 60
	}
	var b strings.Builder
	// The viewBox lets a page scale the chart to its width.
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	if len(traces) == 0 {
		b.WriteString(`<text x="10" y="30">no alerts in this replay</text>` + "\n")
	}
	// One time axis for every panel, so spans line up across series.
	var t0, t1 time.Time
	for _, tr := range traces {
		if n := len(tr.Points); n > 0 {
			if t0.IsZero() || tr.Points[0].T.Before(t0) {
				t0 = tr.Points[0].T
			}
			if tr.Points[n-1].T.After(t1) {
				t1 = tr.Points[n-1].T
			}
		}
	}
	for i, tr := range traces {
		y0 := float64(i) * panelH
		pts := tr.Points
		if len(pts) == 0 {
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range pts {
			for _, v := range []float64{p.Value, p.Lower, p.Upper} {
				if (v == p.Value || p.HasBand) && !math.IsNaN(v) && !math.IsInf(v, 0) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if math.IsInf(lo, 0) {
			lo, hi = 0, 1
		}
		if hi == lo {
			hi = lo + 1
		}
		span := t1.Sub(t0).Seconds()
		if span <= 0 {
			span = 1
		}
		x := func(t time.Time) float64 { return padL + (width-padL-padR)*t.Sub(t0).Seconds()/span }
		y := func(v float64) float64 {
			v = math.Max(lo, math.Min(hi, v))
			return y0 + padT + (panelH-padT-padB)*(1-(v-lo)/(hi-lo))
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold">%s %s</text>`+"\n", padL, y0+16, html.EscapeString(tr.Rule), html.EscapeString(tr.Labels.String()))
		// Alert spans.
		for _, s := range firingSpans(res.Transitions, tr, t1) {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f4b4b4" opacity="0.6"/>`+"\n",
				x(s[0]), y0+padT, math.Max(1, x(s[1])-x(s[0])), panelH-padT-padB)
		}
		// Band: upper edge forward, lower edge back, per contiguous run.
		var run []TracePoint
		flush := func() {
			if len(run) > 1 {
				var poly []string
				for _, p := range run {
					poly = append(poly, fmt.Sprintf("%.1f,%.1f", x(p.T), y(p.Upper)))
				}
				for j := len(run) - 1; j >= 0; j-- {
					poly = append(poly, fmt.Sprintf("%.1f,%.1f", x(run[j].T), y(run[j].Lower)))
				}
				fmt.Fprintf(&b, `<polygon points="%s" fill="#9ecae1" opacity="0.5"/>`+"\n", strings.Join(poly, " "))
			}
			run = run[:0]
		}
		for _, p := range pts {
			if p.HasBand {
				run = append(run, p)
			} else {
				flush()
			}
		}
		flush()
		var line []string
		for _, p := range pts {
			if !math.IsNaN(p.Value) {
				line = append(line, fmt.Sprintf("%.1f,%.1f", x(p.T), y(p.Value)))
			}
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#08519c" stroke-width="1.2"/>`+"\n", strings.Join(line, " "))
		// Axes labels.
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, y(hi)+4, fmtNum(hi))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, y(lo)+4, fmtNum(lo))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", padL, y0+panelH-6, t0.UTC().Format(time.RFC3339))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%s</text>`+"\n", width-padR, y0+panelH-6, t1.UTC().Format(time.RFC3339))
	}
	if omitted > 0 {
		fmt.Fprintf(&b, `<text x="10" y="%.0f">%d more series omitted</text>`+"\n", height-2, omitted)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// firingSpans returns [start, end] spans where tr's alert was firing.
func firingSpans(trs []Transition, tr *Trace, end time.Time) [][2]time.Time {
	var spans [][2]time.Time
	var start time.Time
	for _, t := range trs {
		if t.Rule != tr.Rule || !(labelsMatch(tr.Labels, t.Labels) || tr.Labels.Has("signal")) {
			continue
		}
		switch {
		case t.To == model.StateFiring:
			start = t.Time
		case t.From == model.StateFiring && !start.IsZero():
			spans = append(spans, [2]time.Time{start, t.Time})
			start = time.Time{}
		}
	}
	if !start.IsZero() {
		spans = append(spans, [2]time.Time{start, end})
	}
	return spans
}
