package tui

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// Glyphs of the timeline chart. The critical path has its own, so it shows
// without color.
const (
	glyphWrite    = '●'
	glyphCritical = '◆'
	glyphFailed   = '✕'
	glyphHop      = '─'
	glyphHopCrit  = '━'
	glyphSpan     = '▬'
)

// timelineView draws a change's writes on a time axis, one lane per
// controller (or per object): each write is a mark at the time it completed,
// preceded by a bar from when its cause became visible (the hop), and
// controller spans are bars in their service's lane. A list of the writes
// runs under the chart, with the cursor, and the selected write's detail.
type timelineView struct {
	c       *changeScreen
	all     []cpid.TimelineEntry
	spans   []cpid.ChangeSpan
	ents    []cpid.TimelineEntry // what the filter keeps
	filter  string
	cursor  int
	listTop int
	laneTop int
	zoom    float64                     // 1 shows the whole change; 2 half of it...
	byObj   bool                        // lanes per object instead of per controller
	anoms   map[int64][]cpid.AnomalyRow // by event
	focus   int64                       // the write to put the cursor on once loaded (0: none)
	slowest bool                        // put the cursor on the slowest hop once loaded
}

func (t *timelineView) set(ents []cpid.TimelineEntry, spans []cpid.ChangeSpan) {
	keep := int64(-1)
	if e, ok := t.cursorEntry(); ok {
		keep = e.EventID
	}
	if t.focus != 0 {
		keep, t.focus = t.focus, 0
	}
	t.all, t.spans = ents, spans
	t.apply(keep)
	if t.slowest {
		t.slowest = false
		t.jumpSlowest()
	}
}

// jumpSlowest puts the cursor on the write that waited longest for its
// cause (the first of them), clearing a filter that hides it.
func (t *timelineView) jumpSlowest() {
	best := -1
	for i, e := range t.all {
		if e.CauseID != 0 && (best < 0 || e.HopNS > t.all[best].HopNS) {
			best = i
		}
	}
	if best < 0 {
		return
	}
	if !t.shows(t.all[best]) {
		t.filter = ""
	}
	t.apply(t.all[best].EventID)
}

// stepCritical moves the cursor to the next (or previous) write of the
// critical path in the list, from the cursor.
func (t *timelineView) stepCritical(dir int) {
	for i := t.cursor + dir; i >= 0 && i < len(t.ents); i += dir {
		if t.ents[i].Critical {
			t.cursor = i
			return
		}
	}
}

// shows reports whether the filter keeps e.
func (t *timelineView) shows(e cpid.TimelineEntry) bool {
	return t.filter == "" || strings.Contains(strings.ToLower(t.entryText(e)), strings.ToLower(t.filter))
}

// apply filters the entries, keeping the cursor on event keep if it stays.
func (t *timelineView) apply(keep int64) {
	t.ents = t.ents[:0:0]
	for _, e := range t.all {
		if t.shows(e) {
			t.ents = append(t.ents, e)
		}
	}
	for i, e := range t.ents {
		if e.EventID == keep {
			t.cursor = i
		}
	}
	t.cursor = clamp(t.cursor, len(t.ents))
}

// entryText is what the filter looks into: the writer, verb, object, HTTP
// code, CPID, rule, why it waited, and its anomalies.
func (t *timelineView) entryText(e cpid.TimelineEntry) string {
	parts := []string{e.Writer, present.Verb(e.Verb, e.Subresource), object(e.Kind, e.Namespace, e.Name), fmt.Sprint(e.Code), e.CPID, e.Rule,
		e.Origin, string(e.Explain), string(e.Confidence)}
	for _, a := range t.anoms[e.EventID] {
		parts = append(parts, "anomaly", a.Kind)
	}
	return strings.Join(parts, " ")
}

func (t *timelineView) cursorEntry() (cpid.TimelineEntry, bool) {
	if t.cursor < 0 || t.cursor >= len(t.ents) {
		return cpid.TimelineEntry{}, false
	}
	return t.ents[t.cursor], true
}

