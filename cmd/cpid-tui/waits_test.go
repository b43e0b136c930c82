package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestWaitsFixture: on a recording whose script made controllers wait on
// purpose (minReadySeconds, progressDeadlineSeconds running out, a Pod
// Unschedulable until a node came), every wait of the ground truth is
// found on a write of its writer to its object in its action's change,
// explained as the truth says; the user actions keep precision and recall
// 1.00.
func TestWaitsFixture(t *testing.T) {
	checkAttribution(t, "waits", 1, 1)
	dir := "../../fixtures/waits"
	var tr struct {
		Actions []struct {
			ID      string
			StartNS int64 `json:"start_ns"`
			EndNS   int64 `json:"command_end_ns"`
		}
		Waits []struct{ Explain, Resource, NamePrefix, Writer, Action, Why string }
	}
	readTruthInto(t, dir, &tr)
	if len(tr.Waits) < 4 {
		t.Fatalf("%d waits in the ground truth", len(tr.Waits))
	}
	window := map[string][2]int64{}
	for _, a := range tr.Actions {
		window[a.ID] = [2]int64{a.StartNS, a.EndNS}
	}
	db := openDB(t, reconstructedFixture(t, filepath.Join(dir, "bundle")))
	for _, w := range tr.Waits {
		var writes, explained int
		var got []string
		rows, err := db.Query(`SELECT r.explain, r.hop_ns FROM revisions r JOIN changes c ON c.id = r.change_id
			WHERE c.trigger = 'user' AND c.started_ns BETWEEN ? AND ? AND r.writer = ? AND r.resource = ?
			  AND r.name LIKE ? AND r.attempt = 0 AND r.cause_event_id IS NOT NULL`,
			window[w.Action][0], window[w.Action][1], w.Writer, w.Resource, w.NamePrefix+"%")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var explain string
			var hop int64
			rows.Scan(&explain, &hop)
			writes++
			if explain == w.Explain {
				explained++
			}
			got = append(got, explain)
		}
		rows.Close()
		t.Logf("%s: %d of %d writes of %s to %s/%s* explained %s (%s)", w.Action, explained, writes, w.Writer, w.Resource,
			w.NamePrefix, w.Explain, strings.Join(got, ", "))
		if explained == 0 {
			t.Errorf("%s: no write of %s to %s/%s* explained %s (%s): %s", w.Action, w.Writer, w.Resource, w.NamePrefix,
				w.Explain, w.Why, strings.Join(got, ", "))
		}
	}
}
