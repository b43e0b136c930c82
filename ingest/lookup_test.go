package ingest

import "testing"

// TestLookupFolds: lookup finds the field encoding/json fills, by exact
// name first, then by Unicode case folding, where a key may be longer
// than its field's name (the Kelvin sign and the long s are k and s).
func TestLookupFolds(t *testing.T) {
	for key, want := range map[string]int{
		"kind": 0, "KIND": 0, "apiversion": 1, "\u212aind": 0, "\u017ftage": 4, "STAGE": 4,
		"kinds": -1, "kin": -1, "\u212ain": -1, "ki\u212ad": -1, "": -1, "requestreceivedtimestamp": 16,
	} {
		if got := lookup(eventFields, []byte(key)); got != want {
			t.Errorf("lookup(%q) = %d, want %d", key, got, want)
		}
	}
}
