package tui

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// pageSize is how many changes one query reads. The list holds one page
// around the cursor, never the whole table.
const pageSize = 200

var sorts = []string{"time", "duration", "size"}

// changesScreen lists root changes: all of them, paged from the database,
// or a fixed list (the origins or descendants of a CPID).
type changesScreen struct {
	a     *app
	title string
	// fixed is true for a list given up front (linked changes); all holds
	// it, rows what the filter keeps.
	fixed bool
	all   []cpid.ChangeRow

	sort   string
	filter string
	// shown is the filter the rows are for: the screen says which while
	// the filter typed is still loading.
	shown string
	// byCPID is set when the filter is a CPID carried by some change that
	// is not its root: the rows are those changes.
	byCPID bool

	total  int
	base   int // index of rows[0] in the whole list
	rows   []cpid.ChangeRow
	cursor int // index in the whole list
	top    int
	seq    int // the latest load request; older results are dropped
	// stale: the rows shown are not those of the list asked for (a filter
	// or sort still loading, a page not read yet); the keys pressed
	// meanwhile wait in queued and act on the list when it arrives, never
	// on rows the user no longer sees.
	stale  bool
	queued []tea.KeyPressMsg
	loaded bool
	err    error
	// anomalies counts what reconstruct flagged, by change.
	anomalies map[string]int
	// marked is the change space marked, to compare with another (d).
	marked cpid.ChangeRow
}

type changesLoaded struct {
	to     *changesScreen
	seq    int
	total  int
	base   int
	rows   []cpid.ChangeRow
	byCPID bool
	filter string // the rows'
	keepID string
	keepAt int
	anoms  map[string]int
	err    error
}

func (m changesLoaded) target() screen { return m.to }

// anomalyCounts counts the anomalies of every change of the view: few,
// read with each page so that the list can mark the changes that have any.
func anomalyCounts(ctx context.Context, st cpid.ChangeReader) (map[string]int, error) {
	as, err := st.Anomalies(ctx, "")
	if err != nil {
		return nil, err
	}
	n := map[string]int{}
	for _, a := range as {
		if a.Change != "" {
			n[a.Change]++
		}
	}
	return n, nil
}

func newChanges(a *app) *changesScreen {
	return &changesScreen{a: a, title: "changes", sort: "time"}
}

func newLinked(a *app, title string, rows []cpid.ChangeRow) *changesScreen {
	return &changesScreen{a: a, title: title, fixed: true, all: rows, rows: rows, total: len(rows), loaded: true, sort: "time"}
}

func (c *changesScreen) crumb() string { return c.title }

func (c *changesScreen) selected() (cpid.ChangeRow, bool) {
	i := c.cursor - c.base
	if i < 0 || i >= len(c.rows) {
		return cpid.ChangeRow{}, false
	}
	return c.rows[i], true
}

