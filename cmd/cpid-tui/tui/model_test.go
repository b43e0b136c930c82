package tui

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/sqlite"
)

func TestOpenAndBack(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	list := m.top().(*changesScreen)
	if list.total != 7 || len(list.rows) != 7 {
		t.Fatalf("changes list has %d of %d rows, want the fixture's 7", len(list.rows), list.total)
	}
	c := openChange(t, m, rollout)
	if c.row.Resource != "deployments" || c.row.Verb != "patch" || c.row.Subresource != "" {
		t.Fatalf("opened %+v, want the rolling update", c.row)
	}
	if !strings.Contains(plain(m), "cpid › changes › patch Deployment default/web") {
		t.Errorf("no breadcrumb:\n%s", plain(m))
	}
	press(t, m, "esc")
	if m.top() != list || list.cursor != rollout {
		t.Errorf("esc: top %T, cursor %d; want the list, cursor on row %d", m.top(), list.cursor, rollout)
	}
	press(t, m, "esc") // nothing under the list: stays
	if m.top() != list {
		t.Error("esc on the first screen left it")
	}
	if !press(t, m, "q") {
		t.Error("q did not quit")
	}
}

func TestOpenWithChangeOption(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	id := m.top().(*changesScreen).rows[rollout].ID
	m = newTest(t, 100, 30, Options{Change: id})
	c, ok := m.top().(*changeScreen)
	if !ok || !c.loaded || c.err != nil || c.row.ID != id || len(m.stack) != 2 {
		t.Fatalf("--change %s: top %T %+v", id, m.top(), m.top())
	}
	m = newTest(t, 100, 30, Options{Change: "no-such-change"})
	if !strings.Contains(plain(m), `error: no change "no-such-change"`) {
		t.Errorf("an unknown --change shows no error:\n%s", plain(m))
	}
}

func TestSortAndFilter(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	list := m.top().(*changesScreen)
	press(t, m, "s")
	if list.sort != "duration" {
		t.Fatalf("sort = %s after s", list.sort)
	}
	for i := 1; i < len(list.rows); i++ {
		a, b := list.rows[i-1], list.rows[i]
		if a.SettledNS-a.StartedNS < b.SettledNS-b.StartedNS {
			t.Errorf("by duration, row %d settles faster than row %d", i-1, i)
		}
	}
	press(t, m, "s")
	for i := 1; i < len(list.rows); i++ {
		if list.rows[i-1].Writes < list.rows[i].Writes {
			t.Errorf("by size, row %d has fewer writes than row %d", i-1, i)
		}
	}
	press(t, m, "s")
	if list.sort != "time" {
		t.Errorf("sort = %s after three s", list.sort)
	}

	press(t, m, "/")
	typeText(t, m, "kwok-node")
	if list.total != 1 || list.rows[0].Name != "kwok-node-0" {
		t.Errorf("filter kwok-node: %d rows %+v", list.total, list.rows)
	}
	press(t, m, "enter") // keeps the filter, gives the keys back
	if m.editing || list.filter != "kwok-node" {
		t.Errorf("after enter: editing %v, filter %q", m.editing, list.filter)
	}
	press(t, m, "esc") // clears the filter before going back
	if list.filter != "" || list.total != 7 {
		t.Errorf("esc left filter %q, %d rows", list.filter, list.total)
	}

	// A CPID that is not a change's root finds the changes carrying it.
	c := openChange(t, m, rollout)
	cpid := c.dag.g.Nodes[len(c.dag.g.Nodes)-1].CPID
	press(t, m, "esc", "/")
	typeText(t, m, cpid)
	if !list.byCPID || list.total != 1 || list.rows[0].ID != c.id {
		t.Errorf("filter by CPID %s: byCPID %v, rows %+v", cpid, list.byCPID, list.rows)
	}
	if !strings.Contains(plain(m), "1 change carries CPID "+cpid) {
		t.Errorf("no explanation of the CPID filter:\n%s", plain(m))
	}
}

