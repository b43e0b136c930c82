package sqlite

import (
	"strings"
	"testing"
)

// TestRedoIndexUsed: an incremental run finds the mergelogs it redoes (those
// of the writes received after the cutoff) through mergelogs_event
// (migration 0017), not by reading every mergelog of the cluster, which
// grows with the database where the run's work does not.
func TestRedoIndexUsed(t *testing.T) {
	s := openTest(t)
	n := 0
	for _, q := range provisionalSQL {
		if !strings.Contains(q, "FROM mergelogs") {
			continue
		}
		n++
		p := queryPlan(t, s, q, 1, "c")
		if !strings.Contains(p, "mergelogs USING INDEX mergelogs_event (event_id=?)") {
			t.Errorf("%s\nplan: %s, want the mergelogs found by their events (mergelogs_event)", q, p)
		}
	}
	if n != 2 {
		t.Fatalf("%d statements of provisionalSQL read mergelogs, want 2 (the sources', the mergelogs')", n)
	}
}
