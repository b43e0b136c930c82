package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// squeeze drops every space and line break: text wrapped over lines reads
// as the text itself.
func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }

// leaderGap opens the leader-gap fixture's scale (the change that takes
// longest to settle) on its timeline, the cursor on its slowest hop: the
// write the new leader made, whose reason is a long explanation.
func leaderGap(t *testing.T, w, h int) (*Model, cpid.TimelineEntry) {
	t.Helper()
	m := newTestOf(t, "leader-gap-scale", w, h, Options{})
	press(t, m, "s", "S")
	c, ok := m.top().(*changeScreen)
	if !ok {
		t.Fatalf("S did not open a change: %T", m.top())
	}
	e, ok := c.tl.cursorEntry()
	if !ok || e.Explain != "leader-gap" || len(e.ExplainDetail) < 150 {
		t.Fatalf("the slowest hop is not the leader gap with its long reason: %+v", e)
	}
	return m, e
}

// TestTimelineHopAndReasonInFull: at 80x24 as at 200x50 the timeline shows
// the selected write's hop and its reason whole, wrapped under the list;
// at 80x24 every write of the change has its hop in the list.
func TestTimelineHopAndReasonInFull(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m, e := leaderGap(t, size[0], size[1])
			screen := squeeze(plain(m))
			for _, want := range []string{"hop" + dur(e.HopNS), string(e.Explain), e.ExplainDetail} {
				if !strings.Contains(screen, squeeze(want)) {
					t.Errorf("the screen does not show %q whole:\n%s", want, plain(m))
				}
			}
			checkSize(t, m, size[0], size[1])
		})
	}
	m, _ := leaderGap(t, 80, 24)
	c := m.top().(*changeScreen)
	press(t, m, "g")
	for i := range c.tl.ents {
		e, _ := c.tl.cursorEntry()
		row := ""
		for _, l := range strings.Split(plain(m), "\n") {
			if strings.HasPrefix(l, "▶") {
				row = l
			}
		}
		if e.CauseID != 0 && !strings.Contains(row, "+"+dur(e.HopNS)) {
			t.Errorf("write %d: its row does not show its hop %s: %q", i+1, dur(e.HopNS), row)
		}
		press(t, m, "j")
	}
}

// TestWrapShowsCutText: w shows in full what the lines under a list cut
// (the cause of a write, a change's summary), on every screen; w again
// cuts it.
func TestWrapShowsCutText(t *testing.T) {
	m, e := leaderGap(t, 80, 24)
	cause := "nothing names the cause · CPID " + m.a.short(e.CPID)
	if strings.Contains(squeeze(plain(m)), squeeze(cause)) {
		t.Fatalf("the cause already fits at 80x24; the test needs one that does not:\n%s", plain(m))
	}
	press(t, m, "w")
	if !strings.Contains(squeeze(plain(m)), squeeze(cause)) {
		t.Errorf("w does not show the cause in full:\n%s", plain(m))
	}
	checkSize(t, m, 80, 24)
	press(t, m, "w")
	if strings.Contains(squeeze(plain(m)), squeeze(cause)) {
		t.Errorf("w again does not cut the cause:\n%s", plain(m))
	}

	// The changes list, its summary under the list.
	m = newTest(t, 80, 24, Options{})
	r, _ := m.top().(*changesScreen).selected()
	summary := "settled after " + dur(r.SettledNS-r.StartedNS) + ", slowest hop " + dur(r.SlowestHopNS)
	if strings.Contains(plain(m), summary) {
		t.Fatalf("the summary already fits:\n%s", plain(m))
	}
	press(t, m, "w")
	if !strings.Contains(squeeze(plain(m)), squeeze(summary)) {
		t.Errorf("w does not show the change's summary in full:\n%s", plain(m))
	}
	checkSize(t, m, 80, 24)

	// Listed in the help, among the keys of every screen, its
	// description whole as w is on.
	press(t, m, "?")
	if help := plain(m); !strings.Contains(help, "wrap: the text under") || !strings.Contains(help, "(w again: cut)") {
		t.Errorf("the help does not list w:\n%s", plain(m))
	}
}

// TestChangesKeepTriggerAndSlowest: at 80 columns the changes list drops
// the objects count and who before the trigger and the slowest hop.
func TestChangesKeepTriggerAndSlowest(t *testing.T) {
	for _, w := range []int{80, 100, 120, 200} {
		m := newTest(t, w, 24, Options{})
		head := strings.Split(plain(m), "\n")[2]
		for _, col := range []string{"STARTED", "TRIGGER", "VERB", "OBJECT", "WRITES", "SETTLED", "SLOWEST"} {
			if !strings.Contains(head, col) {
				t.Errorf("%d columns: no %s in %q", w, col, head)
			}
		}
		if w >= 100 && !strings.Contains(head, "WHO") {
			t.Errorf("%d columns: no WHO in %q", w, head)
		}
		// Objects named whole at 100 columns and more.
		if w >= 100 && !strings.Contains(plain(m), "Deployment default/web") {
			t.Errorf("%d columns: an object is cut:\n%s", w, plain(m))
		}
	}
}
