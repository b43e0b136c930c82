package sqlite

import (
	"fmt"
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

// TestObjectsInClusters: a name that holds objects in several clusters
// (and namespaces) is counted per object, as a GROUP BY of every column
// counts it, in every view.
func TestObjectsInClusters(t *testing.T) {
	t.Parallel()
	s := ingestClusters(t, []string{"basic", "conflicts", "jobs"}, 0)
	for _, v := range []*Store{s, s.InCluster("conflicts")} {
		for _, q := range []cpid.ObjectQuery{
			{ResourceMatch: cpid.ResourceMatch{Resources: []string{"deployments"}, Group: "apps"}, Name: "web", AllNamespaces: true},
			{ResourceMatch: cpid.ResourceMatch{Resources: []string{"deployments"}, AnyGroup: true}, Name: "web", Namespace: "default"},
			{ResourceMatch: cpid.ResourceMatch{Resources: []string{"nodes"}, AnyGroup: true}, Name: "kwok-node-0", AllNamespaces: true},
		} {
			ms, err := v.Objects(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, fmt.Sprintf("%s %s %s %s %s %d %d %d", m.Cluster, m.Group, m.Resource, m.Namespace, m.Name, m.Writes, m.FirstNS, m.LastNS))
			}
			want, err := column(t.Context(), s.r, `SELECT cluster || ' ' || api_group || ' ' || resource || ' ' || namespace || ' ' || name || ' ' ||
				count(*) || ' ' || min(stage_ns) || ' ' || max(stage_ns) FROM revisions
				WHERE resource = ?1 AND name = ?2 AND (?3 = '' OR namespace = ?3) AND (?4 = '' OR cluster = ?4)
				GROUP BY cluster, api_group, resource, namespace, name ORDER BY cluster, api_group, resource, namespace, name`,
				q.Resources[0], q.Name, q.Namespace, v.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if v.cluster == "" && len(want) < 2 {
				t.Fatalf("%s/%s: %d objects, want one in several clusters", q.Resources[0], q.Name, len(want))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("view %q, %+v:\n got %q\nwant %q", v.cluster, q, got, want)
			}
		}
	}
}