// load rereads the page around the cursor, keeping the cursor on the same
// change when it is still listed.
func (c *changesScreen) load() tea.Cmd {
	keep, _ := c.selected()
	return c.fetch(c.cursor, keep.ID)
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// fetch reads the page around index at.
func (c *changesScreen) fetch(at int, keepID string) tea.Cmd {
	c.seq++
	if c.fixed {
		c.applyFixed()
		if c.anomalies != nil {
			return nil
		}
		seq, st, ctx := c.seq, c.a.st, c.a.ctx
		return func() tea.Msg {
			msg := changesLoaded{to: c, seq: seq, keepID: keepID, keepAt: at, total: c.total, rows: c.rows, filter: c.filter}
			msg.anoms, msg.err = anomalyCounts(ctx, st)
			return msg
		}
	}
	seq, sort, filter := c.seq, c.sort, c.filter
	base := max(0, at-pageSize/4)
	st, ctx := c.a.st, c.a.ctx
	return func() tea.Msg {
		msg := changesLoaded{to: c, seq: seq, base: base, keepID: keepID, keepAt: at, filter: filter}
		if msg.anoms, msg.err = anomalyCounts(ctx, st); msg.err != nil {
			return msg
		}
		if uuidRE.MatchString(filter) {
			ids, err := st.ChangesCarrying(ctx, []string{strings.ToLower(filter)})
			if err == nil && len(ids) > 0 {
				msg.rows, msg.err = st.ChangesByID(ctx, ids)
				msg.total, msg.base, msg.byCPID = len(msg.rows), 0, true
				return msg
			}
		}
		// The page is read while the changes are counted (each reads
		// the changes the filter keeps: at each key typed, the answer
		// waits for the longer of the two, not both), and again when
		// fewer changes than its start match. When none matches, the
		// page's read is stopped.
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		page := make(chan changesPage, 1)
		go func() {
			rows, err := st.Changes(pctx, cpid.ChangeQuery{Filter: filter, Sort: sort, Limit: pageSize, Offset: base})
			page <- changesPage{rows, err}
		}()
		msg.total, msg.err = st.CountChanges(ctx, filter)
		if msg.err != nil || msg.total == 0 {
			return msg
		}
		p := <-page
		msg.rows, msg.err = p.rows, p.err
		if base >= msg.total {
			msg.base = max(0, msg.total-pageSize)
			msg.rows, msg.err = st.Changes(ctx, cpid.ChangeQuery{Filter: filter, Sort: sort, Limit: pageSize, Offset: msg.base})
		}
		return msg
	}
}

// changesPage is a page of changes read, or why not.
type changesPage struct {
	rows []cpid.ChangeRow
	err  error
}

func (c *changesScreen) applyFixed() {
	c.rows = c.rows[:0:0]
	f := strings.ToLower(c.filter)
	for _, r := range c.all {
		hay := strings.ToLower(strings.Join([]string{r.ID, r.User, r.Verb, r.Kind, r.Resource, r.Namespace, r.Name}, " "))
		if strings.Contains(hay, f) {
			c.rows = append(c.rows, r)
		}
	}
	c.total, c.base, c.shown = len(c.rows), 0, c.filter
	c.cursor = clamp(c.cursor, c.total)
}

func (c *changesScreen) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case changesLoaded:
		if msg.seq != c.seq {
			return nil
		}
		c.loaded, c.err = true, msg.err
		queued := c.queued
		c.stale, c.queued = false, nil
		if msg.err != nil {
			return nil
		}
		c.anomalies = msg.anoms
		c.total, c.base, c.rows, c.byCPID, c.shown = msg.total, msg.base, msg.rows, msg.byCPID, msg.filter
		c.cursor = clamp(msg.keepAt, c.total)
		for i, r := range c.rows {
			if r.ID == msg.keepID && msg.keepID != "" {
				c.cursor = c.base + i
			}
		}
		// The keys pressed while it loaded, on the list that arrived.
		var cmds []tea.Cmd
		for i, k := range queued {
			cmds = append(cmds, c.key(k))
			if c.stale {
				// A key asked for another list: the rest wait for it.
				c.queued = append(c.queued, queued[i+1:]...)
				break
			}
		}
		return tea.Batch(cmds...)
	case tea.KeyPressMsg:
		if c.stale {
			c.queued = append(c.queued, msg)
			return nil
		}
		return c.key(msg)
	}
	return nil
}

func (c *changesScreen) key(msg tea.KeyPressMsg) tea.Cmd {
	k := &c.a.keys
	page := 10
	switch {
	case key.Matches(msg, k.Up):
		return c.move(c.cursor - 1)
	case key.Matches(msg, k.Down):
		return c.move(c.cursor + 1)
	case key.Matches(msg, k.PageUp):
		return c.move(c.cursor - page)
	case key.Matches(msg, k.PageDown):
		return c.move(c.cursor + page)
	case key.Matches(msg, k.Top):
		return c.move(0)
	case key.Matches(msg, k.Bottom):
		return c.move(c.total - 1)
	case key.Matches(msg, k.Sort):
		if c.fixed {
			return nil
		}
		for i, s := range sorts {
			if s == c.sort {
				c.sort = sorts[(i+1)%len(sorts)]
				break
			}
		}
		c.cursor, c.top = 0, 0
		c.stale = true
		return c.fetch(0, "")
	case key.Matches(msg, k.Open, k.Right, k.Slowest):
		if r, ok := c.selected(); ok {
			s := newChange(c.a, r.ID)
			s.row, s.haveRow = r, true
			if key.Matches(msg, k.Slowest) {
				s.tab, s.tl.slowest = paneTimeline, true
			}
			return push(s)
		}
	case key.Matches(msg, k.Mark):
		if r, ok := c.selected(); ok {
			if c.marked.ID == r.ID {
				c.marked = cpid.ChangeRow{}
			} else {
				c.marked = r
			}
		}
	case key.Matches(msg, k.Compare):
		r, ok := c.selected()
		switch {
		case !ok:
		case c.marked.ID == "":
			return notice("space marks a change; d then compares it with the one under the cursor")
		case c.marked.ID == r.ID:
			return notice("the marked change is under the cursor: move to another to compare them")
		default:
			return push(newCompare(c.a, c.marked.ID, r.ID))
		}
	}
	return nil
}

func notice(s string) tea.Cmd { return func() tea.Msg { return noticeMsg(s) } }

// move puts the cursor at i, reading another page when i leaves this one.
func (c *changesScreen) move(i int) tea.Cmd {
	if c.total == 0 {
		return nil
	}
	c.cursor = clamp(i, c.total)
	if !c.fixed && (c.cursor < c.base || c.cursor >= c.base+len(c.rows)) {
		c.stale = true
		return c.fetch(c.cursor, "")
	}
	return nil
}

