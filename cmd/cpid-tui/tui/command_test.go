package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/sqlite"
)

// runCommand types a command line: ":", the text, enter.
func runCommand(t *testing.T, m *Model, line string) {
	t.Helper()
	press(t, m, ":")
	if !m.commanding {
		t.Fatalf(": did not open the command line:\n%s", plain(m))
	}
	typeText(t, m, line)
	press(t, m, "enter")
}

// TestCommandLine: : opens a command line as in k9s: :history TYPE/NAME
// opens an object's history (kubectl's names), :changes goes back to the
// list, :diff compares two changes by id prefixes, :change opens one, :q
// quits; tab completes a command's name; a mistake says what is wrong.
func TestCommandLine(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	list := m.top().(*changesScreen)
	runCommand(t, m, "history deploy/web")
	h, ok := m.top().(*historyScreen)
	if !ok || !h.loaded || h.err != nil || h.ref.Resource != "deployments" || h.ref.Group != "apps" || h.ref.Name != "web" || h.ref.Namespace != "default" {
		t.Fatalf(":history deploy/web opened %T %+v", m.top(), m.top())
	}
	if len(h.rows) < 10 || !strings.Contains(plain(m), "history of Deployment default/web") {
		t.Errorf(":history deploy/web: %d writes\n%s", len(h.rows), plain(m))
	}
	// Every write of the Deployment, from every change.
	changes := map[string]bool{}
	for _, w := range h.rows {
		changes[w.Change] = true
	}
	if len(changes) < 4 {
		t.Errorf("the Deployment's history spans %d changes, want its create, scales and rollout", len(changes))
	}
	runCommand(t, m, "h po/"+strings.TrimPrefix(podOf(t, m), "pod/")+" -n default")
	if h2, ok := m.top().(*historyScreen); !ok || h2.ref.Resource != "pods" || len(h2.rows) == 0 {
		t.Errorf(":h po/NAME -n default opened %T", m.top())
	}
	runCommand(t, m, "changes")
	if len(m.stack) != 1 || m.top() != list {
		t.Errorf(":changes: %d screens, top %T", len(m.stack), m.top())
	}

	a, b := list.rows[3].ID, list.rows[2].ID // the two scales
	runCommand(t, m, "diff "+a[:6]+" "+b[:6])
	d, ok := m.top().(*compareScreen)
	if !ok || !d.loaded || d.err != nil || d.r.A.ID != a || d.r.B.ID != b || len(d.r.Steps) == 0 {
		t.Fatalf(":diff opened %T %+v", m.top(), m.top())
	}
	runCommand(t, m, "change "+a[:8])
	if c, ok := m.top().(*changeScreen); !ok || c.id != a || !c.loaded {
		t.Errorf(":change %s opened %T", a[:8], m.top())
	}

	press(t, m, ":")
	typeText(t, m, "hist")
	press(t, m, "tab")
	if v := m.cmdline.Value(); v != "history " {
		t.Errorf("tab completed hist to %q", v)
	}
	press(t, m, "esc")
	if m.commanding {
		t.Error("esc did not close the command line")
	}
	for line, want := range map[string]string{
		"frobnicate":                        `unknown command "frobnicate"`,
		"history web":                       "want TYPE/NAME",
		"history deploy/nope":               "no writes of Deployment.apps/nope",
		"history deploy/web -n kube-system": "no writes of Deployment.apps/web in namespace kube-system",
		"diff " + a[:8]:                     "diff wants two change ids",
		"change zzzz":                       `no change "zzzz"`,
	} {
		depth := len(m.stack)
		runCommand(t, m, line)
		if s := plain(m); !strings.Contains(s, want) || len(m.stack) != depth {
			t.Errorf(":%s: want %q in the status line, the screens unchanged:\n%s", line, want, s)
		}
	}
	press(t, m, ":")
	typeText(t, m, "q")
	if !press(t, m, "enter") {
		t.Error(":q did not quit")
	}
}