func (t *timelineView) laneOf(e cpid.TimelineEntry) string {
	if t.byObj {
		return e.Kind + " " + e.Name
	}
	return e.Writer
}

// lanes names the lanes in order of their first write.
func (t *timelineView) lanes() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range t.ents {
		if l := t.laneOf(e); !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	if !t.byObj {
		for _, s := range t.spans {
			if !seen[s.Service] {
				seen[s.Service] = true
				out = append(out, s.Service)
			}
		}
	}
	return out
}

// bounds is the whole change's time range (present.Extent): from the
// user's request, or a span begun before it, to the last write or span
// end.
func (t *timelineView) bounds() (int64, int64) {
	if len(t.all) == 0 {
		return 0, 1
	}
	return present.Extent(t.all, t.spans)
}

// shown is the time window on screen: the whole change divided by the
// zoom, centered on the cursor.
func (t *timelineView) shown() (int64, int64) {
	lo, hi := t.bounds()
	span := int64(float64(hi-lo) / t.zoom)
	if span < 1 {
		span = 1
	}
	from := lo
	if e, ok := t.cursorEntry(); ok && t.zoom > 1 {
		from = e.NS - span/2
	}
	from = max(lo, min(from, hi-span))
	return from, from + span
}

func (t *timelineView) update(msg tea.Msg) tea.Cmd {
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	k := &t.c.a.keys
	n := len(t.ents)
	switch {
	case key.Matches(km, k.Up, k.Left):
		t.cursor = clamp(t.cursor-1, n)
	case key.Matches(km, k.Down, k.Right):
		t.cursor = clamp(t.cursor+1, n)
	case key.Matches(km, k.PageUp):
		t.cursor = clamp(t.cursor-10, n)
	case key.Matches(km, k.PageDown):
		t.cursor = clamp(t.cursor+10, n)
	case key.Matches(km, k.Top):
		t.cursor = 0
	case key.Matches(km, k.Bottom):
		t.cursor = clamp(n-1, n)
	case key.Matches(km, k.ZoomIn):
		t.zoom = min(t.zoom*2, 1024)
	case key.Matches(km, k.ZoomOut):
		t.zoom = max(t.zoom/2, 1)
	case key.Matches(km, k.ZoomReset):
		t.zoom = 1
	case key.Matches(km, k.Lanes):
		t.byObj = !t.byObj
		t.laneTop = 0
	case key.Matches(km, k.Slowest):
		t.jumpSlowest()
	case key.Matches(km, k.NextCritical):
		t.stepCritical(1)
	case key.Matches(km, k.PrevCritical):
		t.stepCritical(-1)
	case key.Matches(km, k.Open):
		if e, ok := t.cursorEntry(); ok {
			return t.c.openRevisions(cpid.ObjectKey{Group: e.APIGroup, Resource: e.Resource, Namespace: e.Namespace, Name: e.Name}, e.Kind, e.EventID)
		}
	case key.Matches(km, k.Origins, k.Related):
		if e, ok := t.cursorEntry(); ok && e.CPID != "" {
			return t.c.linked(e.CPID, key.Matches(km, k.Origins))
		}
	}
	return nil
}