func TestTabsAndTimeline(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	c := openChange(t, m, rollout)
	if c.tab != paneDAG {
		t.Fatalf("a change opens on pane %d, want the DAG", c.tab)
	}
	press(t, m, "tab")
	if c.tab != paneTimeline {
		t.Fatalf("tab: pane %d", c.tab)
	}
	press(t, m, "shift+tab", "shift+tab")
	if c.tab != paneRevisions {
		t.Fatalf("shift+tab twice from the timeline: pane %d", c.tab)
	}
	press(t, m, "2")
	tl := c.tl
	critical := 0
	for _, e := range tl.all {
		if e.Critical {
			critical++
		}
	}
	if critical < 3 || len(tl.all) != c.row.Writes+3 {
		t.Errorf("timeline: %d entries (%d writes), %d critical", len(tl.all), c.row.Writes, critical)
	}
	s := plain(m)
	for _, want := range []string{"◆", "━", "✕", "kube-scheduler", "endpoint-controller", "on the critical path"} {
		if !strings.Contains(s, want) {
			t.Errorf("timeline screen lacks %q", want)
		}
	}
	from0, to0 := tl.shown()
	press(t, m, "G", "+")
	from1, to1 := tl.shown()
	if to1-from1 >= to0-from0 || to1 != to0 {
		t.Errorf("zoom in at the last write: window [%d,%d] from [%d,%d]", from1, to1, from0, to0)
	}
	press(t, m, "-", "-")
	if f, tt := tl.shown(); f != from0 || tt != to0 {
		t.Error("zooming out again does not show the whole change")
	}
	press(t, m, "v")
	if !tl.byObj || !strings.Contains(plain(m), "EndpointSlice web-zpq8f") {
		t.Errorf("v: lanes by object not shown:\n%s", plain(m))
	}

	// The filter keeps matching writes and the cursor on the same write.
	press(t, m, "g", "j", "j", "j", "j")
	at, _ := tl.cursorEntry()
	press(t, m, "/")
	typeText(t, m, at.Writer)
	for _, e := range tl.ents {
		if e.Writer != at.Writer {
			t.Errorf("filter %q kept %+v", at.Writer, e)
		}
	}
	if e, _ := tl.cursorEntry(); e.EventID != at.EventID {
		t.Errorf("filter moved the cursor from %d to %d", at.EventID, e.EventID)
	}
	press(t, m, "esc")
	if len(tl.ents) != len(tl.all) {
		t.Error("esc did not clear the timeline filter")
	}
}

func TestLogsFollowTimeline(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	c := openChange(t, m, rollout)
	press(t, m, "2")
	for range 10 {
		press(t, m, "j")
	}
	at, _ := c.tl.cursorEntry()
	press(t, m, "3")
	l := c.logs
	if !l.loaded || l.err != nil || len(l.lines) == 0 || l.set.Exact {
		t.Fatalf("logs: loaded %v, err %v, %d lines, exact %v", l.loaded, l.err, len(l.lines), l.set.Exact)
	}
	if l.lines[l.cursor].TimeNS < at.NS || (l.cursor > 0 && l.lines[l.cursor-1].TimeNS >= at.NS) {
		t.Errorf("log cursor on line %d at %d, not the first at or after the timeline cursor %d", l.cursor, l.lines[l.cursor].TimeNS, at.NS)
	}
	if !strings.Contains(plain(m), "── ▲ timeline cursor "+clock(at.NS)) {
		t.Errorf("no timeline cursor among the log lines:\n%s", plain(m))
	}
	press(t, m, "/")
	typeText(t, m, "bound pod")
	for _, ln := range l.lines {
		if ln.Msg != "Successfully bound pod to node" {
			t.Errorf("filter kept %q", ln.Msg)
		}
	}
	if len(l.lines) != 2 {
		t.Errorf("%d scheduler lines, want the 2 bindings", len(l.lines))
	}
}

func TestRevisionsDiff(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	c := openChange(t, m, rollout)
	press(t, m, "4")
	r := c.revs
	if !r.loaded || r.err != nil || r.ref.Resource != "deployments" || r.ref.Name != "web" {
		t.Fatalf("revisions of %+v: loaded %v, err %v", r.ref, r.loaded, r.err)
	}
	cur, _ := r.current()
	if r.revs[cur].ChangeID != c.id {
		t.Errorf("cursor on a revision of change %s, want this change", r.revs[cur].ChangeID)
	}
	if !strings.Contains(plain(m), "diff #") {
		t.Errorf("no diff:\n%s", plain(m))
	}
	// managedFields: hidden by default, shown with m.
	press(t, m, "g")
	if strings.Contains(plain(m), "managedFields\"") {
		t.Error("managedFields shown by default")
	}
	press(t, m, "m")
	if !r.managed {
		t.Fatal("m did not toggle managedFields")
	}
	press(t, m, "J")
	if !strings.Contains(plain(m), `"managedFields"`) {
		t.Errorf("m: managedFields not shown:\n%s", plain(m))
	}
	// b marks a base: the diff compares the cursor's revision with it.
	press(t, m, "b", "j", "j", "j")
	if !strings.Contains(plain(m), "diff #1 rv ") {
		t.Errorf("base #1 not used:\n%s", plain(m))
	}
	// Enter on a timeline write opens its object's revisions there.
	press(t, m, "2", "j")
	at, _ := c.tl.cursorEntry()
	press(t, m, "enter")
	cur, _ = r.current()
	if c.tab != paneRevisions || r.ref.Name != at.Name || r.revs[cur].EventID != at.EventID {
		t.Errorf("enter on %s %s: pane %d, revisions of %s at event %d", at.Kind, at.Name, c.tab, r.ref.Name, r.revs[cur].EventID)
	}
}

