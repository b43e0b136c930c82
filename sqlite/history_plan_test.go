package sqlite

import (
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestHistoryIndexUsed: history finds the object (its writes counted,
// its first and last) from the index revisions_object alone, in its order
// (migration 0014): it neither reads every write's row of a busy object nor
// sorts its writes to count them (a GROUP BY on the group and cluster,
// which the index holds after seq, sorted them: the plan's TEMP B-TREE).
func TestHistoryIndexUsed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for _, v := range []*Store{s, s.InCluster("c")} {
		q, args := v.objectsSQL(cpid.ObjectQuery{ResourceMatch: cpid.ResourceMatch{Resources: []string{"nodes"}}, Name: "n"})
		if p := queryPlan(t, s, q, args...); !strings.Contains(p, "SEARCH r USING COVERING INDEX revisions_object (resource=? AND namespace=? AND name=?)") ||
			strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("Objects (cluster %q), plan: %s\nwant the covering index revisions_object, in its order (no sort of the writes)", v.cluster, p)
		}
		// Every namespace: the resource's writes, in the index's order.
		q, args = v.objectsSQL(cpid.ObjectQuery{ResourceMatch: cpid.ResourceMatch{Resources: []string{"pods"}}, Name: "n", AllNamespaces: true})
		if p := queryPlan(t, s, q, args...); !strings.Contains(p, "SEARCH r USING COVERING INDEX revisions_object (resource=?)") ||
			strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("Objects in every namespace (cluster %q), plan: %s\nwant the covering index revisions_object, in its order", v.cluster, p)
		}
	}
}
