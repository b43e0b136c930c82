package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// logLimit bounds the log lines read for one change.
const logLimit = 5000

// logsView lists the controller log lines of a change in time order, with
// the timeline's cursor marked among them.
type logsView struct {
	c         *changeScreen
	requested bool
	loaded    bool
	seq       int
	err       error
	set       cpid.ChangeLogSet
	lines     []cpid.LogLine // what the filter keeps
	filter    string
	cursor    int
	top       int
	at        cpid.TimelineEntry // the timeline's cursor
	haveAt    bool
	// links maps a line to the write it explains (link), by ids.
	links map[int64]int64
}

type logsLoaded struct {
	to  *changeScreen
	seq int
	set cpid.ChangeLogSet
	err error
}

func (m logsLoaded) target() screen { return m.to }

func (l *logsView) load() tea.Cmd {
	l.requested = true
	l.seq++
	seq, st, ctx, id, c := l.seq, l.c.a.st, l.c.a.ctx, l.c.id, l.c
	return func() tea.Msg {
		set, err := st.ChangeLogs(ctx, id, logLimit)
		return logsLoaded{to: c, seq: seq, set: set, err: err}
	}
}

// align puts the cursor on the first line at or after the timeline's
// cursor.
func (l *logsView) align(e cpid.TimelineEntry, ok bool) {
	l.at, l.haveAt = e, ok
	if !ok {
		return
	}
	l.cursor = clamp(l.firstAfter(e.NS), len(l.lines))
}

func (l *logsView) firstAfter(ns int64) int {
	for i, ln := range l.lines {
		if ln.TimeNS >= ns {
			return i
		}
	}
	return len(l.lines)
}

func (l *logsView) apply() {
	keep := int64(-1)
	if l.cursor < len(l.lines) {
		keep = l.lines[l.cursor].ID
	}
	l.lines = l.lines[:0:0]
	f := strings.ToLower(l.filter)
	for _, ln := range l.set.Lines {
		if f == "" || strings.Contains(strings.ToLower(ln.Component+" "+ln.Level+" "+ln.Msg+" "+ln.Fields+" "+ln.File), f) {
			l.lines = append(l.lines, ln)
		}
	}
	for i, ln := range l.lines {
		if ln.ID == keep {
			l.cursor = i
		}
	}
	l.cursor = clamp(l.cursor, len(l.lines))
}

func (l *logsView) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case logsLoaded:
		if msg.seq != l.seq {
			return nil
		}
		first := !l.loaded
		l.loaded, l.err, l.set = true, msg.err, msg.set
		l.links = link(l.set.Lines, l.c.tl.all)
		l.apply()
		if first {
			l.align(l.at, l.haveAt)
		}
	case tea.KeyPressMsg:
		k := &l.c.a.keys
		n := len(l.lines)
		if c, ok := k.move(msg, l.cursor, n); ok {
			l.cursor = c
			return nil
		}
		switch {
		case key.Matches(msg, k.Open):
			// The write the line explains, on the timeline.
			if l.cursor >= n {
				return nil
			}
			id, ok := l.links[l.lines[l.cursor].ID]
			if !ok {
				return notice("this line names no write of the change")
			}
			t := l.c.tl
			if !t.shows(l.write(id)) {
				t.filter = ""
			}
			t.apply(id)
			return l.c.show(paneTimeline)
		}
	}
	return nil
}

// write is the change's write of event id.
func (l *logsView) write(id int64) cpid.TimelineEntry {
	for _, e := range l.c.tl.all {
		if e.EventID == id {
			return e
		}
	}
	return cpid.TimelineEntry{}
}

func (l *logsView) view(w, h int) string {
	s := &l.c.a.sty
	if !l.loaded {
		return block([]string{"", " loading log lines…"}, w, h)
	}
	if l.err != nil {
		return block([]string{"", " " + s.warn.Render("error: "+l.err.Error())}, w, h)
	}
	var lines []string
	linked := len(l.links) // link maps each line at most once
	var src string
	switch {
	case l.set.Exact:
		carrying := 0
		for _, ln := range l.set.Lines {
			if ln.CPID != "" {
				carrying++
			}
		}
		src = fmt.Sprintf(" %s of the change's time, %d carrying a CPID; %d explain a write (→, enter shows it)",
			plural(len(l.set.Lines), "line"), carrying, linked)
	default:
		src = fmt.Sprintf(" no line carries a CPID (uninstrumented controllers): %s the writers logged from %s to %s, a guess; %d explain a write (→, enter shows it)",
			plural(len(l.set.Lines), "line"), clock(l.set.FromNS), clock(l.set.ToNS), linked)
	}
	lines = append(lines, s.dim.Render(lines1(src, w)))
	detail := l.detail(w, h/2)
	detailH := len(detail)
	listH := max(1, h-len(lines)-detailH)
	// The timeline cursor is a line of its own among the log lines.
	at := -1
	if l.haveAt {
		at = l.firstAfter(l.at.NS)
	}
	rowsN := len(l.lines)
	if at >= 0 {
		rowsN++
	}
	// Visible rows count the marker; map the cursor to a row.
	rowOf := func(i int) int {
		if at >= 0 && i >= at {
			return i + 1
		}
		return i
	}
	l.top = window(l.top, rowOf(l.cursor), rowsN, listH)
	lo := l.c.row.StartedNS
	for r := l.top; r < min(rowsN, l.top+listH); r++ {
		i := r
		if at >= 0 && r == at {
			e := l.at
			lines = append(lines, s.critical.Render(fit(fmt.Sprintf("── ▲ timeline cursor %s %s  %s %s %s ", clock(e.NS), offset(e.NS-lo),
				e.Writer, present.Verb(e.Verb, e.Subresource), object(e.Kind, e.Namespace, e.Name))+strings.Repeat("─", w), w)))
			continue
		}
		if at >= 0 && r > at {
			i = r - 1
		}
		lines = append(lines, l.row(i, w, lo))
	}
	if len(l.lines) == 0 {
		lines = append(lines, "  no log lines")
	}
	for len(lines) < h-detailH {
		lines = append(lines, "")
	}
	return block(append(lines[:h-detailH], detail...), w, h)
}

