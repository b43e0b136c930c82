package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/sqlite"
)

// TestHistoryScreen: H on a timeline write opens its object's history,
// every write of the object across changes (as many as its revisions), the
// cursor on that write; enter on a write of another change opens that
// change at that write; esc comes back.
func TestHistoryScreen(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	c := openChange(t, m, rollout)
	press(t, m, "2")
	// The first write of the rolling update to the old ReplicaSet (one it
	// did not create), which the earlier changes wrote too.
	created := map[string]bool{}
	for i, e := range c.tl.ents {
		if e.Resource == "replicasets" && e.Verb == "create" {
			created[e.Name] = true
		}
		if e.Resource == "replicasets" && !created[e.Name] {
			c.tl.cursor = i
			break
		}
	}
	at, _ := c.tl.cursorEntry()
	if at.Resource != "replicasets" {
		t.Fatal("no ReplicaSet write in the rolling update")
	}
	press(t, m, "H")
	h, ok := m.top().(*historyScreen)
	if !ok || !h.loaded || h.err != nil {
		t.Fatalf("H opened %T %+v", m.top(), m.top())
	}
	path, _ := fixtureDB()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	revs, _, err := st.ObjectRevisions(context.Background(), cpid.ObjectKey{Group: at.APIGroup, Resource: at.Resource, Namespace: at.Namespace, Name: at.Name}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.rows) != len(revs) || len(revs) < 2 {
		t.Fatalf("history of %s: %d writes, the object has %d revisions", at.Name, len(h.rows), len(revs))
	}
	byEvent := map[int64]string{}
	for _, r := range revs {
		byEvent[r.EventID] = r.ChangeID
	}
	changes := map[string]bool{}
	for _, w := range h.rows {
		if ch, ok := byEvent[w.EventID]; !ok || ch != w.Change {
			t.Errorf("write %d: change %q, its revision says %q (listed %v)", w.EventID, w.Change, ch, ok)
		}
		changes[w.Change] = true
	}
	if len(changes) < 2 {
		t.Fatalf("the ReplicaSet was written by %d changes: a bad test", len(changes))
	}
	if i, _ := h.current(); h.rows[i].EventID != at.EventID {
		t.Errorf("cursor on write %d, want %d", h.rows[i].EventID, at.EventID)
	}
	if s := plain(m); !strings.Contains(s, "this change") || !strings.Contains(s, fmt.Sprintf("ReplicaSet default/%s: %d writes across changes", at.Name, len(revs))) {
		t.Errorf("screen:\n%s", s)
	}
	// A write of another change: enter opens it there.
	other := -1
	for i, w := range h.rows {
		if w.Change != c.id && w.Change != "" {
			other = i
			break
		}
	}
	h.cursor = other
	want := h.rows[other]
	press(t, m, "enter")
	c2, ok := m.top().(*changeScreen)
	if !ok || !c2.loaded || c2.id != want.Change || c2.tab != paneTimeline {
		t.Fatalf("enter opened %T %+v", m.top(), m.top())
	}
	if e, _ := c2.tl.cursorEntry(); e.EventID != want.EventID {
		t.Errorf("the change opened at write %d, want %d", e.EventID, want.EventID)
	}
	press(t, m, "esc")
	if m.top() != h {
		t.Errorf("esc: %T on top, want the history", m.top())
	}
	// The filter keeps the writes whose writer, verb, change... match.
	press(t, m, "/")
	typeText(t, m, "replicaset-controller")
	press(t, m, "enter")
	for _, w := range h.rows {
		if w.Writer != "replicaset-controller" {
			t.Errorf("filter kept a write by %s", w.Writer)
		}
	}
	if len(h.rows) == 0 {
		t.Error("the filter kept nothing")
	}
}
