package sqlite

import (
	"strings"
	"testing"
)

// TestObjectKeysIndexUsed: a bulk run's renumbering reads its cluster's
// object keys from an index alone (no sort, no read of the table), then
// each object it renumbers or sets to time order by a seek: neither grows
// with the writes of the objects it leaves.
func TestObjectKeysIndexUsed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	p := queryPlan(t, s, objectKeysSQL, "c")
	if !strings.Contains(p, "USING COVERING INDEX revisions_object") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("%s\nplan: %s, want the keys read from revisions_object alone, in its order", objectKeysSQL, p)
	}
	for _, q := range []string{objectRevisionsSQL, timeOrderSQL} {
		p := queryPlan(t, s, q, "", "pods", "ns", "name", "c")
		if !strings.Contains(p, "USING INDEX revisions_object") ||
			!strings.Contains(p, "(resource=? AND namespace=? AND name=? AND api_group=? AND cluster=?)") {
			t.Errorf("%s\nplan: %s, want a seek of revisions_object by the whole key", q, p)
		}
	}
}
