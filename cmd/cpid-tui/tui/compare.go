package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
	"github.com/cpid-dev/cpid/reconstruct"
)

// compareScreen shows two changes side by side, as cpid-tui diff prints
// them (reconstruct.Compare): their writes step by step with the hop of
// each and the difference, then the time each writer spent on each
// critical path, to answer "why was this one slower". Enter opens a step's
// write in its change.
type compareScreen struct {
	a      *app
	ids    [2]string
	seq    int
	loaded bool
	err    error
	r      reconstruct.Comparison
	rows   []int // steps the filter keeps
	filter string
	cursor int
	top    int
}

type compareLoaded struct {
	to  *compareScreen
	seq int
	r   reconstruct.Comparison
	err error
}

func (m compareLoaded) target() screen { return m.to }

func newCompare(a *app, id1, id2 string) *compareScreen {
	return &compareScreen{a: a, ids: [2]string{id1, id2}}
}

func (d *compareScreen) crumb() string {
	return "diff " + d.a.short(d.ids[0]) + " " + d.a.short(d.ids[1])
}

func (d *compareScreen) load() tea.Cmd {
	d.seq++
	seq, st, ctx, ids, n := d.seq, d.a.st, d.a.ctx, d.ids, d.a.idLen
	return func() tea.Msg {
		msg := compareLoaded{to: d, seq: seq}
		var cs [2]cpid.ChangeRow
		var ts [2][]cpid.TimelineEntry
		for i, id := range ids {
			rows, err := st.ChangesByID(ctx, []string{id})
			if err != nil {
				msg.err = err
				return msg
			}
			if len(rows) != 1 {
				msg.err = fmt.Errorf("no change %q", id)
				return msg
			}
			cs[i] = rows[0]
			if ts[i], msg.err = st.Timeline(ctx, id); msg.err != nil {
				return msg
			}
		}
		msg.r = reconstruct.Compare(cs[0], cs[1], ts[0], ts[1])
		msg.r.Summary = present.CompareSummary(msg.r, n)
		return msg
	}
}

func (d *compareScreen) apply() {
	d.rows = d.rows[:0:0]
	f := strings.ToLower(d.filter)
	for i, s := range d.r.Steps {
		text := s.Step
		for _, x := range []*reconstruct.StepSide{s.A, s.B} {
			if x != nil {
				text += " " + x.Object + " " + x.Explain
			}
		}
		if strings.Contains(strings.ToLower(text), f) {
			d.rows = append(d.rows, i)
		}
	}
	d.cursor = clamp(d.cursor, len(d.rows))
}

func (d *compareScreen) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case compareLoaded:
		if msg.seq != d.seq {
			return nil
		}
		d.loaded, d.err, d.r = true, msg.err, msg.r
		d.apply()
	case tea.KeyPressMsg:
		k := &d.a.keys
		n := len(d.rows)
		if c, ok := k.move(msg, d.cursor, n); ok {
			d.cursor = c
			return nil
		}
		switch {
		case key.Matches(msg, k.Open):
			if d.cursor >= n {
				return nil
			}
			s := d.r.Steps[d.rows[d.cursor]]
			id, side := d.r.A.ID, s.A
			if side == nil {
				id, side = d.r.B.ID, s.B
			}
			return openWrite(d.a, id, side.EventID)
		}
	}
	return nil
}

// side formats one change's write at a step: when, as an offset from the
// change's start, and its hop.
func side(x *reconstruct.StepSide) (string, string) { return present.StepSide(x, present.Offset) }

