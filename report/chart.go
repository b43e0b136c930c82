package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid/present"
)

// Layout is the geometry of a timeline chart, in SVG user units.
type Layout struct {
	Name string // the chart's class: "wide" or "narrow"
	W    int
	// LabelW is the width of the lane names left of the lanes; 0 puts
	// each name above its lane instead.
	LabelW int
	LaneH  int
	// MaxTicks bounds the intervals of the time axis.
	MaxTicks int
	// LaneChars cuts longer lane names (whole in a tooltip).
	LaneChars int
}

// Wide is the desktop chart, at its natural size (the page's width less its
// margins): names left of the lanes. Markdown's chart file is this one.
var Wide = Layout{Name: "wide", W: 1032, LabelW: 200, LaneH: 30, MaxTicks: 8, LaneChars: 28}

// Narrow is the phone chart, scaled to the screen's width (a 390 px phone
// shows it at about 0.9): names above their lanes, fewer ticks.
var Narrow = Layout{Name: "narrow", W: 400, LaneH: 42, MaxTicks: 4, LaneChars: 60}

const (
	axisH      = 34
	markRadius = 4.5
	legendRowH = 22
)

// Chart is the timeline drawn as shapes: one lane per writer, each write a
// mark at the time it completed after a bar from when its cause became
// visible (the hop), the critical path drawn over the rest with links
// from each of its writes to the next, controller spans as bars.
type Chart struct {
	Layout
	H     int
	Label string // what the chart shows, for screen readers
	// PlotX0 and PlotX1 bound the time axis, FromNS and ToNS its times.
	PlotX0, PlotX1 int
	FromNS, ToNS   int64
	// LanesEnd is where the lanes end; GridTop and TickY place the time
	// axis above them.
	LanesEnd, GridTop, TickY int
	R                        float64 // a write's radius
	Lanes                    []ChartLane
	Ticks                    []Tick
	Spans                    []Bar
	Hops                     []Bar
	Links                    []Link
	Marks                    []Mark
	Legend                   []LegendItem
}

// ChartLane is one lane: its band and its name.
type ChartLane struct {
	Y         int
	NameX     int
	NameY     int
	Name      string // cut to LaneChars
	Full      string
	Alternate bool
	Writes    int
}

// Tick is a label of the time axis.
type Tick struct {
	X      float64
	Label  string
	Anchor string // start, middle, end
}

// Bar is a horizontal bar: a hop (the wait from a cause to its write) or a
// controller span.
type Bar struct {
	X1, X2, Y float64
	W         float64 // X2 - X1
	Critical  bool
	Title     string
	EventID   int64 // the write that waited, of a hop
}

// Link joins a critical-path write to the write it caused, across lanes.
type Link struct {
	X1, Y1, X2, Y2 float64
}

// Mark is one write.
type Mark struct {
	EventID  int64
	X, Y     float64
	Shape    string // "write", "critical", "failed"
	Path     string // the outline of a critical or failed mark, SVG path data
	Title    string
	Critical bool
}

// LegendItem is one entry of the legend: a sample of Kind at X, Y.
type LegendItem struct {
	Kind  string // critical, write, failed, hop, crit-hop, span
	X, Y  int
	Label string
}

var legend = []struct{ kind, label string }{
	{"critical", "critical path"}, {"write", "write"}, {"failed", "failed write"},
	{"hop", "wait for its cause"}, {"crit-hop", "critical wait"}, {"span", "controller span"},
}

