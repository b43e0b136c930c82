package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// screens are the views of the fixture's rolling update (and the lists
// around it), each reached by keys from the changes list; text is typed
// after the keys.
var screens = []struct {
	name string
	keys []string
	text string
}{
	{name: "changes"},
	{name: "changes filtered to one", keys: []string{"/"}, text: "kwok-node"},
	{name: "dag", keys: []string{"j", "enter"}},
	{name: "timeline", keys: []string{"j", "enter", "2", "j", "j", "j"}},
	{name: "timeline by object", keys: []string{"j", "enter", "2", "v", "j", "j", "j"}},
	{name: "logs", keys: []string{"j", "enter", "2", "j", "j", "j", "3"}},
	{name: "revisions", keys: []string{"j", "enter", "4"}},
	{name: "history", keys: []string{"j", "enter", "2", "j", "H"}},
	{name: "help", keys: []string{"j", "enter", "2", "?"}},
}

// cutAtEnd finds a word cut at its end in the middle of a line: what a
// name cut from the end looks like ("deployment-contro… "). A name elided
// in the middle keeps its end ("deploym…controller").
var cutAtEnd = regexp.MustCompile(`[^\s…]… `)

// TestNamesNeverCutFromTheEnd: at 80x24 (and 160x48), every name on every
// screen is whole or elided in the middle, and the timeline's lanes and
// list keep the end of each writer and object.
func TestNamesNeverCutFromTheEnd(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		for _, sc := range screens {
			t.Run(fmt.Sprintf("%s %dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				m := newTest(t, size[0], size[1], Options{})
				press(t, m, sc.keys...)
				if sc.text != "" {
					typeText(t, m, sc.text)
					press(t, m, "enter") // keeps the filter
				}
				lines := strings.Split(plain(m), "\n")
				for i, l := range lines[:len(lines)-1] { // the last line: key hints
					if cutAtEnd.MatchString(l) {
						t.Errorf("line %d cuts a name at its end: %q\n%s", i+1, l, plain(m))
					}
				}
			})
		}
	}
	m := newTest(t, 80, 24, Options{})
	c := openChange(t, m, rollout)
	press(t, m, "2")
	tl := c.tl
	for range len(tl.ents) {
		e, _ := tl.cursorEntry()
		screen := plain(m)
		for _, name := range []string{e.Writer, object(e.Kind, e.Namespace, e.Name)} {
			if end := name[max(0, len(name)-4):]; !strings.Contains(screen, end) {
				t.Fatalf("the timeline at write %d does not show the end of %q:\n%s", tl.cursor, name, screen)
			}
		}
		press(t, m, "j")
	}
}

// number is a duration as the views write it.
var number = regexp.MustCompile(`(?:^|[^\w.:])(\d+(?:\.\d+)?)(ns|µs|ms|s)\b`)

// pluralAfterOne finds "1 writes".
var pluralAfterOne = regexp.MustCompile(`\b1 (changes|writes|objects|lanes|CPIDs|lines|anomalies|revisions|steps|failed writes)\b`)

// TestOneUnitStyle: every duration on every screen has three significant
// digits (Duration), and one of anything is singular.
func TestOneUnitStyle(t *testing.T) {
	for _, sc := range screens {
		t.Run(sc.name, func(t *testing.T) {
			m := newTest(t, 160, 48, Options{})
			press(t, m, sc.keys...)
			typeText(t, m, sc.text)
			s := plain(m)
			for _, n := range number.FindAllStringSubmatch(s, -1) {
				digits := strings.TrimLeft(strings.ReplaceAll(n[1], ".", ""), "0")
				if n[2] != "ns" && len(digits) != 3 && !(n[1] == "0" && n[2] == "s") {
					t.Errorf("duration %s%s has %d significant digits, want 3", n[1], n[2], len(digits))
				}
			}
			if p := pluralAfterOne.FindString(s); p != "" {
				t.Errorf("%q:\n%s", p, s)
			}
		})
	}
}