func TestDAG(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	c := openChange(t, m, rollout)
	d := c.dag
	n := len(d.rows)
	if d.rows[0].obj >= 0 || d.g.Nodes[d.rows[0].node].CPID != c.id {
		t.Fatalf("the first row is not the root CPID")
	}
	press(t, m, "space")
	if len(d.rows) != len(d.roots) || len(d.rows) >= n {
		t.Errorf("collapsing the root leaves %d of %d rows, want the %d top CPIDs", len(d.rows), n, len(d.roots))
	}
	press(t, m, "l")
	if len(d.rows) != n {
		t.Errorf("expanding again: %d rows, want %d", len(d.rows), n)
	}
	// An object: enter shows its revisions.
	rs := -1
	for i, r := range d.rows {
		if r.obj >= 0 && d.g.Nodes[r.node].Objects[r.obj].Resource == "replicasets" {
			rs = i
			break
		}
	}
	if rs < 0 {
		t.Fatal("no ReplicaSet in the DAG")
	}
	for range rs {
		press(t, m, "j")
	}
	press(t, m, "enter")
	if c.tab != paneRevisions || c.revs.ref.Resource != "replicasets" {
		t.Errorf("enter on an object: pane %d, revisions of %+v", c.tab, c.revs.ref)
	}
	// A merge with a source in another change: o opens that change.
	press(t, m, "1")
	target := -1
	for i, r := range d.rows {
		node := d.g.Nodes[r.node]
		for _, mg := range node.Merges {
			for _, src := range mg.Sources {
				if len(d.g.Outside[src]) > 0 && r.obj < 0 && target < 0 {
					target = i
				}
			}
		}
	}
	if target < 0 {
		t.Fatal("no merge with an outside source")
	}
	press(t, m, "g")
	for range target {
		press(t, m, "j")
	}
	src := d.g.Nodes[d.rows[target].node]
	press(t, m, "o")
	var ids []string
	switch top := m.top().(type) {
	case *changeScreen:
		ids = []string{top.id}
	case *changesScreen:
		for _, r := range top.rows {
			ids = append(ids, r.ID)
		}
	}
	for _, mg := range src.Merges {
		for _, s := range mg.Sources {
			for _, ch := range d.g.Outside[s] {
				if !slices.Contains(ids, ch) {
					t.Errorf("o on %s opened %v, not its origin change %s", src.CPID, ids, ch)
				}
			}
		}
	}
	if len(m.stack) != 3 {
		t.Errorf("breadcrumb has %d screens after o", len(m.stack))
	}
	press(t, m, "esc")
	if m.top() != c {
		t.Error("esc did not come back to the change")
	}
	// The root's own CPID has no origins: a notice, no new screen.
	press(t, m, "g", "o")
	if len(m.stack) != 2 || !strings.Contains(plain(m), "no other change among the origins") {
		t.Errorf("o on the root: %d screens\n%s", len(m.stack), plain(m))
	}
}

func TestHelp(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	press(t, m, "?")
	if !m.help || !strings.Contains(plain(m), "Everywhere") {
		t.Fatal("? shows no help")
	}
	press(t, m, "j") // ignored while help is open
	if m.top().(*changesScreen).cursor != 0 {
		t.Error("a key moved the list under the help")
	}
	press(t, m, "esc")
	if m.help {
		t.Error("esc did not close the help")
	}
	press(t, m, "?", "?")
	if m.help {
		t.Error("? did not close the help")
	}
	press(t, m, "?")
	if !press(t, m, "q") {
		t.Error("q in the help did not quit")
	}
}