func (c *changesScreen) filterText() string { return c.filter }

// setFilter asks for the changes f keeps. The keys queued for the list
// of the filter before are dropped: they were meant for a list no longer
// asked for.
func (c *changesScreen) setFilter(f string) tea.Cmd {
	c.filter = f
	c.cursor, c.top = 0, 0
	if !c.fixed {
		c.stale, c.queued = true, nil
	}
	return c.fetch(0, "")
}

func (c *changesScreen) status() string {
	if r, ok := c.selected(); ok {
		s := fmt.Sprintf("change %d/%d  %s  %s %s", c.cursor+1, c.total, c.a.short(r.ID), present.Verb(r.Verb, r.Subresource),
			object(r.Kind, r.Namespace, r.Name))
		if c.marked.ID != "" && c.marked.ID != r.ID {
			s = fmt.Sprintf("d compares %s with %s · ", c.a.short(c.marked.ID), c.a.short(r.ID)) + s
		}
		return s
	}
	return plural(c.total, "change")
}

func (c *changesScreen) help() []key.Binding {
	k := &c.a.keys
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open, k.Slowest, k.Sort, k.Mark, k.Compare}
}

func (c *changesScreen) hints() []key.Binding {
	k := &c.a.keys
	if c.fixed {
		return []key.Binding{k.Open, k.Slowest, k.Mark, k.Compare}
	}
	return []key.Binding{k.Open, k.Sort, k.Slowest, k.Mark, k.Compare}
}

// column is one column of the changes table.
type column struct {
	title string
	width int // 0: shares what is left
	right bool
	drop  int // dropped first when narrow: higher drops earlier
	// object: the cell is an object, its namespace elided first.
	object bool
	cell   func(r cpid.ChangeRow) string
}

func (c *changesScreen) columns(w int) []column {
	cols := []column{
		{title: "STARTED", width: 12, cell: func(r cpid.ChangeRow) string { return clock(r.StartedNS) }},
		{title: "TRIGGER", width: 8, drop: 4, cell: func(r cpid.ChangeRow) string { return string(r.Trigger) }},
		{title: "WHO", drop: 2, cell: func(r cpid.ChangeRow) string {
			if a := agent(r.UserAgent); a != "" {
				return r.User + " (" + a + ")"
			}
			return r.User
		}},
		{title: "VERB", width: c.verbWidth(), cell: func(r cpid.ChangeRow) string { return present.Verb(r.Verb, r.Subresource) }},
		{title: "OBJECT", object: true, cell: func(r cpid.ChangeRow) string { return object(r.Kind, r.Namespace, r.Name) }},
		{title: "OBJS", width: 4, right: true, drop: 1, cell: func(r cpid.ChangeRow) string { return strconv.Itoa(r.Objects) }},
		{title: "WRITES", width: 6, right: true, cell: func(r cpid.ChangeRow) string { return strconv.Itoa(r.Writes) }},
		{title: "SETTLED", width: 7, right: true, cell: func(r cpid.ChangeRow) string { return dur(r.SettledNS - r.StartedNS) }},
		{title: "SLOWEST", width: 7, right: true, drop: 3, cell: func(r cpid.ChangeRow) string { return dur(r.SlowestHopNS) }},
	}
	// A database that holds a fleet shows whose change each is.
	if c.clusters() > 1 {
		cols = append([]column{{title: "CLUSTER", width: 10, cell: func(r cpid.ChangeRow) string { return r.Cluster }}}, cols...)
	}
	// Drop what matters least until the flexible columns have room: the
	// objects count, then who (the line under the list names them), and
	// only then the slowest hop and the trigger, which say where to look.
	hasWho := func() bool {
		for _, col := range cols {
			if col.title == "WHO" {
				return true
			}
		}
		return false
	}
	fixedW := func() int {
		n := 4
		for _, col := range cols {
			n += col.width + 1
		}
		return n
	}
	for d := 1; d <= 4; d++ {
		need := 18 // the object alone
		if hasWho() {
			need = 36
		}
		if w-fixedW() >= need {
			break
		}
		var kept []column
		for _, col := range cols {
			if col.drop != d {
				kept = append(kept, col)
			}
		}
		cols = kept
	}
	flex := max(w-fixedW(), 18)
	who := 0
	if hasWho() {
		who = flex * 2 / 5
	}
	for i := range cols {
		switch cols[i].title {
		case "WHO":
			cols[i].width = who
		case "OBJECT":
			cols[i].width = flex - who
		}
	}
	return cols
}

