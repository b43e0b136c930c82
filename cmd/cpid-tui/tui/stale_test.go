package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// hold sends keys to the model without running what they start: the
// queries they ask for are returned, to be run (their results delivered)
// when the test says, as a slow database would.
func hold(t *testing.T, m *Model, names ...string) []tea.Cmd {
	t.Helper()
	var cmds []tea.Cmd
	for _, n := range names {
		_, cmd := m.Update(keyMsg(n))
		cmds = append(cmds, cmd)
	}
	return cmds
}

// TestKeyWhileFilteringActsOnTheNewList: enter pressed while the list
// still says "filtering…" opens nothing of the list before; it opens the
// first row of the filtered list once that arrives.
func TestKeyWhileFilteringActsOnTheNewList(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	press(t, m, "/")
	loads := hold(t, m, strings.Split("kwok-node", "")...)
	press(t, m, "enter") // keeps the filter
	if !strings.Contains(plain(m), "filtering…") {
		t.Fatalf("the list does not say it is filtering:\n%s", plain(m))
	}
	press(t, m, "enter") // open, with the list of the previous filter on screen
	if _, ok := m.top().(*changesScreen); !ok {
		t.Fatalf("enter opened %q, a row of the list before the filter", m.top().crumb())
	}
	// The queries arrive in order: all but the last answer filters typed
	// since, and are dropped.
	for _, l := range loads {
		run(t, m, l)
	}
	c, ok := m.top().(*changeScreen)
	if !ok {
		t.Fatalf("enter did nothing once the filtered list arrived:\n%s", plain(m))
	}
	if got := c.crumb(); !strings.Contains(got, "Node kwok-node-0") {
		t.Errorf("enter opened %q, want the filtered list's first row, create Node kwok-node-0", got)
	}
}

// TestKeysWhileSortingAndRefiltering: keys pressed while a sort loads act
// on the sorted list (j moves on it, enter opens its row), and keys
// queued for a filter are dropped when the filter changes again (esc):
// they never act on a list they were not meant for.
func TestKeysWhileSortingAndRefiltering(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	sort := hold(t, m, "s", "j", "enter")
	if _, ok := m.top().(*changesScreen); !ok {
		t.Fatalf("enter opened %q before the sorted list arrived", m.top().crumb())
	}
	run(t, m, sort[0])
	c, ok := m.top().(*changeScreen)
	if !ok {
		t.Fatalf("j, enter did nothing once the sorted list arrived:\n%s", plain(m))
	}
	// Longest to settle first: the rolling update (267ms), then the
	// Deployment's create (179ms).
	if got := c.crumb(); got != "create Deployment default/web" {
		t.Errorf("j, enter opened %q, want the second longest to settle, create Deployment default/web", got)
	}

	m = newTest(t, 100, 30, Options{})
	press(t, m, "/")
	loads := hold(t, m, strings.Split("kwok-node", "")...)
	press(t, m, "enter")
	loads = append(loads, hold(t, m, "enter", "esc")...) // open, then clear the filter
	for _, l := range loads {
		run(t, m, l)
	}
	if _, ok := m.top().(*changesScreen); !ok {
		t.Errorf("enter, queued for a filter cleared since, opened %q", m.top().crumb())
	}
}