func (t *timelineView) view(w, h int) string {
	s := &t.c.a.sty
	if len(t.all) == 0 {
		return block([]string{"", "  the change has no writes"}, w, h)
	}
	lanes := t.lanes()
	// The selected write's detail, as many lines as its hop and reason
	// take: the chart and the list share what is left.
	lo, _ := t.bounds()
	detail := t.detail(w, max(3, h-9), lo)
	detailH := len(detail)
	// The chart gets about half the height, the list the rest.
	laneH := max(1, min(len(lanes), (h-detailH-4)/2))
	listH := max(1, h-detailH-4-laneH)
	labelW := min(28, max(12, w/4))
	chartW := max(10, w-labelW-3)
	from, to := t.shown()
	x := func(ns int64) int {
		return int(float64(ns-from) * float64(chartW-1) / float64(to-from))
	}

	var lines []string
	// The axis: offsets from the user's request at both ends and the middle.
	axis := []rune(strings.Repeat(" ", chartW))
	put := func(at int, label string) {
		at = max(0, min(at, chartW-len([]rune(label))))
		copy(axis[at:], []rune(label))
	}
	put(0, offset(from-lo))
	put(chartW/2-4, offset((from+to)/2-lo))
	put(chartW, offset(to-lo))
	zoom := ""
	if t.zoom > 1 {
		zoom = fmt.Sprintf("zoom ×%g", t.zoom)
	}
	lines = append(lines, s.header.Render(fit(" "+fit(zoom, labelW)+" "+string(axis), w)))

	cur, haveCur := t.cursorEntry()
	curLane := 0
	for i, l := range lanes {
		if haveCur && l == t.laneOf(cur) {
			curLane = i
		}
	}
	t.laneTop = window(t.laneTop, curLane, len(lanes), laneH)
	for i := t.laneTop; i < min(len(lanes), t.laneTop+laneH); i++ {
		lines = append(lines, " "+fitName(lanes[i], labelW)+"│"+t.lane(lanes[i], chartW, x, from, to)+"│")
	}
	// The cursor's position on the axis.
	pointer := strings.Repeat(" ", chartW)
	if haveCur && cur.NS >= from && cur.NS <= to {
		at := x(cur.NS)
		label := "▲ " + offset(cur.NS-lo)
		if at+len([]rune(label)) > chartW {
			label = offset(cur.NS-lo) + " ▲"
			at -= len([]rune(label)) - 1
		}
		pointer = fit(strings.Repeat(" ", max(0, at))+label, chartW)
	}
	lines = append(lines, " "+fit(s.dim.Render(plural(len(lanes), "lane")), labelW)+" "+pointer)
	lines = append(lines, s.dim.Render(lines1(" "+timeWent(t.all), w)))
	writerW, verbW, objW, _ := t.listWidths(w)
	lines = append(lines, s.header.Render(fit("      "+fit("AFTER", 10)+fit("WRITER", writerW+1)+fit("VERB", verbW+1)+fit("OBJECT", objW+1)+"HOP", w)))

	t.listTop = window(t.listTop, t.cursor, len(t.ents), listH)
	for i := t.listTop; i < min(len(t.ents), t.listTop+listH); i++ {
		lines = append(lines, t.row(i, w, lo))
	}
	if len(t.ents) == 0 {
		lines = append(lines, "  no write matches the filter")
	}
	for len(lines) < h-detailH {
		lines = append(lines, "")
	}
	return block(append(lines[:h-detailH], detail...), w, h)
}

// timeWent says where the change's time went: the hops of its critical
// path added up by why they waited, then by writer, largest first.
func timeWent(ents []cpid.TimelineEntry) string {
	byReason, byWriter := cpid.TimeByReason(ents)
	var total int64
	for _, ns := range byReason {
		total += ns
	}
	if total == 0 {
		return "waits on the critical path: none"
	}
	top := func(m map[string]int64) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if m[keys[i]] != m[keys[j]] {
				return m[keys[i]] > m[keys[j]]
			}
			return keys[i] < keys[j]
		})
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %s (%d%%)", k, dur(m[k]), 100*m[k]/total))
		}
		return strings.Join(parts, " · ")
	}
	return "waits on the critical path, by reason: " + top(byReason) + "  │  by writer: " + top(byWriter)
}