// podOf is a Pod the rolling update created.
func podOf(t *testing.T, m *Model) string {
	t.Helper()
	path, _ := fixtureDB()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list := m.stack[0].(*changesScreen)
	tl, err := st.Timeline(context.Background(), list.rows[rollout].ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tl {
		if e.Resource == "pods" && e.Verb == "create" {
			return "pod/" + e.Name
		}
	}
	t.Fatal("the rolling update created no Pod")
	return ""
}

// TestHistoryAmbiguous: in a database of two clusters, deploy/web names
// two objects: :history lists both, enter opens the history of one.
func TestHistoryAmbiguous(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fleet.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]string{"east": bundle, "west": "../../../fixtures/instrumented/bundle"} {
		c := st.InCluster(name)
		if _, err := (&ingest.Ingester{Sink: c}).Run(ctx, []string{b}); err != nil {
			t.Fatal(err)
		}
		if _, err := reconstruct.Run(ctx, c, reconstruct.Options{Family: ingest.Family}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	m := newTestAt(t, path, 100, 30, Options{})
	runCommand(t, m, "history deploy/web")
	o, ok := m.top().(*objectsScreen)
	if !ok || len(o.rows) != 2 || !strings.Contains(plain(m), "Deployment.apps/web names 2 objects") {
		t.Fatalf(":history deploy/web in a fleet opened %T\n%s", m.top(), plain(m))
	}
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		drive(t, m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		checkSize(t, m, size[0], size[1])
		golden(t, m, fmt.Sprintf("objects-%dx%d", size[0], size[1]))
	}
	press(t, m, "j", "enter")
	h, ok := m.top().(*historyScreen)
	if !ok || !h.loaded || h.ref.Cluster != o.rows[1].Cluster || len(h.rows) != o.rows[1].Writes {
		t.Fatalf("enter opened %T %+v, want the history of %+v", m.top(), m.top(), o.rows[1])
	}
}

// TestJumpToSlowest: S puts the timeline's cursor on the write that waited
// longest for its cause, from the timeline, another pane or the changes
// list, clearing a filter that hides it; ] and [ walk the critical path.
func TestJumpToSlowest(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	list := m.top().(*changesScreen)
	c := openChange(t, m, rollout)
	var slowest cpid.TimelineEntry
	for _, e := range c.tl.all {
		if e.CauseID != 0 && e.HopNS > slowest.HopNS {
			slowest = e
		}
	}
	if slowest.HopNS != c.row.SlowestHopNS {
		t.Fatalf("the slowest hop of the timeline is %d, the change says %d", slowest.HopNS, c.row.SlowestHopNS)
	}
	press(t, m, "S") // from the DAG
	if e, _ := c.tl.cursorEntry(); c.tab != paneTimeline || e.EventID != slowest.EventID {
		t.Errorf("S on the DAG: pane %d, cursor on %d, want the timeline on %d", c.tab, e.EventID, slowest.EventID)
	}
	if !strings.Contains(plain(m), "hop +"+dur(slowest.HopNS)) {
		t.Errorf("the screen does not show the slowest hop %s:\n%s", dur(slowest.HopNS), plain(m))
	}
	// A filter that hides it is cleared.
	press(t, m, "g", "/")
	typeText(t, m, "kube-scheduler")
	press(t, m, "enter", "S")
	if e, _ := c.tl.cursorEntry(); e.EventID != slowest.EventID || c.tl.filter != "" {
		t.Errorf("S under a filter: cursor on %d, filter %q", e.EventID, c.tl.filter)
	}
	// ] and [ go along the critical path, in the list's order.
	var path []int64
	for _, e := range c.tl.ents {
		if e.Critical {
			path = append(path, e.EventID)
		}
	}
	press(t, m, "g")
	if e, _ := c.tl.cursorEntry(); !e.Critical {
		t.Fatal("the first write is not on the critical path")
	}
	for i := 1; i < len(path); i++ {
		press(t, m, "]")
		if e, _ := c.tl.cursorEntry(); e.EventID != path[i] {
			t.Fatalf("] %d times: cursor on %d, want %d", i, e.EventID, path[i])
		}
	}
	press(t, m, "]") // the last stays
	press(t, m, "[")
	if e, _ := c.tl.cursorEntry(); e.EventID != path[len(path)-2] {
		t.Errorf("[ from the last: cursor on %d, want %d", e.EventID, path[len(path)-2])
	}
	// From the list, S opens a change at its slowest hop.
	press(t, m, "esc", "esc")
	if m.top() != list {
		t.Fatalf("esc esc: %T on top", m.top())
	}
	press(t, m, "g", "S")
	c2, ok := m.top().(*changeScreen)
	if !ok || !c2.loaded || c2.tab != paneTimeline {
		t.Fatalf("S on the list opened %T", m.top())
	}
	if e, _ := c2.tl.cursorEntry(); e.HopNS != c2.row.SlowestHopNS {
		t.Errorf("S on the list: the cursor's hop is %d, the change's slowest %d", e.HopNS, c2.row.SlowestHopNS)
	}
}

// TestCompareChanges: space marks a change, d compares it with the one
// under the cursor: cpid-tui diff's comparison (reconstruct.Compare),
// whose rows add up to each change's settled time; enter opens a step's
// write.
func TestCompareChanges(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	list := m.top().(*changesScreen)
	press(t, m, "d")
	if !strings.Contains(plain(m), "space marks a change") {
		t.Errorf("d without a mark:\n%s", plain(m))
	}
	press(t, m, "j", "j", "j", "space", "k", "d") // the first scale, then the second
	d, ok := m.top().(*compareScreen)
	if !ok || !d.loaded || d.err != nil {
		t.Fatalf("d opened %T %+v", m.top(), m.top())
	}
	if d.r.A.ID != list.rows[3].ID || d.r.B.ID != list.rows[2].ID {
		t.Errorf("compared %s with %s, want the marked %s with %s", d.r.A.ID, d.r.B.ID, list.rows[3].ID, list.rows[2].ID)
	}
	var a, b int64
	for _, w := range d.r.Writers {
		a, b = a+w.ANS, b+w.BNS
	}
	if a != d.r.SettledANS || b != d.r.SettledBNS {
		t.Errorf("the writers add up to %d and %d, the changes settled after %d and %d", a, b, d.r.SettledANS, d.r.SettledBNS)
	}
	s := plain(m)
	for _, want := range append([]string{"CRITICAL PATH BY WRITER", "settled after", "STEP", "DELTA"}, strings.Fields(d.r.Summary)...) {
		if !strings.Contains(s, want) {
			t.Errorf("the diff screen lacks %q:\n%s", want, s)
		}
	}
	step := d.r.Steps[0]
	press(t, m, "enter")
	c, ok := m.top().(*changeScreen)
	if e, _ := c.tl.cursorEntry(); !ok || c.id != d.r.A.ID || e.EventID != step.A.EventID {
		t.Errorf("enter on the first step opened %T at %d, want %s at %d", m.top(), e.EventID, d.r.A.ID, step.A.EventID)
	}
}

// TestAnomaliesShown: on the node-loss fixture, whose writes have
// anomalies, the list marks their changes, the change says how many, the
// timeline marks the writes and tells them, and :anomalies lists them
// all, enter opening one's change at its write.
func TestAnomaliesShown(t *testing.T) {
	path, err := fixtureDBOf("node-loss")
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	as, err := st.Anomalies(context.Background(), "")
	st.Close()
	if err != nil || len(as) == 0 {
		t.Fatalf("node-loss has %d anomalies: %v", len(as), err)
	}
	m := newTestAt(t, path, 120, 40, Options{})
	list := m.top().(*changesScreen)
	byChange := map[string]int{}
	for _, a := range as {
		byChange[a.Change]++
	}
	for i, r := range list.rows {
		flagged := strings.HasPrefix(strings.TrimPrefix(list.flag(r), " "), "!")
		if flagged != (byChange[r.ID] > 0) {
			t.Errorf("row %d (%s): flagged %v, %d anomalies", i, m.a.short(r.ID), flagged, byChange[r.ID])
		}
	}
	runCommand(t, m, "anomalies")
	s, ok := m.top().(*anomaliesScreen)
	if !ok || !s.loaded || len(s.rows) != len(as) || !strings.Contains(plain(m), count(len(as), "anomaly", "anomalies")+" in the database") {
		t.Fatalf(":anomalies opened %T\n%s", m.top(), plain(m))
	}
	for i, a := range s.rows {
		if a.Change == "" {
			continue
		}
		s.cursor = i
		press(t, m, "enter")
		c, ok := m.top().(*changeScreen)
		if !ok || !c.loaded || c.id != a.Change || c.tab != paneTimeline {
			t.Fatalf("enter on anomaly %d opened %T", i, m.top())
		}
		e, _ := c.tl.cursorEntry()
		screen := plain(m)
		if e.EventID != a.EventID || c.tl.flag(e) != "!" || !strings.Contains(screen, "! anomaly "+a.Kind) ||
			!strings.Contains(screen, "! "+count(byChange[a.Change], "anomaly", "anomalies")) {
			t.Errorf("anomaly %s on %d: the timeline is on %d, flag %q:\n%s", a.Kind, a.EventID, e.EventID, c.tl.flag(e), screen)
		}
		break
	}
}
