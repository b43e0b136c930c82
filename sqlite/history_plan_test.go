package sqlite

import (
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestHistoryIndexUsed: history finds the object (its writes counted,
// its first and last) from the index revisions_object alone, and reads the
// last writes in its order (migration 0014): neither reads every write's
// row of a busy object.
func TestHistoryIndexUsed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for _, v := range []*Store{s, s.InCluster("c")} {
		q, args := v.objectsSQL(cpid.ObjectQuery{ResourceMatch: cpid.ResourceMatch{Resources: []string{"nodes"}}, Name: "n"})
		if p := queryPlan(t, s, q, args...); !strings.Contains(p, "SEARCH r USING COVERING INDEX revisions_object (resource=? AND namespace=? AND name=?)") {
			t.Errorf("Objects (cluster %q), plan: %s\nwant the covering index revisions_object", v.cluster, p)
		}
	}
}