// lane draws one lane of the chart.
func (t *timelineView) lane(name string, w int, x func(int64) int, from, to int64) string {
	s := &t.c.a.sty
	cells := []rune(strings.Repeat(" ", w))
	style := make([]int, w) // 0 plain, 1 critical, 2 failed, 3 cursor
	set := func(i int, r rune, st int) {
		if i >= 0 && i < w {
			cells[i], style[i] = r, st
		}
	}
	cur, _ := t.cursorEntry()
	mine := func(e cpid.TimelineEntry, critical bool) bool {
		return t.laneOf(e) == name && e.Critical == critical && e.NS >= from
	}
	// Layers, each over the one before: hops, the critical path's hops,
	// spans (work, shown over waiting), then the writes themselves.
	for _, critical := range []bool{false, true} {
		hop, st := glyphHop, 0
		if critical {
			hop, st = glyphHopCrit, 1
		}
		for _, e := range t.ents {
			if !mine(e, critical) || e.CauseID == 0 || e.CauseNS >= to {
				continue
			}
			for i := x(max(e.CauseNS, from)); i < x(min(e.NS, to)); i++ {
				set(i, hop, st)
			}
		}
	}
	if !t.byObj {
		for _, sp := range t.spans {
			if sp.Service != name || sp.EndNS < from || sp.StartNS > to {
				continue
			}
			for i := x(max(sp.StartNS, from)); i <= x(min(sp.EndNS, to)); i++ {
				set(i, glyphSpan, 0)
			}
		}
	}
	for _, critical := range []bool{false, true} {
		for _, e := range t.ents {
			if !mine(e, critical) || e.NS > to {
				continue
			}
			g, st := glyphWrite, 0
			switch {
			case e.Attempt:
				g, st = glyphFailed, 2
			case e.Critical:
				g, st = glyphCritical, 1
			}
			set(x(e.NS), g, st)
		}
	}
	if cur.EventID != 0 && t.laneOf(cur) == name && cur.NS >= from && cur.NS <= to {
		set(x(cur.NS), cells[x(cur.NS)], 3)
	}
	var b strings.Builder
	render := []func(...string) string{fmtPlain, s.critical.Render, s.failed.Render, s.cursor.Render}
	for i := 0; i < w; {
		j := i
		for j < w && style[j] == style[i] {
			j++
		}
		b.WriteString(render[style[i]](string(cells[i:j])))
		i = j
	}
	return b.String()
}

// listWidths shares the width of the write list among its columns: the
// writer gets two fifths of what the fixed ones leave, the object the rest.
// The hop says why it waited when there is room; else its duration alone
// (the detail under the list says why).
func (t *timelineView) listWidths(w int) (writer, verb, obj, hop int) {
	verb = 6
	for _, e := range t.ents {
		v := ansi.StringWidth(present.Verb(e.Verb, e.Subresource))
		if e.Attempt {
			v += 4
		}
		verb = max(verb, v)
	}
	verb = min(verb, 18)
	hop = 8
	if w >= 90 {
		hop = 20 + (w-90)/4
	}
	rest := max(20, w-6-10-(verb+1)-hop)
	writer = min(26, rest*2/5)
	return writer, verb, rest - writer - 2, hop
}

// narrowHop reports whether the list's HOP column holds the duration alone.
func narrowHop(w int) bool { return w < 90 }

func fmtPlain(s ...string) string { return strings.Join(s, "") }

func (t *timelineView) row(i, w int, lo int64) string {
	s := &t.c.a.sty
	e := t.ents[i]
	g := string(glyphWrite)
	switch {
	case e.Attempt:
		g = string(glyphFailed)
	case e.Critical:
		g = string(glyphCritical)
	}
	verb := present.Verb(e.Verb, e.Subresource)
	if e.Attempt {
		verb += fmt.Sprintf(" %d", e.Code)
	}
	hop := ""
	switch {
	case e.CauseID == 0:
	case narrowHop(w):
		hop = "+" + dur(e.HopNS)
	default:
		hop = "hop +" + dur(e.HopNS) + " " + string(e.Explain)
	}
	writerW, verbW, objW, _ := t.listWidths(w)
	line := mark(i == t.cursor) + g + " " + t.flag(e) + " " + fit(offset(e.NS-lo), 9) + " " + fitName(e.Writer, writerW) + " " +
		fit(verb, verbW) + " " + objectName(e.Kind, e.Namespace, e.Name, objW) + " " + hop
	switch {
	case i == t.cursor:
		return s.cursor.Render(fit(line, w))
	case e.Critical:
		return s.critical.Render(line)
	case e.Attempt:
		return s.failed.Render(line)
	}
	return line
}

// flag marks what to beware of in a write: ! an anomaly, ? a cause found
// by time alone (heuristic).
func (t *timelineView) flag(e cpid.TimelineEntry) string {
	switch {
	case len(t.anoms[e.EventID]) > 0:
		return "!"
	case e.Confidence == cpid.ConfidenceHeuristic:
		return "?"
	}
	return " "
}

