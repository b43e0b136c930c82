package cpid_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/postgres"
	"github.com/cpid-dev/cpid/postgres/pgtest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/sqlite"
)

// The contract suite: each engine stores the same rows from the same
// input. Every real fixture goes through ingest and reconstruct into a
// SQLite file and a PostgreSQL database, and every table is compared row by
// row, through the same SELECT (the columns of docs/SCHEMA.md).

func TestMain(m *testing.M) { pgtest.Main(m) }

// engine is one engine under test: the interfaces cmd wires, and a way to
// run a plain SELECT for the comparison.
type engine struct {
	name  string
	w     cpid.RecordWriter
	d     cpid.DerivedStore
	r     cpid.ChangeReader
	rows  func(q string) ([][]string, error)
	close func()
}

func openEngines(t *testing.T, cluster string) []engine {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cpid.db")
	ls, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	sdb, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.NewDatabase(t)
	ps, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	pconn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	lsc, psc := ls.InCluster(cluster), ps.InCluster(cluster)
	es := []engine{
		{name: "sqlite", w: lsc, d: lsc, r: lsc, rows: func(q string) ([][]string, error) { return sqliteRows(sdb, q) },
			close: func() { sdb.Close(); ls.Close() }},
		{name: "postgres", w: psc, d: psc, r: psc, rows: func(q string) ([][]string, error) { return pgRows(pconn, q) },
			close: func() { pconn.Close(ctx); ps.Close() }},
	}
	t.Cleanup(func() {
		for _, e := range es {
			e.close()
		}
	})
	return es
}

func sqliteRows(db *sql.DB, q string) ([][]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, cells(vals))
	}
	return out, rows.Err()
}

func pgRows(conn *pgx.Conn, q string) ([][]string, error) {
	rows, err := conn.Query(context.Background(), q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, cells(vals))
	}
	return out, rows.Err()
}

// cells prints values the same way whatever driver read them.
func cells(vals []any) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case nil:
			out[i] = "NULL"
		case []byte:
			out[i] = fmt.Sprintf("%x", v)
		case int32:
			out[i] = fmt.Sprint(int64(v))
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return out
}

// recordTables are the tables ingest fills, as compared: every column, in
// the order of docs/SCHEMA.md, the ids included (both engines number rows
// in the order they are stored).
var recordTables = []string{
	`SELECT id, path, cluster FROM files ORDER BY id`,
	`SELECT id, hash, audit_id, stage, level, verb, request_uri, api_group, api_version, resource, subresource, namespace,
		name, uid, resource_version, username, user_agent, source_ips, code, received_ns, stage_ns, cpid, cpid_ancestors,
		owner_refs, annotations, redacted, file_id, line, cluster FROM audit_events ORDER BY id`,
	`SELECT event_id, request_object, response_object, response_status FROM audit_bodies ORDER BY event_id`,
	`SELECT id, hash, ts_ns, level, component, msg, cpid, fields, file_id, line, cluster FROM log_records ORDER BY id`,
}

// derivedTables are the tables reconstruct fills.
var derivedTables = []string{
	`SELECT event_id, api_group, resource, namespace, name, seq, order_by, attempt, stage_ns, writer, writer_is_user,
		cpid, cpid_origin, cause_event_id, cause_rule, change_id, hop_ns, cluster, explain, explain_detail, confidence
		FROM revisions ORDER BY event_id`,
	`SELECT cpid, ts_ns, service, origin, event_id, cluster FROM mergelogs ORDER BY cluster, cpid, origin`,
	`SELECT m.cpid, m.origin, s.pos, s.source_cpid FROM mergelog_sources s JOIN mergelogs m ON m.id = s.mergelog_id
		ORDER BY 1, 2, 3`,
	`SELECT id, event_id, started_ns, settled_ns, "user", verb, api_group, resource, subresource, namespace, name,
		writes, objects, slowest_hop_ns, slowest_hop_event_id, cluster, trigger, trigger_detail FROM changes ORDER BY id`,
	`SELECT kind, event_id, api_group, resource, namespace, name, detail, cluster FROM anomalies ORDER BY kind, event_id`,
	`SELECT span_id, parent_id, cpid, service, name, start_ns, end_ns, attrs, log_id, cluster FROM controller_spans ORDER BY span_id`,
}

func compareTables(t *testing.T, es []engine, qs []string) {
	t.Helper()
	for _, q := range qs {
		want, err := es[0].rows(q)
		if err != nil {
			t.Fatalf("%s: %s: %v", es[0].name, q, err)
		}
		got, err := es[1].rows(q)
		if err != nil {
			t.Fatalf("%s: %s: %v", es[1].name, q, err)
		}
		table := strings.Fields(q[strings.Index(q, " FROM ")+6:])[0]
		if len(want) != len(got) {
			t.Errorf("%s: %d rows in %s, %d in %s", table, len(want), es[0].name, len(got), es[1].name)
			continue
		}
		for i := range want {
			if strings.Join(want[i], "|") != strings.Join(got[i], "|") {
				t.Errorf("%s row %d:\n %s: %v\n %s: %v", table, i, es[0].name, want[i], es[1].name, got[i])
				break
			}
		}
	}
}

var fixtures = []string{"basic", "instrumented", "figure-5", "paper-5-1-1", "paper-5-1-1-stock", "paper-5-1-2", "rollout-interrupted",
	"node-loss", "kcm-restart", "leader-change", "conflicts", "cronjob", "metadata-policy", "traced", "waits", "leader-change-metadata"}

