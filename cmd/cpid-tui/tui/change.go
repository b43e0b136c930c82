package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// Panes of a change, in tab order.
const (
	paneDAG = iota
	paneTimeline
	paneLogs
	paneRevisions
)

var paneNames = []string{"DAG", "Timeline", "Logs", "Revisions"}

// pane is one tab of a change.
type pane interface {
	update(msg tea.Msg) tea.Cmd
	view(w, h int) string
	status() string
	help() []key.Binding
	hints() []key.Binding
	filterText() string
	setFilter(string) tea.Cmd
}

// changeScreen is one root change, in four panes: its merge DAG, its
// timeline, its controllers' log lines and the revisions of its objects.
type changeScreen struct {
	a       *app
	id      string
	row     cpid.ChangeRow
	haveRow bool
	tab     int
	seq     int
	loaded  bool
	err     error

	dag  *dagView
	tl   *timelineView
	logs *logsView
	revs *revisionsView
	// anomalies counts what reconstruct flagged on the change's writes.
	anomalies int
}

type changeLoaded struct {
	to       *changeScreen
	seq      int
	row      cpid.ChangeRow
	haveRow  bool
	timeline []cpid.TimelineEntry
	graph    cpid.ChangeGraph
	spans    []cpid.ChangeSpan
	anoms    []cpid.AnomalyRow
	err      error
}

func (m changeLoaded) target() screen { return m.to }

func newChange(a *app, id string) *changeScreen {
	c := &changeScreen{a: a, id: id, tab: paneDAG}
	c.dag = &dagView{c: c, collapsed: map[string]bool{}}
	c.tl = &timelineView{c: c, zoom: 1}
	c.logs = &logsView{c: c}
	c.revs = &revisionsView{c: c}
	return c
}

// openWrite opens a change on its timeline, the cursor on one of its
// writes (event id), as the lists of writes across changes do.
func openWrite(a *app, id string, eventID int64) tea.Cmd {
	c := newChange(a, id)
	c.tab, c.tl.focus = paneTimeline, eventID
	return push(c)
}

func (c *changeScreen) crumb() string {
	if !c.haveRow {
		return c.a.short(c.id)
	}
	return present.Verb(c.row.Verb, c.row.Subresource) + " " + object(c.row.Kind, c.row.Namespace, c.row.Name)
}

// load reads the change's summary, timeline, graph and spans in one go, and
// the logs and revisions again if they were shown.
func (c *changeScreen) load() tea.Cmd {
	c.seq++
	seq, st, ctx, id := c.seq, c.a.st, c.a.ctx, c.id
	cmds := []tea.Cmd{func() tea.Msg {
		msg := changeLoaded{to: c, seq: seq}
		rows, err := st.ChangesByID(ctx, []string{id})
		if err != nil {
			msg.err = err
			return msg
		}
		if len(rows) == 0 {
			msg.err = fmt.Errorf("no change %q (the changes list shows them; was reconstruct run?)", id)
			return msg
		}
		msg.row, msg.haveRow = rows[0], true
		if msg.timeline, msg.err = st.Timeline(ctx, id); msg.err != nil {
			return msg
		}
		if msg.graph, msg.err = st.ChangeGraph(ctx, id); msg.err != nil {
			return msg
		}
		if msg.spans, msg.err = st.ChangeSpans(ctx, id); msg.err != nil {
			return msg
		}
		msg.anoms, msg.err = st.Anomalies(ctx, id)
		return msg
	}}
	if c.logs.requested {
		cmds = append(cmds, c.logs.load())
	}
	if c.revs.requested {
		cmds = append(cmds, c.revs.load())
	}
	return tea.Batch(cmds...)
}

func (c *changeScreen) pane() pane {
	switch c.tab {
	case paneDAG:
		return c.dag
	case paneLogs:
		return c.logs
	case paneRevisions:
		return c.revs
	}
	return c.tl
}