func (d *compareScreen) view(w, h int) string {
	s := &d.a.sty
	switch {
	case d.err != nil:
		return block([]string{"", " " + s.warn.Render("error: "+d.err.Error())}, w, h)
	case !d.loaded:
		return block([]string{"", " comparing " + d.ids[0] + " and " + d.ids[1] + "…"}, w, h)
	}
	r := d.r
	var out []string
	for i, c := range []cpid.ChangeRow{r.A, r.B} {
		out = append(out, lines1(fmt.Sprintf(" (%d) %s settled after %s, %s: %s %s at %s", i+1, d.a.short(c.ID), dur(c.SettledNS-c.StartedNS),
			plural(c.Writes, "write"), present.Verb(c.Verb, c.Subresource), object(c.Kind, c.Namespace, c.Name), clock(c.StartedNS)), w))
	}
	for _, l := range lines(w, 2, r.Summary) {
		out = append(out, s.critical.Render(l))
	}
	// The times of the writes when there is room; the hops always.
	atW, hopW, deltaW := 10, 11, 10
	if w < 100 {
		atW = 0
	}
	stepW := max(16, w-5-2*(hopW+1)-deltaW)
	if atW > 0 {
		stepW -= 2 * (atW + 1)
	}
	cell := func(v string, n int) string {
		if n == 0 {
			return ""
		}
		return right(v, n) + " "
	}
	out = append(out, s.header.Render(fit("    "+fit("STEP", stepW+1)+cell("AT (1)", atW)+cell("HOP (1)", hopW)+cell("AT (2)", atW)+
		cell("HOP (2)", hopW)+right("DELTA", deltaW), w)))
	// The writers' table under the steps: as many rows as fit in a third.
	wr := r.Writers
	tableH := min(len(wr)+2, max(3, h/3))
	listH := max(1, h-len(out)-1-tableH)
	d.top = window(d.top, d.cursor, len(d.rows), listH)
	for i := d.top; i < min(len(d.rows), d.top+listH); i++ {
		st := r.Steps[d.rows[i]]
		at1, hop1 := side(st.A)
		at2, hop2 := side(st.B)
		delta := "-"
		if st.DeltaNS != nil {
			delta = present.Signed(*st.DeltaNS)
		}
		line := mark(i == d.cursor) + "  " + fitName(st.Step, stepW) + " " + cell(at1, atW) + cell(hop1, hopW) + cell(at2, atW) + cell(hop2, hopW) +
			right(delta, deltaW)
		if i == d.cursor {
			line = s.cursor.Render(fit(line, w))
		}
		out = append(out, line)
	}
	if len(d.rows) == 0 {
		out = append(out, "  no step matches the filter")
	}
	for len(out) < h-tableH {
		out = append(out, "")
	}
	out = out[:h-tableH]
	nameW := max(16, w-4-3*(deltaW+1))
	cell = func(v string, n int) string { return right(v, n) + " " }
	table := []string{s.header.Render(fit("  "+fit("CRITICAL PATH BY WRITER", nameW+1)+cell("(1)", deltaW)+cell("(2)", deltaW)+right("DELTA", deltaW), w))}
	row := func(x reconstruct.WriterDelta) string {
		return "  " + fitName(x.Writer, nameW) + " " + cell(dur(x.ANS), deltaW) + cell(dur(x.BNS), deltaW) + right(present.Signed(x.DeltaNS), deltaW)
	}
	// The largest differences come first: those that fit, then the total.
	shown := wr
	if len(wr) > tableH-2 {
		shown = wr[:max(0, tableH-3)]
	}
	for _, x := range shown {
		table = append(table, row(x))
	}
	if len(shown) < len(wr) {
		table = append(table, s.dim.Render(fmt.Sprintf("  %d more: cpid-tui diff %s %s lists them", len(wr)-len(shown), d.a.short(r.A.ID), d.a.short(r.B.ID))))
	}
	table = append(table, s.header.Render(row(reconstruct.WriterDelta{Writer: "settled after", ANS: r.SettledANS, BNS: r.SettledBNS, DeltaNS: r.DeltaNS})))
	return block(append(out, table...), w, h)
}

func (d *compareScreen) status() string {
	if !d.loaded || d.cursor >= len(d.rows) {
		return d.crumb()
	}
	return fmt.Sprintf("step %d/%d  %s", d.cursor+1, len(d.rows), d.r.Steps[d.rows[d.cursor]].Step)
}

func (d *compareScreen) help() []key.Binding {
	k := &d.a.keys
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open}
}

func (d *compareScreen) hints() []key.Binding { return []key.Binding{d.a.keys.Open} }

func (d *compareScreen) filterText() string { return d.filter }

func (d *compareScreen) setFilter(f string) tea.Cmd {
	d.filter = f
	d.apply()
	return nil
}