// Chart lays out the report's timeline in layout l.
func (r *Report) Chart(l Layout) Chart {
	c := Chart{Layout: l, GridTop: axisH - 8, TickY: axisH - 14, R: markRadius,
		Label: fmt.Sprintf("Timeline of change %s: %s in %s, one lane per writer", r.Change.ID, present.Plural(len(r.Writes), "write"),
			present.Plural(len(r.Lanes), "lane"))}
	c.PlotX0, c.PlotX1 = 14, l.W-24
	if l.LabelW > 0 {
		c.PlotX0 = l.LabelW + 14
	}
	c.LanesEnd = axisH + l.LaneH*len(r.Lanes)
	// The axis starts at the earliest cause a write waited for, so that
	// every wait is drawn; its labels count from the change's start.
	lo, span := r.ChartNS, float64(r.EndNS-r.ChartNS)
	c.FromNS, c.ToNS = r.ChartNS, r.EndNS
	x := func(ns int64) float64 {
		f := float64(ns-lo) / span
		return round1(float64(c.PlotX0) + min(max(f, 0), 1)*float64(c.PlotX1-c.PlotX0))
	}
	// The marks sit in the middle of a lane, or under the name above them.
	markY := l.LaneH / 2
	if l.LabelW == 0 {
		markY = l.LaneH - 13
	}
	mid := func(lane int) float64 { return float64(axisH + l.LaneH*lane + markY) }
	count := make([]int, len(r.Lanes))
	for _, w := range r.Writes {
		count[w.Lane]++
	}
	for i, name := range r.Lanes {
		ln := ChartLane{Y: axisH + l.LaneH*i, Name: cut(name, l.LaneChars), Full: name, Alternate: i%2 == 1, Writes: count[i]}
		ln.NameX, ln.NameY = 10, ln.Y+l.LaneH/2+4
		if l.LabelW == 0 {
			ln.NameX, ln.NameY = c.PlotX0, ln.Y+13
		}
		c.Lanes = append(c.Lanes, ln)
	}
	ts, step := axisTicks(r.ChartNS-r.OriginNS, r.EndNS-r.OriginNS, l.MaxTicks)
	for i, t := range ts {
		tk := Tick{X: x(r.OriginNS + t), Label: "+" + tickLabel(t, step), Anchor: "middle"}
		switch {
		case t < 0:
			tk.Label = "−" + tickLabel(-t, step)
		case t == 0 && i > 0:
			tk.Label = "0 start"
		}
		switch {
		case i == 0 && tk.X < float64(c.PlotX0+30):
			tk.Anchor = "start"
		case tk.X > float64(c.PlotX1-30):
			tk.Anchor = "end"
		}
		c.Ticks = append(c.Ticks, tk)
	}
	lane := map[string]int{}
	for i, name := range r.Lanes {
		lane[name] = i
	}
	for _, s := range r.Spans {
		b := Bar{X1: x(s.StartNS), X2: max(x(s.EndNS), x(s.StartNS)+2), Y: mid(lane[s.Service]) - 12,
			Title: fmt.Sprintf("span %s of %s: +%s, %s", s.Name, s.Service, dur(s.StartNS-lo), dur(s.EndNS-s.StartNS))}
		b.W = round1(b.X2 - b.X1)
		c.Spans = append(c.Spans, b)
	}
	// Hops first, the critical ones last so that they are drawn on top.
	for _, critical := range []bool{false, true} {
		for _, w := range r.Writes {
			if w.CauseID == 0 || w.Critical != critical || w.HopNS <= 0 {
				continue
			}
			c.Hops = append(c.Hops, Bar{X1: x(w.CauseNS), X2: x(w.NS), Y: mid(w.Lane), Critical: critical, EventID: w.EventID,
				Title: fmt.Sprintf("%s waited %s (%s) for %s", w.Writer, dur(w.HopNS), explain(w.Explain), w.Object)})
		}
	}
	for _, w := range r.Writes {
		if w.Critical && w.Cause != nil && w.Cause.Lane != w.Lane {
			c.Links = append(c.Links, Link{X1: x(w.Cause.NS), Y1: mid(w.Cause.Lane), X2: x(w.CauseNS), Y2: mid(w.Lane)})
		}
	}
	for _, critical := range []bool{false, true} {
		for _, w := range r.Writes {
			if w.Critical != critical {
				continue
			}
			m := Mark{EventID: w.EventID, X: x(w.NS), Y: mid(w.Lane), Shape: "write", Critical: w.Critical, Title: markTitle(w)}
			switch {
			case w.Attempt:
				m.Shape = "failed"
				m.Path = fmt.Sprintf("M%g %gl8 8M%g %gl-8 8", m.X-4, m.Y-4, m.X+4, m.Y-4)
			case w.Critical:
				m.Shape = "critical"
				m.Path = fmt.Sprintf("M%g %gl6 6l-6 6l-6 -6z", m.X, m.Y-6)
			}
			c.Marks = append(c.Marks, m)
		}
	}
	// The legend under the lanes, its items as wide as their labels
	// (about 6.5 units a character), in as many rows as they need.
	lx, ly := c.PlotX0, c.LanesEnd+24
	failed := slices.ContainsFunc(r.Writes, func(w Write) bool { return w.Attempt })
	for _, it := range legend {
		if (it.kind == "span" && len(r.Spans) == 0) || (it.kind == "failed" && !failed) {
			continue
		}
		w := 22 + int(6.5*float64(len(it.label))) + 24
		if lx > c.PlotX0 && lx+w > c.PlotX1+24 {
			lx, ly = c.PlotX0, ly+legendRowH
		}
		c.Legend = append(c.Legend, LegendItem{Kind: it.kind, Label: it.label, X: lx, Y: ly})
		lx += w
	}
	c.H = ly + 18
	return c
}

// markTitle is a write's tooltip.
func markTitle(w Write) string {
	s := fmt.Sprintf("+%s %s %s %s", dur(w.OffsetNS), w.Writer, w.Verb, w.Object)
	if w.CauseID != 0 {
		s += fmt.Sprintf(" · hop %s, %s, rule %s, %s", dur(w.HopNS), explain(w.Explain), w.Rule, w.Confidence)
	}
	if w.Critical {
		s += " · critical path"
	}
	return s
}

// ticks returns offsets for a time axis of span ns: a round step (1, 2 or
// 5 times a power of ten ns) that gives at most n intervals.
func ticks(span int64, n int) []int64 {
	if span <= 0 {
		return []int64{0}
	}
	step := int64(0)
	for p := int64(1); step == 0; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if span/(m*p) <= int64(n) {
				step = m * p
				break
			}
		}
	}
	var out []int64
	for t := int64(0); t <= span; t += step {
		out = append(out, t)
	}
	return out
}

// axisTicks returns the offsets from the change's start of the ticks of
// an axis from offset from (0 or less) to to: the ticks of ticks() over
// the whole span, moved to multiples of their step from the start, and
// that step.
func axisTicks(from, to int64, n int) ([]int64, int64) {
	ts := ticks(to-from, n)
	step := int64(1)
	if len(ts) > 1 {
		step = ts[1]
	}
	if from == 0 {
		return ts, step
	}
	var out []int64
	for t := (from / step) * step; t <= to; t += step {
		if t >= from {
			out = append(out, t)
		}
	}
	return out, step
}

// tickLabel formats offset t of an axis whose ticks are step apart, in
// the unit of the step: "1.5s", "20ms", "500µs".
func tickLabel(t, step int64) string {
	switch {
	case t == 0:
		return "0"
	case step >= 1e9:
		return fmt.Sprintf("%ds", t/1e9)
	case step >= 1e8:
		return fmt.Sprintf("%.1fs", float64(t)/1e9)
	case step >= 1e6:
		return fmt.Sprintf("%dms", t/1e6)
	case step >= 1e3:
		return fmt.Sprintf("%dµs", t/1e3)
	}
	return fmt.Sprintf("%dns", t)
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// cut shortens s to n characters with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