func (c *changeScreen) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case changeLoaded:
		if msg.seq != c.seq {
			return nil
		}
		c.loaded, c.err = true, msg.err
		if msg.err != nil {
			return nil
		}
		c.row, c.haveRow = msg.row, true
		c.tl.set(msg.timeline, msg.spans)
		c.tl.anoms = map[int64][]cpid.AnomalyRow{}
		for _, a := range msg.anoms {
			c.tl.anoms[a.EventID] = append(c.tl.anoms[a.EventID], a)
		}
		c.anomalies = len(msg.anoms)
		c.dag.set(msg.graph)
		return c.show(c.tab)
	case logsLoaded:
		return c.logs.update(msg)
	case revisionsLoaded:
		return c.revs.update(msg)
	case tea.KeyPressMsg:
		k := &c.a.keys
		switch {
		case key.Matches(msg, k.Tab):
			return c.show((c.tab + 1) % len(paneNames))
		case key.Matches(msg, k.BackTab):
			return c.show((c.tab + len(paneNames) - 1) % len(paneNames))
		case key.Matches(msg, k.Tab1):
			return c.show(paneDAG)
		case key.Matches(msg, k.Tab2):
			return c.show(paneTimeline)
		case key.Matches(msg, k.Tab3):
			return c.show(paneLogs)
		case key.Matches(msg, k.Tab4):
			return c.show(paneRevisions)
		case key.Matches(msg, k.History) && c.loaded && c.err == nil:
			return c.history()
		case key.Matches(msg, k.Slowest, k.NextCritical, k.PrevCritical) && c.loaded && c.err == nil:
			// The jumps are the timeline's: shown there.
			cmd := c.show(paneTimeline)
			c.tl.update(msg)
			return cmd
		}
		if !c.loaded || c.err != nil {
			return nil
		}
		return c.pane().update(msg)
	}
	return nil
}

// show switches to a pane, loading what it needs the first time, and keeps
// the panes in step: the logs follow the timeline's cursor, the revisions
// show the object the timeline points at until another is chosen.
func (c *changeScreen) show(tab int) tea.Cmd {
	c.tab = tab
	if !c.loaded || c.err != nil {
		return nil
	}
	switch tab {
	case paneLogs:
		c.logs.align(c.tl.cursorEntry())
		if !c.logs.requested {
			return c.logs.load()
		}
	case paneRevisions:
		if !c.revs.requested {
			if e, ok := c.tl.cursorEntry(); ok {
				return c.openRevisions(cpid.ObjectKey{Group: e.APIGroup, Resource: e.Resource, Namespace: e.Namespace, Name: e.Name}, e.Kind, e.EventID)
			}
			return c.openRevisions(cpid.ObjectKey{Group: c.row.APIGroup, Resource: c.row.Resource, Namespace: c.row.Namespace, Name: c.row.Name}, c.row.Kind, 0)
		}
	}
	return nil
}

// openRevisions shows the revisions of an object, at one write of it.
func (c *changeScreen) openRevisions(ref cpid.ObjectKey, kind string, eventID int64) tea.Cmd {
	c.tab = paneRevisions
	return c.revs.open(ref, kind, eventID)
}

// history opens the history of the object shown: the revisions pane's, the
// timeline cursor's, else the one the change started on.
func (c *changeScreen) history() tea.Cmd {
	// The change's objects are in its cluster: a fleet may hold another
	// object of the same name.
	open := func(k cpid.ObjectKey, kind string, at int64) tea.Cmd {
		k.Cluster = c.row.Cluster
		return push(newHistory(c.a, k, kind, c.id, at))
	}
	if c.tab == paneRevisions && c.revs.requested {
		var at int64
		if i, ok := c.revs.current(); ok {
			at = c.revs.revs[i].EventID
		}
		return open(c.revs.ref, c.revs.kind, at)
	}
	if e, ok := c.tl.cursorEntry(); ok && c.tab != paneDAG {
		return open(cpid.ObjectKey{Group: e.APIGroup, Resource: e.Resource, Namespace: e.Namespace, Name: e.Name}, e.Kind, e.EventID)
	}
	r := c.row
	return open(cpid.ObjectKey{Group: r.APIGroup, Resource: r.Resource, Namespace: r.Namespace, Name: r.Name}, r.Kind, 0)
}