func (l *logsView) row(i, w int, lo int64) string {
	s := &l.c.a.sty
	ln := l.lines[i]
	lvl := " "
	switch {
	case strings.HasPrefix(ln.Level, "err"):
		lvl = "E"
	case strings.HasPrefix(ln.Level, "warn"):
		lvl = "W"
	}
	text := ln.Msg
	if f := fieldsText(ln.Fields); f != "" {
		text += "  " + f
	}
	to := " "
	if _, ok := l.links[ln.ID]; ok {
		to = "→"
	}
	// Below 120 cells the message gets the component's room.
	comp := ""
	if w >= 120 {
		comp = fitName(component(ln.Component), 22) + " "
	}
	line := mark(i == l.cursor) + lvl + to + " " + clock(ln.TimeNS) + " " + fit(offset(ln.TimeNS-lo), 9) + " " +
		fitName(source(ln.File), 14) + " " + comp + text
	switch {
	case i == l.cursor:
		return s.cursor.Render(fit(line, w))
	case lvl == "E":
		return s.failed.Render(fit(line, w))
	}
	return line
}

// lines1 is a sentence on one line of w cells, cut between words.
func lines1(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	if w < 3 {
		return ""
	}
	return cutWords(s, w)
}

// source names the process of a log file: its base name without ".log".
func source(file string) string {
	_, member, ok := strings.Cut(file, "!")
	if ok {
		file = member
	}
	return strings.TrimSuffix(path.Base(file), ".log")
}

// component shortens a component that is a source path (slog's caller) to
// its last directory and file.
func component(c string) string {
	if parts := strings.Split(c, "/"); len(parts) > 2 {
		return strings.Join(parts[len(parts)-2:], "/")
	}
	return c
}

// detail shows the selected line whole: where it came from, and every
// field; in full with w, in at most most lines.
func (l *logsView) detail(w, most int) []string {
	s := &l.c.a.sty
	out := []string{s.dim.Render(strings.Repeat("─", w))}
	if l.cursor >= len(l.lines) {
		return out
	}
	ln := l.lines[l.cursor]
	where := fmt.Sprintf(" %s:%d  %s  %s", ln.File, ln.Line, ln.Level, ln.Msg)
	explains := " names no write of the change"
	if id, ok := l.links[ln.ID]; ok {
		e := l.write(id)
		explains = fmt.Sprintf(" → explains %s %s %s at %s (enter shows it on the timeline)", e.Writer, present.Verb(e.Verb, e.Subresource),
			object(e.Kind, e.Namespace, e.Name), offset(e.NS-l.c.row.StartedNS))
	}
	return append(out, l.c.a.details(w, 3, most, where, explains, " "+fieldsText(ln.Fields))...)
}

// fieldsText renders a log line's fields as key=value, in the line's order,
// leaving out what the columns already show.
func fieldsText(fields string) string {
	dec := json.NewDecoder(strings.NewReader(fields))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	var parts []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		switch k {
		case "ts", "time", "caller", "msg", "level", "v", "source", "logger":
			continue
		}
		parts = append(parts, k+"="+valueText(v))
	}
	return strings.Join(parts, " ")
}

// valueText shows a field value: strings bare, {name, namespace} objects
// as namespace/name, anything else as compact JSON.
func valueText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var ref struct{ Name, Namespace string }
	var m map[string]any
	if json.Unmarshal(v, &m) == nil && len(m) <= 2 && json.Unmarshal(v, &ref) == nil && ref.Name != "" {
		if ref.Namespace == "" {
			return ref.Name
		}
		return ref.Namespace + "/" + ref.Name
	}
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		return b.String()
	}
	return string(v)
}

func (l *logsView) status() string {
	if l.cursor >= len(l.lines) {
		return "logs"
	}
	ln := l.lines[l.cursor]
	return fmt.Sprintf("line %d/%d  %s  %s", l.cursor+1, len(l.lines), source(ln.File), ln.Msg)
}

func (l *logsView) help() []key.Binding {
	k := &l.c.a.keys
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open}
}

func (l *logsView) hints() []key.Binding { return []key.Binding{l.c.a.keys.Open} }

func (l *logsView) filterText() string { return l.filter }

func (l *logsView) setFilter(f string) tea.Cmd {
	l.filter = f
	l.apply()
	return nil
}
