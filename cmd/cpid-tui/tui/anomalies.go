package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cpid-dev/cpid"
)

// anomaliesScreen (:anomalies) lists what reconstruct flagged in the whole
// database, as cpid-tui query anomalies does: a replayed watch, a clock
// skew, a condition's time moving back, a write repeated; enter opens the
// change of the write at that write.
type anomaliesScreen struct {
	a      *app
	seq    int
	loaded bool
	err    error
	all    []cpid.AnomalyRow
	rows   []cpid.AnomalyRow
	filter string
	cursor int
	top    int
}

type anomaliesLoaded struct {
	to  *anomaliesScreen
	seq int
	as  []cpid.AnomalyRow
	err error
}

func (m anomaliesLoaded) target() screen { return m.to }

func newAnomalies(a *app) *anomaliesScreen { return &anomaliesScreen{a: a} }

func (s *anomaliesScreen) crumb() string { return "anomalies" }

func (s *anomaliesScreen) load() tea.Cmd {
	s.seq++
	seq, st, ctx := s.seq, s.a.st, s.a.ctx
	return func() tea.Msg {
		as, err := st.Anomalies(ctx, "")
		return anomaliesLoaded{to: s, seq: seq, as: as, err: err}
	}
}

func (s *anomaliesScreen) apply() {
	var keep int64
	if s.cursor < len(s.rows) {
		keep = s.rows[s.cursor].EventID
	}
	s.rows = s.rows[:0:0]
	f := strings.ToLower(s.filter)
	for _, a := range s.all {
		if strings.Contains(strings.ToLower(strings.Join([]string{a.Kind, s.object(a), a.Detail, a.Change, a.Cluster}, " ")), f) {
			s.rows = append(s.rows, a)
		}
	}
	for i, a := range s.rows {
		if a.EventID == keep {
			s.cursor = i
		}
	}
	s.cursor = clamp(s.cursor, len(s.rows))
}

func (s *anomaliesScreen) object(a cpid.AnomalyRow) string {
	return object(cpid.KindOf("", a.Resource), a.Namespace, a.Name)
}

func (s *anomaliesScreen) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case anomaliesLoaded:
		if msg.seq != s.seq {
			return nil
		}
		s.loaded, s.err, s.all = true, msg.err, msg.as
		s.apply()
	case tea.KeyPressMsg:
		k := &s.a.keys
		n := len(s.rows)
		if c, ok := k.move(msg, s.cursor, n); ok {
			s.cursor = c
			return nil
		}
		switch {
		case key.Matches(msg, k.Open):
			if s.cursor >= n {
				return nil
			}
			a := s.rows[s.cursor]
			if a.Change == "" {
				return notice("a background write: no change to open")
			}
			return openWrite(s.a, a.Change, a.EventID)
		}
	}
	return nil
}

func (s *anomaliesScreen) view(w, h int) string {
	st := &s.a.sty
	switch {
	case s.err != nil:
		return block([]string{"", " " + st.warn.Render("error: "+s.err.Error())}, w, h)
	case !s.loaded:
		return block([]string{"", " loading anomalies…"}, w, h)
	}
	lines := []string{st.dim.Render(fmt.Sprintf(" %s in the database: what the logs show that a reconstruction must not hide · enter opens the write's change",
		count(len(s.all), "anomaly", "anomalies")))}
	kindW, changeW := 20, max(10, s.a.idLen+2)
	objW := max(16, min(40, (w-4-13-kindW-changeW)/2))
	lines = append(lines, st.header.Render(fit("    "+fit("TIME", 13)+fit("KIND", kindW+1)+fit("OBJECT", objW+1)+fit("CHANGE", changeW+1)+"DETAIL", w)))
	detail := s.detail(w, h/2)
	detailH := len(detail)
	listH := max(1, h-len(lines)-detailH)
	s.top = window(s.top, s.cursor, len(s.rows), listH)
	for i := s.top; i < min(len(s.rows), s.top+listH); i++ {
		a := s.rows[i]
		ch := "background"
		if a.Change != "" {
			ch = s.a.short(a.Change)
		}
		line := mark(i == s.cursor) + "! " + fit(clock(a.NS), 13) + fit(a.Kind, kindW) + " " + objectName(cpid.KindOf("", a.Resource), a.Namespace, a.Name, objW) + " " +
			fit(ch, changeW) + " " + a.Detail
		if i == s.cursor {
			line = st.cursor.Render(fit(line, w))
		}
		lines = append(lines, line)
	}
	if len(s.rows) == 0 {
		if s.filter != "" {
			lines = append(lines, "  no anomaly matches the filter")
		} else {
			lines = append(lines, "  no anomaly: nothing in the logs contradicts the reconstruction")
		}
	}
	for len(lines) < h-detailH {
		lines = append(lines, "")
	}
	return block(append(lines[:h-detailH], detail...), w, h)
}

// detail describes the selected anomaly, in full with w, in at most most
// lines.
func (s *anomaliesScreen) detail(w, most int) []string {
	out := []string{s.a.sty.dim.Render(strings.Repeat("─", w))}
	if s.cursor >= len(s.rows) {
		return out
	}
	a := s.rows[s.cursor]
	where := "a background write"
	if a.Change != "" {
		where = "change " + a.Change
	}
	return append(out, s.a.details(w, 2, most, fmt.Sprintf(" %s  %s on %s, audit event %d, %s", stamp(a.NS), a.Kind, s.object(a), a.EventID, where),
		" "+a.Detail)...)
}

func (s *anomaliesScreen) status() string {
	if s.cursor < len(s.rows) {
		a := s.rows[s.cursor]
		return fmt.Sprintf("anomaly %d/%d  %s  %s", s.cursor+1, len(s.rows), a.Kind, s.object(a))
	}
	return "anomalies"
}

func (s *anomaliesScreen) help() []key.Binding {
	k := &s.a.keys
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open}
}

func (s *anomaliesScreen) hints() []key.Binding { return []key.Binding{s.a.keys.Open} }

func (s *anomaliesScreen) filterText() string { return s.filter }

func (s *anomaliesScreen) setFilter(f string) tea.Cmd {
	s.filter = f
	s.apply()
	return nil
}
