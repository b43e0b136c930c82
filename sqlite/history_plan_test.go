package sqlite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestHistoryIndexUsed: history finds the object it names (its writes
// counted, its first and last) from the indexes of its five columns alone
// (migration 0018): its groups and clusters, its first and last write by
// seeks, its writes as one range, never grouped by object with the least
// and greatest group and cluster (50 of 80 ms for a busy Node at ten
// million events); objects in every namespace are grouped in an index's
// order (no sort of the writes: a TEMP B-TREE); the last writes of an
// object come in order from revisions_object. It fails on the indexes
// before 0018, which held the order of the writes before the group and
// cluster, and none by time.
func TestHistoryIndexUsed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	const (
		byTime = "SEARCH revisions USING COVERING INDEX revisions_object_time "
		object = "(resource=? AND namespace=? AND name=? AND api_group=? AND cluster=?)"
	)
	key := []any{"nodes", "", "n", "", "c"}
	for q, want := range map[string]string{
		firstGroupSQL:   byTime + "(resource=? AND namespace=? AND name=? AND api_group>?)",
		nextGroupSQL:    byTime + "(resource=? AND namespace=? AND name=? AND api_group>?)",
		firstClusterSQL: byTime + "(resource=? AND namespace=? AND name=? AND api_group=? AND cluster>?)",
		nextClusterSQL:  byTime + "(resource=? AND namespace=? AND name=? AND api_group=? AND cluster>?)",
		objectWritesSQL: byTime + object + "; SCALAR SUBQUERY 1; " + byTime + object + "; SCALAR SUBQUERY 2; " + byTime + object,
		onlyClusterSQL: "SCAN CONSTANT ROW; SCALAR SUBQUERY 1; " + byTime + "(resource=? AND namespace=? AND name=? AND api_group=? AND cluster>?); SCALAR SUBQUERY 2; " +
			byTime + "(resource=? AND namespace=? AND name=? AND api_group=?)",
	} {
		if p := queryPlan(t, s, q, key...); p != want {
			t.Errorf("%s\nplan: %s\nwant %s", q, p, want)
		}
	}
	for _, v := range []*Store{s, s.InCluster("c")} {
		for _, g := range []cpid.ResourceMatch{{Resources: []string{"pods"}}, {Resources: []string{"deployments"}, AnyGroup: true}} {
			// Every namespace: the resource's writes, in the index's order.
			q, args := v.objectsSQL(cpid.ObjectQuery{ResourceMatch: g, Name: "n", AllNamespaces: true})
			if p := queryPlan(t, s, q, args...); p != "SEARCH r USING COVERING INDEX revisions_object_time (resource=?)" {
				t.Errorf("Objects in every namespace (cluster %q), plan: %s\nwant the covering index revisions_object_time, in its order", v.cluster, p)
			}
			// Every object of a namespace (the UI's :pods).
			q, args = v.objectsSQL(cpid.ObjectQuery{ResourceMatch: g, Namespace: "ns"})
			if p := queryPlan(t, s, q, args...); p != "SEARCH r USING COVERING INDEX revisions_object_time (resource=? AND namespace=?)" {
				t.Errorf("Objects of a namespace (cluster %q), plan: %s\nwant the covering index revisions_object_time, in its order", v.cluster, p)
			}
		}
	}
	// The last writes of an object in its cluster: from revisions_object
	// in their order, never all of the object's sorted.
	o := cpid.ObjectKey{Resource: "nodes", Name: "n", Cluster: "c"}
	hq, hargs := historySQL(cpid.HistoryQuery{Object: o}, "c", 10)
	rq, rargs := revisionsSQL(o, "c", 10)
	for q, args := range map[string][]any{hq: hargs, rq: rargs} {
		if p := queryPlan(t, s, q, args...); !strings.Contains(p, "SEARCH r USING INDEX revisions_object "+object) ||
			strings.Count(p, "TEMP B-TREE") != 1 || !strings.HasSuffix(p, "USE TEMP B-TREE FOR ORDER BY") {
			t.Errorf("%s\nplan: %s\nwant the object's writes from revisions_object in order (the last ones sorted again)", q, p)
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
