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

// historyLimit bounds the writes read for one object: the latest ones.
const historyLimit = 500

// historyScreen is an object's history (cpid-tui history in the UI): every
// write of the object across changes, who made it, its change and its
// cause. Enter opens a write's change at that write.
type historyScreen struct {
	a      *app
	ref    cpid.ObjectKey
	kind   string
	from   string // the change the screen was opened from
	focus  int64  // the write to put the cursor on once loaded
	seq    int
	loaded bool
	err    error
	all    []cpid.ObjectWrite
	more   bool
	rows   []cpid.ObjectWrite // those the filter keeps
	filter string
	cursor int
	top    int
	// anoms counts the anomalies of each write of the object.
	anoms map[int64]int
}

type historyLoaded struct {
	to    *historyScreen
	seq   int
	ws    []cpid.ObjectWrite
	more  bool
	anoms map[int64]int
	err   error
}

func (m historyLoaded) target() screen { return m.to }

// newHistory opens the history of an object, the cursor on write eventID
// (the last write of change from when 0).
func newHistory(a *app, ref cpid.ObjectKey, kind, from string, eventID int64) *historyScreen {
	return &historyScreen{a: a, ref: ref, kind: kind, from: from, focus: eventID}
}

func (h *historyScreen) crumb() string {
	return "history of " + object(h.kind, h.ref.Namespace, h.ref.Name)
}

func (h *historyScreen) load() tea.Cmd {
	h.seq++
	if i, ok := h.current(); ok && h.loaded {
		h.focus = h.rows[i].EventID
	}
	seq, st, ctx, ref := h.seq, h.a.st, h.a.ctx, h.ref
	return func() tea.Msg {
		ws, more, err := st.ObjectHistory(ctx, cpid.HistoryQuery{Object: ref, Limit: historyLimit})
		msg := historyLoaded{to: h, seq: seq, ws: ws, more: more, err: err}
		if err != nil {
			return msg
		}
		as, err := st.Anomalies(ctx, "")
		msg.anoms, msg.err = map[int64]int{}, err
		for _, a := range as {
			if a.Resource == ref.Resource && a.APIGroup == ref.Group && a.Namespace == ref.Namespace && a.Name == ref.Name &&
				(ref.Cluster == "" || a.Cluster == ref.Cluster) {
				msg.anoms[a.EventID]++
			}
		}
		return msg
	}
}

func (h *historyScreen) current() (int, bool) {
	return h.cursor, h.cursor >= 0 && h.cursor < len(h.rows)
}

// apply filters the writes and places the cursor on the focused write,
// else on the last write of the change the screen came from, else on the
// last write.
func (h *historyScreen) apply() {
	h.rows = h.rows[:0:0]
	f := strings.ToLower(h.filter)
	for _, w := range h.all {
		hay := strings.ToLower(strings.Join([]string{w.Writer, w.User, present.Verb(w.Verb, w.Subresource), fmt.Sprint(w.Code), w.Change,
			string(w.Trigger), w.Rule, string(w.Explain), w.ResourceVersion}, " "))
		if f == "" || strings.Contains(hay, f) {
			h.rows = append(h.rows, w)
		}
	}
	at := -1
	for i, w := range h.rows {
		if h.focus != 0 && w.EventID == h.focus {
			at = i
			break
		}
		if h.focus == 0 && w.Change == h.from {
			at = i
		}
	}
	if at >= 0 {
		h.cursor = at
	}
	h.cursor = clamp(h.cursor, len(h.rows))
}

func (h *historyScreen) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case historyLoaded:
		if msg.seq != h.seq {
			return nil
		}
		h.loaded, h.err, h.all, h.more, h.anoms = true, msg.err, msg.ws, msg.more, msg.anoms
		// In the order they completed, as cpid-tui history lists them: a
		// failed write comes in the object's order after the revision it
		// was based on, which may have completed after it.
		sort.SliceStable(h.all, func(i, j int) bool {
			if h.all[i].NS != h.all[j].NS {
				return h.all[i].NS < h.all[j].NS
			}
			return h.all[i].EventID < h.all[j].EventID
		})
		h.apply()
		h.focus = 0
	case tea.KeyPressMsg:
		k := &h.a.keys
		n := len(h.rows)
		if c, ok := k.move(msg, h.cursor, n); ok {
			h.cursor = c
			return nil
		}
		switch {
		case key.Matches(msg, k.Open):
			i, ok := h.current()
			if !ok {
				return nil
			}
			w := h.rows[i]
			if w.Change == "" {
				return notice("a background write: no change to open")
			}
			return openWrite(h.a, w.Change, w.EventID)
		}
	}
	return nil
}

// historyWidths are the widths of the list's columns in w cells; the
// cause gets a column when it has room for a name (else the detail says
// it).
func historyWidths(w, idLen int) (writer, verb, change, cause int) {
	verb, change = 17, max(minIDLength, idLen)+5 // update/status 409, 044d68ee user
	writer = max(12, min(24, w-6-13-verb-1-change-1-1))
	cause = w - 6 - 13 - writer - 1 - verb - 1 - change - 1
	if cause < 40 {
		cause = 0
	}
	return writer, verb, change, cause
}