// linked opens the changes linked to a CPID through the merge DAG: its
// origins, or what descends from it.
func (c *changeScreen) linked(cpid string, ancestors bool) tea.Cmd {
	st, ctx, id, a := c.a.st, c.a.ctx, c.id, c.a
	return func() tea.Msg {
		rows, err := st.LinkedChanges(ctx, id, cpid, ancestors)
		what := "related changes (descendants) of " + c.a.short(cpid)
		if ancestors {
			what = "origins of " + c.a.short(cpid)
		}
		switch {
		case err != nil:
			return noticeMsg(err.Error())
		case len(rows) == 0:
			return noticeMsg("no other change among the " + what)
		case len(rows) == 1:
			s := newChange(a, rows[0].ID)
			s.row, s.haveRow = rows[0], true
			return pushMsg{s}
		}
		return pushMsg{newLinked(a, what, rows)}
	}
}

func (c *changeScreen) view(w, h int) string {
	s := &c.a.sty
	var tabs []string
	for i, n := range paneNames {
		label := fmt.Sprintf(" %d %s ", i+1, n)
		if i == c.tab {
			tabs = append(tabs, s.tabOn.Render("["+strings.TrimSpace(label)+"]"))
		} else {
			tabs = append(tabs, s.tab.Render(label))
		}
	}
	summary := c.summary(w - lipgloss.Width(" "+strings.Join(tabs, " ")) - 1)
	head := spread(" "+strings.Join(tabs, " "), s.dim.Render(summary), w)
	var body string
	switch {
	case c.err != nil:
		body = block([]string{"", " " + s.warn.Render("error: "+c.err.Error())}, w, h-1)
	case !c.loaded:
		body = block([]string{"", " loading change " + c.id + "…"}, w, h-1)
	default:
		body = c.pane().view(w, h-1)
	}
	return head + "\n" + body
}

// summary says what the change did and what to beware of, in at most w
// cells: its warnings first (anomalies, provisional writes, causes found
// by time alone, what started it when not a user), then its counts, as
// many parts as fit.
func (c *changeScreen) summary(w int) string {
	if !c.haveRow {
		return ""
	}
	r := c.row
	failed, heuristic := 0, 0
	for _, e := range c.tl.all {
		if e.Attempt {
			failed++
		}
		if e.Confidence == cpid.ConfidenceHeuristic {
			heuristic++
		}
	}
	type part struct {
		text string
		keep int // higher stays longer
	}
	parts := []part{}
	if c.anomalies > 0 {
		parts = append(parts, part{"! " + count(c.anomalies, "anomaly", "anomalies"), 5})
	}
	if v := c.a.version; v.CutoffNS != 0 && r.SettledNS > v.CutoffNS {
		parts = append(parts, part{"provisional", 4})
	}
	if heuristic > 0 {
		parts = append(parts, part{fmt.Sprintf("? %d by time alone", heuristic), 3})
	}
	if r.Trigger != "" && r.Trigger != cpid.TriggerUser {
		parts = append(parts, part{string(r.Trigger), 2})
	}
	parts = append(parts, part{writes(r.Writes, failed), 6}, part{plural(r.Objects, "object"), 0},
		part{"settled " + dur(r.SettledNS-r.StartedNS), 1})
	for keep := 0; ; keep++ {
		var kept []string
		for _, p := range parts {
			if p.keep >= keep {
				kept = append(kept, p.text)
			}
		}
		s := strings.Join(kept, " · ") + " "
		if lipgloss.Width(s) <= w || len(kept) <= 1 {
			return s
		}
	}
}

func (c *changeScreen) status() string {
	if !c.loaded || c.err != nil {
		return "change " + c.id
	}
	return c.pane().status()
}

func (c *changeScreen) help() []key.Binding {
	k := &c.a.keys
	return append([]key.Binding{k.Tab, k.BackTab, k.Tab1, k.Tab2, k.Tab3, k.Tab4, k.History, k.Slowest, k.NextCritical, k.PrevCritical},
		c.pane().help()...)
}

func (c *changeScreen) hints() []key.Binding {
	return append([]key.Binding{c.a.keys.Tab}, c.pane().hints()...)
}

func (c *changeScreen) filterText() string { return c.pane().filterText() }

func (c *changeScreen) setFilter(f string) tea.Cmd { return c.pane().setFilter(f) }