func (c *changesScreen) view(w, h int) string {
	s := &c.a.sty
	var lines []string
	info := plural(c.total, "change")
	switch {
	case c.byCPID && c.total == 1:
		info = fmt.Sprintf("1 change carries CPID %s", c.shown)
	case c.byCPID:
		info = fmt.Sprintf("%d changes carry CPID %s", c.total, c.shown)
	case c.shown != "":
		info += fmt.Sprintf(" matching %q (names, writers, verbs, codes)", c.shown)
	}
	if c.shown != c.filter {
		info += " · filtering…"
	}
	if n := len(c.anomalies); n > 0 {
		info += fmt.Sprintf(" · ! %s with anomalies", plural(n, "change"))
	}
	if !c.fixed {
		order := map[string]string{"time": "newest first", "duration": "longest to settle first", "size": "most writes first"}[c.sort]
		info += " · " + order + " (s to sort)"
	}
	if !c.loaded {
		info = "loading…"
	}
	if c.err != nil {
		info = s.warn.Render("error: " + c.err.Error())
	}
	lines = append(lines, " "+info)
	cols := c.columns(w)
	cell := func(col column, v string) string {
		if col.title == "WHO" && ansi.StringWidth(v) > col.width {
			v, _, _ = strings.Cut(v, " (")
		}
		if col.right {
			return right(v, col.width)
		}
		return fitName(v, col.width)
	}
	head := "    "
	for _, col := range cols {
		head += cell(col, col.title) + " "
	}
	lines = append(lines, s.header.Render(fit(head, w)))
	d := c.detail(w, h/2)
	detail := len(d)
	rowsH := max(1, h-len(lines)-detail)
	c.top = window(c.top, c.cursor, c.total, rowsH)
	for i := c.top; i < min(c.total, c.top+rowsH); i++ {
		j := i - c.base
		if j < 0 || j >= len(c.rows) {
			lines = append(lines, s.dim.Render("  …"))
			continue
		}
		r := c.rows[j]
		line := mark(i == c.cursor) + c.flag(r) + " "
		for _, col := range cols {
			if col.object {
				line += objectName(r.Kind, r.Namespace, r.Name, col.width) + " "
				continue
			}
			line += cell(col, col.cell(r)) + " "
		}
		if i == c.cursor {
			line = s.cursor.Render(fit(line, w))
		}
		lines = append(lines, line)
	}
	if c.loaded && c.total == 0 && c.err == nil {
		if c.shown != "" {
			lines = append(lines, "  no change matches; esc clears the filter")
		} else {
			lines = append(lines, "  no changes: run cpid-tui ingest, then cpid-tui reconstruct")
		}
	}
	for len(lines) < h-detail {
		lines = append(lines, "")
	}
	lines = append(lines[:h-detail], d...)
	return block(lines, w, h)
}

// flag marks a change: * marked for a diff, ! with anomalies.
func (c *changesScreen) flag(r cpid.ChangeRow) string {
	switch {
	case r.ID == c.marked.ID:
		return "*"
	case c.anomalies[r.ID] > 0:
		return "!"
	}
	return " "
}

// detail describes the selected change under the list, in full with w,
// in at most most lines.
func (c *changesScreen) detail(w, most int) []string {
	r, ok := c.selected()
	if !ok {
		return []string{strings.Repeat("─", w)}
	}
	what := fmt.Sprintf(" %s %s by %s at %s: %s to %s, settled after %s, slowest hop %s",
		present.Verb(r.Verb, r.Subresource), object(r.Kind, r.Namespace, r.Name), r.User, stamp(r.StartedNS), plural(r.Writes, "write"),
		plural(r.Objects, "object"), dur(r.SettledNS-r.StartedNS), dur(r.SlowestHopNS))
	if n := c.anomalies[r.ID]; n > 0 {
		what += " · ! " + count(n, "anomaly", "anomalies")
	}
	who := fmt.Sprintf(" change %s · %s", r.ID, r.UserAgent)
	if r.Trigger != "" && r.Trigger != cpid.TriggerUser {
		who = fmt.Sprintf(" change %s · trigger %s: %s", r.ID, r.Trigger, r.TriggerDetail)
	}
	return append([]string{c.a.sty.dim.Render(strings.Repeat("─", w))}, c.a.details(w, 2, most, what, who)...)
}

// verbWidth fits the verbs of the rows read (patch/scale), 6 to 16 cells.
func (c *changesScreen) verbWidth() int {
	n := 6
	for _, r := range c.rows {
		n = max(n, ansi.StringWidth(present.Verb(r.Verb, r.Subresource)))
	}
	return min(n, 16)
}

// clusters counts the clusters of the rows listed.
func (c *changesScreen) clusters() int {
	seen := map[string]bool{}
	for _, r := range c.rows {
		seen[r.Cluster] = true
	}
	return len(seen)
}
