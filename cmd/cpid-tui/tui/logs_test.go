package tui

import (
	"path"
	"regexp"
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
