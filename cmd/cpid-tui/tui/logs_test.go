package tui

import (
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid"
)

// instrumentedRollout is the row of the instrumented fixture's rolling
// update (an update of the Deployment's template) in the newest-first list.
const instrumentedRollout = 1

// TestLogsInstrumented: the Logs pane of a change of instrumented
// controllers shows every component's lines of the change's time, not
// only those that carry its CPIDs: the instrumented controllers' own
// lines, the scheduler's, kwok's (kube-controller-manager, running the
// uninstrumented controllers, logged nothing then); in time order, each at its offset from the
// change's start, never a negative one.
func TestLogsInstrumented(t *testing.T) {
	m := newTestOf(t, "instrumented", 100, 30, Options{})
	c := openChange(t, m, instrumentedRollout)
	if c.row.Verb != "update" || c.row.Resource != "deployments" {
		t.Fatalf("opened %+v, want the rolling update", c.row)
	}
	press(t, m, "3")
	l := c.logs
	if !l.loaded || l.err != nil || !l.set.Exact {
		t.Fatalf("logs: loaded %v, err %v, exact %v", l.loaded, l.err, l.set.Exact)
	}
	files := map[string]int{}
	msgs := map[string]bool{}
	carrying := 0
	for i, ln := range l.set.Lines {
		files[path.Base(ln.File)]++
		msgs[ln.Msg] = true
		if ln.CPID != "" {
			carrying++
		}
		if ln.TimeNS < c.row.StartedNS || ln.TimeNS > c.row.SettledNS+cpid.LogWindowLag {
			t.Errorf("line %s:%d at %d, outside the change [%d, %d]", ln.File, ln.Line, ln.TimeNS, c.row.StartedNS, c.row.SettledNS+cpid.LogWindowLag)
		}
		if i > 0 && ln.TimeNS < l.set.Lines[i-1].TimeNS {
			t.Errorf("line %d out of time order", i)
		}
	}
	for _, f := range []string{"cpid-controllers.log", "kube-scheduler.log", "kwok.log"} {
		if files[f] == 0 {
			t.Errorf("no line from %s (lines per file: %v)", f, files)
		}
	}
	for _, msg := range []string{"Too few replicas", "Deleting pod", "Successfully bound pod to node", "cpid.mergelog"} {
		if !msgs[msg] {
			t.Errorf("no line %q", msg)
		}
	}
	if carrying == 0 || carrying == len(l.set.Lines) {
		t.Errorf("%d of %d lines carry a CPID: want the mergelogs and the lines around them", carrying, len(l.set.Lines))
	}
	// Each row's offset, after its clock time: +N, never +-N.
	offset := regexp.MustCompile(`\d\d:\d\d:\d\d\.\d{3} +(\S+)`)
	for i := range l.lines {
		row := ansi.Strip(l.row(i, 100, c.row.StartedNS))
		o := offset.FindStringSubmatch(row)
		if o == nil || !regexp.MustCompile(`^\+[0-9]`).MatchString(o[1]) {
			t.Errorf("row %d has no offset +N: %q", i, row)
		}
	}
}

// TestLogsLinkedToWrites: a controller's line is linked to the write it
// explains: the scheduler's "Successfully bound pod to node" to its binding
// of that Pod, an instrumented controller's mergelog to its write carrying
// the CPID; enter on a line shows its write on the timeline.
func TestLogsLinkedToWrites(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	c := openChange(t, m, rollout)
	press(t, m, "3")
	l := c.logs
	bound := 0
	for i, ln := range l.lines {
		id, ok := l.links[ln.ID]
		if !ok {
			continue
		}
		e := l.write(id)
		if ln.TimeNS < e.ReceivedNS-cpid.LogWindowLag || ln.TimeNS > e.NS+cpid.LogWindowLag || !mentions(ln.Msg+" "+ln.Fields, e.Namespace, e.Name) {
			t.Errorf("line %q linked to %s %s %s at %d", ln.Msg, e.Writer, e.Verb, e.Name, e.NS)
		}
		if ln.Msg != "Successfully bound pod to node" {
			continue
		}
		bound++
		if e.Writer != "kube-scheduler" || e.Subresource != "binding" || !strings.Contains(ln.Fields, `"name":"`+e.Name+`"`) {
			t.Errorf("the scheduler's line %s is linked to %s %s/%s %s", ln.Fields, e.Writer, e.Verb, e.Subresource, e.Name)
		}
		l.cursor = i
		press(t, m, "enter")
		if at, _ := c.tl.cursorEntry(); c.tab != paneTimeline || at.EventID != id {
			t.Errorf("enter on the line: pane %d, cursor on %d, want the timeline on %d", c.tab, at.EventID, id)
		}
		press(t, m, "3")
	}
	if bound != 2 {
		t.Errorf("%d of the scheduler's 2 bindings linked", bound)
	}

	m = newTestOf(t, "instrumented", 100, 30, Options{})
	c = openChange(t, m, instrumentedRollout)
	press(t, m, "3")
	merges := 0
	for _, ln := range c.logs.set.Lines {
		if ln.Msg != "cpid.mergelog" {
			continue
		}
		merges++
		id, ok := c.logs.links[ln.ID]
		if e := c.logs.write(id); !ok || e.CPID != ln.CPID {
			t.Errorf("the mergelog of %s is linked to %+v (%v)", ln.CPID, e, ok)
		}
	}
	if merges == 0 {
		t.Error("no mergelog in the instrumented rollout's logs")
	}
	if !strings.Contains(plain(m), "explain a write") {
		t.Errorf("the logs do not say how many lines explain a write:\n%s", plain(m))
	}
}