// TestContractIngest: the same bundle ingested into each engine stores the
// same rows, twice over (the second ingest stores nothing).
func TestContractIngest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, fx := range fixtures {
		t.Run(fx, func(t *testing.T) {
			t.Parallel()
			es := openEngines(t, "")
			for _, e := range es {
				for round := range 2 {
					sum, err := (&ingest.Ingester{Sink: e.w}).Run(ctx, []string{filepath.Join("fixtures", fx, "bundle")})
					if err != nil {
						t.Fatalf("%s: %v", e.name, err)
					}
					if round == 1 && (sum.Written.Audits != 0 || sum.Written.Logs != 0) {
						t.Errorf("%s: a second ingest stored %+v", e.name, sum.Written)
					}
				}
			}
			compareTables(t, es, recordTables)
		})
	}
}

// TestContractReconstruct: reconstruct over each engine derives the same
// rows, in one run, in steps, and incrementally.
func TestContractReconstruct(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, fx := range fixtures {
		t.Run(fx, func(t *testing.T) {
			t.Parallel()
			es := openEngines(t, "east")
			for _, e := range es {
				if _, err := (&ingest.Ingester{Sink: e.w}).Run(ctx, []string{filepath.Join("fixtures", fx, "bundle")}); err != nil {
					t.Fatalf("%s: %v", e.name, err)
				}
				if _, err := reconstruct.Run(ctx, e.d, reconstruct.Options{Family: ingest.Family}); err != nil {
					t.Fatalf("%s: %v", e.name, err)
				}
			}
			compareTables(t, es, derivedTables)
			// In steps, from scratch: the same.
			for _, e := range es {
				if _, err := reconstruct.Run(ctx, e.d, reconstruct.Options{Full: true, StepRows: 50, Family: ingest.Family}); err != nil {
					t.Fatalf("%s steps: %v", e.name, err)
				}
			}
			compareTables(t, es, derivedTables)
		})
	}
}

// What each engine reads of the derived rows is compared with expected
// values, not with the other engine, by the conformance suite (storetest,
// run by each engine's TestConformance): a bug both engines share fails
// there.

// TestContractRunLock: a reconstruct run's lock keeps a second run of the
// same cluster waiting until the first releases it, and a waiter gives up
// when its context ends.
func TestContractRunLock(t *testing.T) {
	for _, e := range openEngines(t, "east") {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			release, err := e.d.LockRun(ctx)
			if err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			if r, err := e.d.LockRun(short); err == nil {
				r()
				t.Fatal("a second run of the cluster took the lock while the first held it")
			}
			got := make(chan error, 1)
			go func() {
				r, err := e.d.LockRun(ctx)
				if err == nil {
					r()
				}
				got <- err
			}()
			select {
			case err := <-got:
				t.Fatalf("the waiter went on (%v) before the holder released", err)
			case <-time.After(50 * time.Millisecond):
			}
			release()
			if err := <-got; err != nil {
				t.Fatalf("the waiter after release: %v", err)
			}
		})
	}
}

// TestContractObjectNames: both engines list the same resources and the
// same objects by the start of their name, as completion asks for them.
func TestContractObjectNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	es := openEngines(t, "")
	var res [2][]any
	for i, e := range es {
		if _, err := (&ingest.Ingester{Sink: e.w}).Run(ctx, []string{filepath.Join("fixtures", "basic", "bundle")}); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if _, err := reconstruct.Run(ctx, e.d, reconstruct.Options{Family: ingest.Family}); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		l := e.r.(cpid.ObjectLister)
		rs, err := l.WrittenResources(ctx)
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		res[i] = append(res[i], rs)
		for _, q := range []cpid.ObjectNameQuery{
			{ResourceMatch: cpid.ResourceMatch{Resources: []string{"deployments"}, Group: "apps"}, AllNamespaces: true},
			{ResourceMatch: cpid.ResourceMatch{Resources: []string{"pods", "x"}, AnyGroup: true}, Prefix: "web-", Namespace: "default"},
			{ResourceMatch: cpid.ResourceMatch{Resources: []string{"pods"}}, Prefix: "web-", Namespace: "default", Limit: 2},
			{ResourceMatch: cpid.ResourceMatch{Resources: []string{"pods"}}, Prefix: "web-", Namespace: "nope"},
			{ResourceMatch: cpid.ResourceMatch{Resources: []string{"nodes"}}, AllNamespaces: true},
		} {
			ks, err := l.ObjectNames(ctx, q)
			if err != nil {
				t.Fatalf("%s: %+v: %v", e.name, q, err)
			}
			res[i] = append(res[i], ks)
		}
	}
	if diff := cmp.Diff(res[0], res[1], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("differs (-sqlite +postgres):\n%s", diff)
	}
	got := res[0]
	if rs := got[0].([]string); !slices.Contains(rs, "deployments") || !slices.Contains(rs, "pods") || !slices.IsSorted(rs) {
		t.Errorf("resources: %v", rs)
	}
	if ks := got[1].([]cpid.ObjectKey); len(ks) != 1 || ks[0] != (cpid.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "default", Name: "web"}) {
		t.Errorf("deployments: %v", ks)
	}
	if ks := got[2].([]cpid.ObjectKey); len(ks) < 3 || !slices.IsSortedFunc(ks, func(a, b cpid.ObjectKey) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("pods web-...: %v", ks)
	}
	if ks := got[3].([]cpid.ObjectKey); len(ks) != 2 {
		t.Errorf("limit 2: %v", ks)
	}
	if ks := got[4].([]cpid.ObjectKey); len(ks) != 0 {
		t.Errorf("namespace nope: %v", ks)
	}
	if ks := got[5].([]cpid.ObjectKey); len(ks) != 1 || ks[0].Name != "kwok-node-0" || ks[0].Namespace != "" {
		t.Errorf("nodes: %v", ks)
	}
}
