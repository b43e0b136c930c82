package main

import (
	"encoding/json"
	"fmt"
	"github.com/cpid-dev/cpid/present"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
)

// TestBrowseTmuxCommands runs the real binary in tmux on the real fixture
// and does what issue 16 says could not be done: filter the list by the
// name of a Pod a change created and by an HTTP code, type :history
// deploy/web, and jump to the slowest hop with S, at 100x30 and at 80x24.
func TestBrowseTmuxCommands(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil && os.Getenv("CI") == "" {
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "cpid.db")
	for _, args := range [][]string{{"ingest", "--db", db, basicBundle}, {"reconstruct", "--db", db}} {
		if code, _, stderr := runCmd(t, nil, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	// What to expect, from the command line: the rolling update, a Pod
	// it created, and its slowest hop.
	rollout := changeID(t, db)
	var pod string
	code, out, stderr := runCmd(t, nil, "query", "timeline", rollout, "--db", db, "--output", "json")
	var tl []cpid.TimelineEntry
	if code != 0 || json.Unmarshal([]byte(out), &tl) != nil {
		t.Fatalf("query timeline: exit %d: %s", code, stderr)
	}
	var slowest int64
	slowestAt := 0 // 1-based row of the first write that waited longest
	for i, e := range tl {
		if e.Resource == "pods" && e.Verb == "create" && pod == "" {
			pod = e.Name
		}
		if e.CauseID != 0 && (slowestAt == 0 || e.HopNS > slowest) {
			slowest, slowestAt = e.HopNS, i+1
		}
	}
	rolloutAt := ""
	code, out, _ = runCmd(t, nil, "query", "changes", "--db", db, "--output", "json")
	var cs []cpid.ChangeRow
	if code != 0 || json.Unmarshal([]byte(out), &cs) != nil {
		t.Fatal("query changes")
	}
	for _, c := range cs {
		if c.ID == rollout {
			rolloutAt = time.Unix(0, c.StartedNS).UTC().Format("15:04:05.000")
		}
	}

	s := newTmux(t, "commands", 100, 30, fmt.Sprintf("TERM=xterm-256color %s browse --db %s --refresh 0", bin, db))
	s.waitText("7 changes", "STARTED")

	// The list, filtered by a Pod's name: the change that created it.
	s.keys("/")
	s.text(pod)
	s.keys("Enter")
	sc := s.waitText(fmt.Sprintf("matching %q", pod))
	if !strings.Contains(sc, rolloutAt) {
		t.Errorf("the filter %s does not list the rolling update of %s:\n%s", pod, rolloutAt, sc)
	}
	s.keys("Escape")
	s.waitText("7 changes")
	// By an HTTP code: the changes with a write that got it.
	s.keys("/")
	s.text("409")
	s.keys("Enter")
	sc = s.waitText(`matching "409"`)
	if !strings.Contains(sc, rolloutAt) {
		t.Errorf("the filter 409 does not list the rolling update (its deployment controller got two):\n%s", sc)
	}
	s.keys("Escape")
	s.waitText("7 changes")

	// :history deploy/web, as kubectl names it.
	s.keys(":")
	s.text("history deploy/web")
	s.waitText(":history deploy/web")
	s.keys("Enter")
	s.waitText("history of Deployment default/web", "across changes", "patch/scale")
	s.keys("Escape")
	s.waitText("7 changes")

	// S: the rolling update opens on the timeline at its slowest hop.
	s.keys("g")
	for _, c := range cs {
		if c.ID == rollout {
			break
		}
		s.keys("j")
	}
	s.keys("S")
	sc = s.waitText("[2 Timeline]", "hop +"+present.Duration(slowest))
	lines := strings.Split(sc, "\n")
	cursor := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "▶") {
			cursor = l
		}
	}
	if !strings.Contains(cursor, "hop +"+present.Duration(slowest)) {
		t.Errorf("the cursor is not on the slowest hop (%s): %q\n%s", present.Duration(slowest), cursor, sc)
	}
	// At 80x24 it stays there, the names elided in their middle.
	s.run("resize-window", "-x", "80", "-y", "24")
	sc = s.wait("an 80x24 layout", func(sc string) bool {
		return len(strings.Split(strings.TrimRight(sc, "\n"), "\n")) == 24 && strings.Contains(sc, fmt.Sprintf("%d/%d", slowestAt, len(tl)))
	})
	if cutAtEnd(sc) {
		t.Errorf("a name cut at its end at 80x24:\n%s", sc)
	}
	s.keys("q")
	if st := s.exited(); st != "0" {
		t.Errorf("exit status %s after q", st)
	}
}

// cutAtEnd reports a word cut at its end in the middle of a line ("deploy…
// "), which a name elided in its middle never is.
func cutAtEnd(screen string) bool {
	for _, l := range strings.Split(screen, "\n") {
		for i := strings.Index(l, "… "); i > 0; i = strings.Index(l, "… ") {
			if l[i-1] != ' ' {
				return true
			}
			l = l[i+len("… "):]
		}
	}
	return false
}