// detail describes the selected write, in at most most lines under a
// rule: the write, its anomalies, its hop and why it waited (always in
// full, wrapped), and what caused it. The rest is one line each, cut with
// " …", unless the app shows text whole (w).
func (t *timelineView) detail(w, most int, lo int64) []string {
	s := &t.c.a.sty
	rule := s.dim.Render(strings.Repeat("─", w))
	e, ok := t.cursorEntry()
	if !ok {
		return []string{rule}
	}
	crit := ""
	if e.Critical {
		crit = " · on the critical path"
	}
	first := fmt.Sprintf(" %s %s  %s %s %s%s", clock(e.NS), offset(e.NS-lo), e.Writer, present.Verb(e.Verb, e.Subresource),
		object(e.Kind, e.Namespace, e.Name), crit)
	if e.Attempt {
		first += fmt.Sprintf(" · failed %d", e.Code)
	}
	texts := []string{first}
	if as := t.anoms[e.EventID]; len(as) > 0 {
		var parts []string
		for _, a := range as {
			parts = append(parts, "! anomaly "+a.Kind+": "+a.Detail)
		}
		texts = append(texts, " "+strings.Join(parts, " · "))
	}
	why := " started the change: no cause"
	cause := ""
	if e.CauseID != 0 {
		why = " hop " + dur(e.HopNS)
		if e.Explain != "" {
			why += " · why: " + string(e.Explain)
			if e.ExplainDetail != "" {
				why += ": " + e.ExplainDetail
			}
		}
		cause = fmt.Sprintf(" caused by audit event %d (rule %s), visible at %s", e.CauseID, e.Rule, offset(e.CauseNS-lo))
		for _, c := range t.all {
			if c.EventID == e.CauseID {
				cause = fmt.Sprintf(" caused by %s %s %s at %s (rule %s)", c.Writer, present.Verb(c.Verb, c.Subresource),
					object(c.Kind, c.Namespace, c.Name), offset(c.NS-lo), e.Rule)
			}
		}
		if e.Confidence == cpid.ConfidenceHeuristic {
			cause += " · ? found by time alone (heuristic): nothing names the cause"
		}
	}
	if e.CPID != "" {
		cause += fmt.Sprintf(" · CPID %s (%s)", t.c.a.short(e.CPID), e.Origin)
	}
	out := append([]string{rule}, t.c.a.details(w, len(texts), most, texts...)...)
	out = append(out, whole(w, why)...)
	if cause != "" {
		out = append(out, t.c.a.details(w, 1, most, cause)...)
	}
	if len(out) > most+1 {
		// Too much for the screen: one line each, the reason first.
		all := append([]string{why}, texts...)
		if cause != "" {
			all = append(all, cause)
		}
		out = append([]string{rule}, lines(w, most, all...)...)
	}
	return out
}

func (t *timelineView) status() string {
	e, ok := t.cursorEntry()
	if !ok {
		return "timeline"
	}
	return fmt.Sprintf("%d/%d  %s %s %s", t.cursor+1, len(t.ents), e.Writer, present.Verb(e.Verb, e.Subresource), object(e.Kind, e.Namespace, e.Name))
}

func (t *timelineView) help() []key.Binding {
	k := &t.c.a.keys
	return []key.Binding{k.Up, k.Down, k.Left, k.Right, k.ZoomIn, k.ZoomOut, k.ZoomReset, k.Lanes, k.Open, k.Origins, k.Related}
}

func (t *timelineView) hints() []key.Binding {
	k := &t.c.a.keys
	return []key.Binding{k.Slowest, k.NextCritical, k.ZoomIn, k.ZoomOut, k.Lanes, k.Open}
}

func (t *timelineView) filterText() string { return t.filter }

func (t *timelineView) setFilter(f string) tea.Cmd {
	keep := int64(-1)
	if e, ok := t.cursorEntry(); ok {
		keep = e.EventID
	}
	t.filter = f
	t.apply(keep)
	return nil
}