// TestCountsAgree: the rolling update's writes are counted the same way
// on the list, the change's header, the DAG and the timeline: its
// successful writes, and its failed ones beside them; an object's
// revisions and history count theirs the same way.
func TestCountsAgree(t *testing.T) {
	m := newTest(t, 160, 48, Options{})
	list := m.top().(*changesScreen)
	press(t, m, "j")
	row := list.rows[rollout]
	c := openChange(t, m, rollout)
	failed := 0
	for _, e := range c.tl.all {
		if e.Attempt {
			failed++
		}
	}
	if failed == 0 || len(c.tl.all) != row.Writes+failed {
		t.Fatalf("the timeline has %d entries, the change %d writes and %d failed", len(c.tl.all), row.Writes, failed)
	}
	want := fmt.Sprintf("%d writes, %d failed", row.Writes, failed)
	dagWrites, dagFailed := 0, 0
	for _, n := range c.dag.g.Nodes {
		for _, o := range n.Objects {
			dagWrites, dagFailed = dagWrites+o.Writes, dagFailed+o.Attempts
		}
	}
	if dagWrites != row.Writes || dagFailed != failed {
		t.Errorf("the DAG's objects add up to %d writes and %d failed, the change has %d and %d", dagWrites, dagFailed, row.Writes, failed)
	}
	for _, tab := range []string{"1", "2"} {
		press(t, m, tab)
		if s := plain(m); !strings.Contains(s, want) {
			t.Errorf("pane %s does not say %q:\n%s", tab, want, s)
		}
	}
	press(t, m, "4")
	r := c.revs
	ok, bad := 0, 0
	for _, rv := range r.revs {
		if rv.Attempt {
			bad++
		} else {
			ok++
		}
	}
	if bad == 0 {
		t.Fatal("the Deployment has no failed write: a bad test")
	}
	if s := plain(m); !strings.Contains(s, object(r.kind, r.ref.Namespace, r.ref.Name)+": "+writes(ok, bad)) {
		t.Errorf("the revisions do not say %q:\n%s", writes(ok, bad), s)
	}
	press(t, m, "H")
	h := m.top().(*historyScreen)
	if s := plain(m); !strings.Contains(s, object(h.kind, h.ref.Namespace, h.ref.Name)+": "+writes(ok, bad)) {
		t.Errorf("the history does not say %q:\n%s", writes(ok, bad), s)
	}
}

// TestFiltersMatchNamesAndCodes: / finds a change by the name of a Pod it
// created, by a writer, and by an HTTP code of one of its writes; the
// timeline's filter keeps the writes that failed with a code.
func TestFiltersMatchNamesAndCodes(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	list := m.top().(*changesScreen)
	rolloutID := list.rows[rollout].ID
	c := openChange(t, m, rollout)
	var pod string
	codes := map[int]int{}
	for _, e := range c.tl.all {
		if e.Resource == "pods" && e.Verb == "create" && pod == "" {
			pod = e.Name
		}
		if e.Attempt {
			codes[e.Code]++
		}
	}
	press(t, m, "esc")
	for _, f := range []string{pod, "409", "kube-scheduler", "update/status"} {
		press(t, m, "/")
		typeText(t, m, f)
		found := false
		for _, r := range list.rows {
			found = found || r.ID == rolloutID
		}
		if !found || list.total == 0 {
			t.Errorf("filter %q: %d changes, not the rolling update", f, list.total)
		}
		press(t, m, "esc", "esc")
	}
	press(t, m, "/")
	typeText(t, m, "no-such-pod-anywhere")
	if list.total != 0 {
		t.Errorf("filter no-such-pod-anywhere: %d changes", list.total)
	}
	press(t, m, "esc", "esc")

	c = openChange(t, m, rollout)
	press(t, m, "2", "/")
	typeText(t, m, "409")
	if len(c.tl.ents) == 0 {
		t.Fatal("the timeline's filter 409 keeps nothing")
	}
	n409 := 0
	for _, e := range c.tl.ents {
		if e.Code == 409 {
			n409++
		}
	}
	if n409 != codes[409] {
		t.Errorf("filter 409 keeps %d writes that failed 409 of %d", n409, codes[409])
	}
}