func TestMouseWheel(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	list := m.top().(*changesScreen)
	drive(t, m, tea.MouseWheelMsg{Button: tea.MouseWheelDown}, tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if list.cursor != 2 {
		t.Errorf("two wheel turns down: cursor %d", list.cursor)
	}
	drive(t, m, tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if list.cursor != 1 {
		t.Errorf("wheel up: cursor %d", list.cursor)
	}
}

func TestNoColor(t *testing.T) {
	colorSGR := []string{"\x1b[38;", "\x1b[48;", "\x1b[3", "\x1b[9"}
	for _, color := range []bool{false, true} {
		m := newTest(t, 100, 30, Options{Color: color})
		openChange(t, m, rollout)
		press(t, m, "2")
		raw := m.Render()
		has := false
		for _, sgr := range colorSGR {
			has = has || strings.Contains(raw, sgr)
		}
		// Styles may combine attributes: look for color parameters too.
		has = has || strings.Contains(raw, ";38;") || strings.Contains(raw, ";48;")
		if has != color {
			t.Errorf("Color %v: color sequences present %v", color, has)
		}
		if !strings.Contains(raw, "\x1b[7m") && !strings.Contains(raw, ";7m") && !strings.Contains(raw, "[7;") {
			t.Errorf("Color %v: the cursor is not reversed", color)
		}
	}
}

func TestResize(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	openChange(t, m, rollout)
	for _, size := range [][2]int{{80, 24}, {120, 40}, {60, 15}, {59, 30}, {100, 14}, {10, 3}, {100, 30}} {
		drive(t, m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for _, tab := range []string{"1", "2", "3", "4", "?", "?"} {
			press(t, m, tab)
			checkSize(t, m, size[0], size[1])
		}
	}
}

// TestRefreshKeepsCursor ingests part of the fixture, browses it, ingests
// the rest as a tail would, and checks that the next refresh shows the new
// changes while the cursor stays on the change it was on.
func TestRefreshKeepsCursor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpid.db")
	// The rotated backups first, as a tailer finds them; the live file later.
	first := []string{bundle + "/audit/audit-2026-11-22T16-26-45.615.log.gz", bundle + "/audit/audit-2026-11-22T16-26-59.899.log.gz", bundle + "/logs"}
	if err := fill(path, first...); err != nil {
		t.Fatal(err)
	}
	m := newTestAt(t, path, 100, 30, Options{})
	list := m.top().(*changesScreen)
	before := list.total
	if before == 0 || before >= 7 {
		t.Fatalf("the first part has %d changes", before)
	}
	press(t, m, "j")
	keep := list.rows[list.cursor].ID
	version := m.version

	drive(t, m, tickMsg{}) // nothing new: nothing reloads
	if m.version != version {
		t.Fatal("the data version moved without a write")
	}
	if err := fill(path, bundle+"/audit/audit.log"); err != nil {
		t.Fatal(err)
	}
	drive(t, m, tickMsg{})
	if m.version == version {
		t.Fatal("the data version did not move after ingest")
	}
	if list.total <= before {
		t.Fatalf("refresh: %d changes, had %d", list.total, before)
	}
	if got := list.rows[list.cursor].ID; got != keep {
		t.Errorf("refresh moved the cursor from change %s to %s", m.a.short(keep), m.a.short(got))
	}
}

// TestEmptyDatabase: a database with nothing reconstructed says what to do.
func TestEmptyDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpid.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	m := newTestAt(t, path, 80, 24, Options{})
	if s := plain(m); !strings.Contains(s, "no changes: run cpid-tui ingest") || !strings.Contains(s, "no data") {
		t.Errorf("empty database:\n%s", s)
	}
	press(t, m, "j", "enter", "s", "G")
	checkSize(t, m, 80, 24)
}

// TestWalkthrough follows the post-mortem of docs/TUI.md, so that the
// walkthrough stays true.
func TestWalkthrough(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	press(t, m, "s", "enter")
	c := m.top().(*changeScreen)
	if c.row.Verb != "patch" || c.row.Writes != 45 || dur(c.row.SettledNS-c.row.StartedNS) != "267ms" {
		t.Fatalf("the longest change is %+v", c.row)
	}
	if !strings.Contains(plain(m), "(change 044d68ee)") {
		t.Errorf("the DAG names no source from the scale before:\n%s", plain(m))
	}
	press(t, m, "S")
	if e, _ := c.tl.cursorEntry(); c.tab != paneTimeline || dur(e.HopNS) != "33.6ms" || e.Explain != "requeue" ||
		e.Writer != "deployment-controller" || e.Critical {
		t.Errorf("S: cursor on %+v, want the deployment controller's 33.6ms retry after its 409, off the critical path", e)
	}
	if !strings.Contains(plain(m), "informer 196ms (67%) · kubelet 93.0ms (32%)") {
		t.Errorf("where the time went:\n%s", plain(m))
	}
	for _, want := range []string{"kwok patch", "kube-scheduler create", "replicaset-controller create", "deployment-controller create"} {
		press(t, m, "[")
		if e, _ := c.tl.cursorEntry(); e.Writer+" "+e.Verb != want || !e.Critical {
			t.Errorf("[: %s %s, want %s on the critical path", e.Writer, e.Verb, want)
		}
	}
	press(t, m, "g")
	for e, _ := c.tl.cursorEntry(); !e.Attempt; e, _ = c.tl.cursorEntry() {
		press(t, m, "j")
	}
	failed, _ := c.tl.cursorEntry()
	press(t, m, "3")
	ln := c.logs.lines[c.logs.cursor]
	if !strings.HasPrefix(ln.Msg, "Error syncing deployment") {
		t.Errorf("the log line after the 409 is %q", ln.Msg)
	}
	if c.logs.links[ln.ID] != failed.EventID {
		t.Errorf("the line after the 409 explains write %d, not the 409 %d", c.logs.links[ln.ID], failed.EventID)
	}
	press(t, m, "4")
	cur, _ := c.revs.current()
	if r := c.revs.revs[cur]; !r.Attempt || r.Code != 409 || !strings.Contains(plain(m), "stored no object") {
		t.Errorf("revisions at the 409: %+v\n%s", r, plain(m))
	}
	press(t, m, "k")
	cur, _ = c.revs.current()
	if r := c.revs.revs[cur]; r.Seq != 19 || r.Verb != "patch" {
		t.Errorf("k: revision %+v, want the user's patch #19", r)
	}
	found := false
	for range 5 {
		found = found || strings.Contains(plain(m), `+             "image": "nginx:1.28",`)
		press(t, m, "J")
	}
	if !found {
		t.Error("the diff of the user's patch does not show the new image")
	}
}

// TestTimelineLayers draws writes over spans over hops, and gives spans of
// a service without writes a lane of their own.
func TestTimelineLayers(t *testing.T) {
	a := &app{sty: newStyles(false), keys: newKeys()}
	c := newChange(a, "x")
	c.tl.set([]cpid.TimelineEntry{
		{EventID: 1, ReceivedNS: 0, NS: 10, Writer: "op", Critical: true},
		{EventID: 2, ReceivedNS: 900, NS: 1000, Writer: "op", CauseID: 1, CauseNS: 10, Critical: true},
		{EventID: 3, ReceivedNS: 400, NS: 500, Writer: "op", CauseID: 1, CauseNS: 10, Attempt: true, Code: 409},
	}, []cpid.ChangeSpan{{Service: "op", StartNS: 600, EndNS: 800}, {Service: "other", StartNS: 100, EndNS: 300}})
	c.tl.cursor = -1 // no cursor: nothing reversed
	lane := ansi.Strip(c.tl.lane("op", 101, func(ns int64) int { return int(ns / 10) }, 0, 1000))
	for _, want := range []struct {
		at    int
		glyph rune
	}{{1, glyphCritical}, {100, glyphCritical}, {50, glyphFailed}, {70, glyphSpan}, {30, glyphHopCrit}, {95, glyphHopCrit}} {
		if got := []rune(lane)[want.at]; got != want.glyph {
			t.Errorf("cell %d = %c, want %c: %s", want.at, got, want.glyph, lane)
		}
	}
	if ls := c.tl.lanes(); !slices.Equal(ls, []string{"op", "other"}) {
		t.Errorf("lanes = %q", ls)
	}
}

// TestFleetShowsCluster: a database holding two clusters lists both, with a
// CLUSTER column; a view of one cluster lists only its changes, without it.
func TestFleetShowsCluster(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fleet.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]string{"east": bundle, "west": "../../../fixtures/figure-5/bundle"} {
		c := st.InCluster(name)
		if _, err := (&ingest.Ingester{Sink: c}).Run(ctx, []string{b}); err != nil {
			t.Fatal(err)
		}
		if _, err := reconstruct.Run(ctx, c, reconstruct.Options{Family: ingest.Family}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	m := newTestAt(t, path, 160, 30, Options{})
	screen := plain(m)
	if !strings.Contains(screen, "CLUSTER") || !strings.Contains(screen, "east") || !strings.Contains(screen, "west") {
		t.Errorf("fleet screen lacks the clusters:\n%s", screen)
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	one := New(ctx, db.InCluster("west"), Options{Now: fixedNow})
	drive(t, one, tea.WindowSizeMsg{Width: 160, Height: 30})
	run(t, one, one.Init())
	screen = plain(one)
	if strings.Contains(screen, "CLUSTER") || strings.Contains(screen, "east") {
		t.Errorf("a view of west shows another cluster:\n%s", screen)
	}
}