func (h *historyScreen) view(w, hgt int) string {
	s := &h.a.sty
	name := object(h.kind, h.ref.Namespace, h.ref.Name)
	switch {
	case h.err != nil:
		return block([]string{"", " " + s.warn.Render("error: "+h.err.Error())}, w, hgt)
	case !h.loaded:
		return block([]string{"", " loading the history of " + name + "…"}, w, hgt)
	}
	more := ""
	if h.more {
		more = fmt.Sprintf(" (the last %d)", len(h.all))
	}
	good, failed := 0, 0
	for _, x := range h.all {
		if x.Attempt {
			failed++
		} else {
			good++
		}
	}
	lines := []string{s.dim.Render(lines1(fmt.Sprintf(" %s: %s%s across changes · enter opens a write's change there", name, writes(good, failed), more), w))}
	writerW, verbW, changeW, causeW := historyWidths(w, h.a.idLen)
	cause := "CAUSE"
	if causeW == 0 {
		cause = ""
	}
	lines = append(lines, s.header.Render(fit("      "+fit("TIME", 13)+fit("WRITER", writerW+1)+fit("VERB", verbW+1)+fit("CHANGE", changeW+1)+cause, w)))
	detail := h.detail(w, hgt/2)
	detailH := len(detail)
	listH := max(1, hgt-len(lines)-detailH)
	h.top = window(h.top, h.cursor, len(h.rows), listH)
	for i := h.top; i < min(len(h.rows), h.top+listH); i++ {
		lines = append(lines, h.row(i, w))
	}
	if len(h.rows) == 0 {
		lines = append(lines, "  no write matches the filter")
	}
	for len(lines) < hgt-detailH {
		lines = append(lines, "")
	}
	return block(append(lines[:hgt-detailH], detail...), w, hgt)
}

func (h *historyScreen) row(i, w int) string {
	s := &h.a.sty
	x := h.rows[i]
	verb := present.Verb(x.Verb, x.Subresource)
	if x.Attempt {
		verb += fmt.Sprintf(" %d", x.Code)
	}
	ch := "background"
	switch {
	case x.Change == h.from:
		ch = "this change"
	case x.Change != "":
		ch = h.a.short(x.Change) + " " + string(x.Trigger)
	}
	writerW, verbW, changeW, causeW := historyWidths(w, h.a.idLen)
	flag := " "
	if h.anoms[x.EventID] > 0 {
		flag = "!"
	}
	line := mark(i == h.cursor) + flag + " " + fit(clock(x.NS), 13) + fitName(x.Writer, writerW) + " " + fit(verb, verbW) + " " + fit(ch, changeW) + " "
	if causeW > 0 {
		line += h.cause(x, causeW)
	}
	switch {
	case i == h.cursor:
		return s.cursor.Render(fit(line, w))
	case x.Attempt:
		return s.failed.Render(line)
	}
	return line
}

// cause says in w cells why a write happened: how long after its cause
// and why it waited, then the cause, whose names are elided in
// their middle when they do not fit.
func (h *historyScreen) cause(x cpid.ObjectWrite, w int) string {
	c := x.Cause
	switch {
	case c == nil && x.Origin == "root":
		return fit("started the change", w)
	case c == nil:
		return fit("-", w)
	}
	obj := object(cpid.KindOf("", c.Resource), "", c.Name)
	if c.Resource == h.ref.Resource && c.APIGroup == h.ref.Group && c.Namespace == h.ref.Namespace && c.Name == h.ref.Name {
		obj = "itself"
	}
	head := fmt.Sprintf("+%s %s ← ", dur(x.HopNS), x.Explain)
	return head + fitName(c.Writer+" "+present.Verb(c.Verb, c.Subresource)+" "+obj, max(0, w-ansi.StringWidth(head)))
}

// detail describes the selected write: who (user and agent), its change
// and what started it, its cause; in full with w, in at most most lines.
func (h *historyScreen) detail(w, most int) []string {
	s := &h.a.sty
	i, ok := h.current()
	if !ok {
		return []string{s.dim.Render(strings.Repeat("─", w))}
	}
	x := h.rows[i]
	first := fmt.Sprintf(" %s  %s %s · code %d · user %s (%s)", stamp(x.NS), x.Writer, present.Verb(x.Verb, x.Subresource), x.Code, x.User, agent(x.UserAgent))
	if x.ResourceVersion != "" {
		first += " · rv " + x.ResourceVersion
	}
	second := " a background write: no change"
	if x.Change != "" {
		second = " change " + x.Change + " · trigger " + string(x.Trigger)
		if x.TriggerDetail != "" {
			second += " (" + x.TriggerDetail + ")"
		}
	}
	third := " started its change"
	switch c := x.Cause; {
	case c != nil:
		third = fmt.Sprintf(" caused by %s %s %s at %s (rule %s, %s); hop %s", c.Writer, present.Verb(c.Verb, c.Subresource),
			object(cpid.KindOf("", c.Resource), c.Namespace, c.Name), clock(c.NS), x.Rule, x.Confidence, dur(x.HopNS))
		if x.Explain != "" {
			third += " · why: " + string(x.Explain)
			if x.ExplainDetail != "" {
				third += " (" + x.ExplainDetail + ")"
			}
		}
	case x.Origin != "root":
		third = " no cause found"
	}
	return append([]string{s.dim.Render(strings.Repeat("─", w))}, h.a.details(w, 3, most, first, second, third)...)
}

func (h *historyScreen) status() string {
	i, ok := h.current()
	if !ok {
		return h.crumb()
	}
	x := h.rows[i]
	return fmt.Sprintf("write %d/%d  %s %s", i+1, len(h.rows), x.Writer, present.Verb(x.Verb, x.Subresource))
}

func (h *historyScreen) help() []key.Binding {
	k := &h.a.keys
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open}
}

func (h *historyScreen) hints() []key.Binding { return []key.Binding{h.a.keys.Open} }

func (h *historyScreen) filterText() string { return h.filter }

func (h *historyScreen) setFilter(f string) tea.Cmd {
	h.filter = f
	if i, ok := h.current(); ok {
		h.focus = h.rows[i].EventID
	}
	h.apply()
	h.focus = 0
	return nil
}
