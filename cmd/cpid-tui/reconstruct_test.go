package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cpid-dev/cpid/reconstruct"
)

// truth is a fixture's ground truth (fixtures/README.md).
type truth struct {
	Scenario string
	Actions  []struct {
		ID      string
		Request struct{ Verb, Resource, Namespace, Name string }
		StartNS int64 `json:"start_ns"`
		EndNS   int64 `json:"command_end_ns"`
		Changes []struct{ Kind, Namespace, Name, UID, Change string }
	}
}

func readTruth(t *testing.T, dir string) truth {
	var tr truth
	readTruthInto(t, dir, &tr)
	return tr
}

// readTruthInto decodes the truth.json of the fixture in dir into v.
func readTruthInto(t *testing.T, dir string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s/truth.json: %v", dir, err)
	}
}

// truthKinds maps the kinds the recorder snapshots to resources; only
// writes of these resources can be checked against the ground truth.
var truthKinds = map[string]string{"Deployment": "deployments", "ReplicaSet": "replicasets", "Pod": "pods",
	"Service": "services", "EndpointSlice": "endpointslices", "Job": "jobs", "CronJob": "cronjobs"}

// moreKinds are the kinds the recorder snapshots since it lists every
// namespace (fixtures/recorder/lib.sh, from the recordings of
// 2026-11-26T18:40Z on): a fixture recorded before has no truth for them.
var moreKinds = map[string]string{"Namespace": "namespaces", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets",
	"ControllerRevision": "controllerrevisions", "ConfigMap": "configmaps", "ServiceAccount": "serviceaccounts",
	"PodDisruptionBudget": "poddisruptionbudgets"}

// kindsOf returns the kinds the recorder snapshotted for the fixture in dir.
func kindsOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	var rec struct{ Recorded string }
	b, err := os.ReadFile(filepath.Join(dir, "recording.json"))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("%s/recording.json: %v", dir, err)
	}
	if rec.Recorded < "2026-11-26T18:40:00Z" {
		return truthKinds
	}
	all := maps.Clone(truthKinds)
	maps.Copy(all, moreKinds)
	maps.Copy(all, operatorKinds)
	return all
}

// seen is what the writes of a change did to one object; replaced: it was
// deleted and created again under its name (a StatefulSet's Pod).
type seen struct{ created, deleted, replaced bool }

// attributed adds to into, for a change, each object of a truth kind (of
// kinds) it wrote and whether it created or deleted it. A deletecollection
// of the change deletes every object of its resource and namespace that
// had been written before it and not deleted: the audit log has one event
// for the collection, none for each object.
func attributed(t *testing.T, db *sql.DB, change string, kindsOf map[string]string, into map[string]*seen) {
	t.Helper()
	rows, err := db.Query(`SELECT r.resource, r.namespace, r.name, e.verb, e.subresource, r.stage_ns FROM revisions r
		JOIN audit_events e ON e.id = r.event_id WHERE r.change_id = ? AND r.attempt = 0
		UNION ALL
		SELECT o.resource, o.namespace, o.name, 'delete', '', d.stage_ns FROM revisions d
		JOIN audit_events de ON de.id = d.event_id AND de.verb = 'deletecollection'
		JOIN revisions o ON o.resource = d.resource AND o.namespace = d.namespace AND o.api_group = d.api_group
			AND o.name <> '' AND o.attempt = 0 AND o.stage_ns < d.stage_ns
		JOIN audit_events oe ON oe.id = o.event_id
		WHERE d.change_id = ? AND d.attempt = 0 AND d.name = ''
			AND o.stage_ns = (SELECT max(x.stage_ns) FROM revisions x WHERE x.resource = o.resource AND x.namespace = o.namespace
				AND x.name = o.name AND x.attempt = 0 AND x.stage_ns < d.stage_ns)
			AND NOT (oe.verb = 'delete' AND oe.subresource = '')
		ORDER BY 6`, change, change)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	kinds := map[string]bool{}
	for _, r := range kindsOf {
		kinds[r] = true
	}
	for rows.Next() {
		var res, ns, name, verb, sub string
		var at int64
		if err := rows.Scan(&res, &ns, &name, &verb, &sub, &at); err != nil {
			t.Fatal(err)
		}
		if !kinds[res] || name == "" {
			continue
		}
		k := res + "/" + ns + "/" + name
		if into[k] == nil {
			into[k] = &seen{}
		}
		create := verb == "create" && sub == ""
		into[k].replaced = into[k].replaced || create && into[k].deleted && !into[k].created
		into[k].created = into[k].created || create
		into[k].deleted = into[k].deleted || verb == "delete"
	}
}

// change is how the ground truth names what happened to an object; "" for
// an object created and deleted within the action, which the truth's
// before/after snapshots cannot see.
func (s seen) change() string {
	switch {
	case s.replaced:
		return "replaced"
	case s.created && s.deleted:
		return ""
	case s.created:
		return "created"
	case s.deleted:
		return "deleted"
	}
	return "updated"
}

// checkAttribution reconstructs a fixture and measures, for each user action
// of its ground truth, the precision and recall of the writes attributed to
// the root change(s) found for it. The truth compares snapshots taken before
// and after each action, so an object created and deleted within an action
// (the Pods of a rollout interrupted by another) is in neither; such objects
// are left out of the attributed side too.
func checkAttribution(t *testing.T, fixture string, minPrecision, minRecall float64) {
	dir := filepath.Join("../../fixtures", fixture)
	tr := readTruth(t, dir)
	env := readEnvTruth(t, dir)
	kinds := kindsOf(t, dir)
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	if code, out, e := runCmd(t, nil, "ingest", "--db", dbPath, filepath.Join(dir, "bundle")); code != 0 {
		t.Fatalf("ingest: %d\n%s%s", code, out, e)
	}
	if code, out, e := runCmd(t, nil, "reconstruct", "--db", dbPath); code != 0 {
		t.Fatalf("reconstruct: %d\n%s%s", code, out, e)
	}
	db := openDB(t, dbPath)
	blind := blindResources(t, db)
	left := 0
	var report []string
	for _, a := range tr.Actions {
		// The root changes of the action: its one object's, or, for an
		// action of several changes at once (a "*" resource or name), every
		// user change that fits in the action's window.
		many := a.Request.Name == "*" || a.Request.Resource == "*"
		ids := queryStrings(t, db, `SELECT id FROM changes WHERE verb = ? AND (resource = ? OR ? = '*') AND namespace = ?
			AND (name = ? OR ? = '*') AND started_ns BETWEEN ? AND ? ORDER BY started_ns`,
			a.Request.Verb, a.Request.Resource, a.Request.Resource, a.Request.Namespace, a.Request.Name, a.Request.Name,
			a.StartNS, a.EndNS)
		if !many && len(ids) > 1 {
			ids = ids[:1]
		}
		if len(ids) == 1 {
			// One command, several requests (kubectl drain: the cordon,
			// then an eviction per Pod): every other root of the same user
			// started while the command ran is one of the action's.
			ids = append(ids, queryStrings(t, db, `SELECT c.id FROM changes c JOIN changes r ON r.id = ? WHERE c.trigger = 'user'
				AND c.user = r.user AND c.id <> r.id AND c.started_ns BETWEEN ? AND ? ORDER BY c.started_ns`, ids[0], a.StartNS, a.EndNS)...)
		}
		if len(ids) == 0 {
			t.Errorf("%s: no root change for %s %s %s/%s in [%d, %d]", a.ID, a.Request.Verb, a.Request.Resource,
				a.Request.Namespace, a.Request.Name, a.StartNS, a.EndNS)
			continue
		}
		// An object deleted and created again under its name (two uids
		// in the truth) was replaced. Objects of a resource the audit
		// policy logs without bodies (reconstruct warns: "none of N writes
		// carries the object") cannot be linked, nor named when created
		// with generateName: they are left out, and counted.
		want := map[string]string{}
		for _, c := range a.Changes {
			r := kinds[c.Kind]
			if r == "" {
				continue
			}
			if blind[r] {
				left++
				continue
			}
			k := r + "/" + c.Namespace + "/" + c.Name
			if w, ok := want[k]; ok && w != c.Change && (w == "deleted" || w == "created") {
				want[k] = "replaced"
				continue
			}
			want[k] = c.Change
		}
		// A user's change ends where the environment took over: objects
		// that an environment event starting within the action created
		// (a restarted controller finishing the scale-up) are that
		// event's (docs/CAUSALITY.md).
		for k := range tookOver(db, env, a.StartNS, a.EndNS) {
			delete(want, k)
		}
		writes := map[string]*seen{}
		for _, id := range ids {
			attributed(t, db, id, kinds, writes)
		}
		got := map[string]string{}
		for k, s := range writes {
			if c := s.change(); c != "" && !blind[strings.SplitN(k, "/", 2)[0]] {
				got[k] = c
			}
		}
		p, r, wrong := score(got, want)
		report = append(report, fmt.Sprintf("%-18s precision %.2f recall %.2f (%d attributed, %d expected)", a.ID, p, r, len(got), len(want)))
		if p < minPrecision || r < minRecall {
			t.Errorf("%s: precision %.2f (min %.2f), recall %.2f (min %.2f):\n  %s", a.ID, p, minPrecision, r, minRecall,
				strings.Join(wrong, "\n  "))
		}
	}
	if left > 0 {
		report = append(report, fmt.Sprintf("(%d objects of %v left out: their writes carry no object in this audit policy)", left, slices.Sorted(maps.Keys(blind))))
	}
	t.Logf("%s attribution against truth.json:\n%s", fixture, strings.Join(report, "\n"))
}

// blindResources are the resources whose objects the rules read (Pods,
// Nodes, EndpointSlices, Endpoints) of which no write in the database
// carries its object: reconstruct warns that it cannot link them.
func blindResources(t *testing.T, db *sql.DB) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	rows, err := db.Query(`SELECT resource FROM audit_events WHERE resource IN ('pods', 'nodes', 'endpointslices', 'endpoints')
		AND verb IN ('create', 'update', 'patch') AND subresource = '' AND stage = 'ResponseComplete' AND code < 400
		GROUP BY resource HAVING count(*) > 0 AND sum(level = 'RequestResponse') = 0`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r string
		rows.Scan(&r)
		out[r] = true
	}
	return out
}

// queryStrings returns the first column of the rows q selects.
func queryStrings(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// score compares what was attributed to each object with the truth:
// precision, recall, and the differences (+ attributed wrongly, - missed).
func score(got, want map[string]string) (p, r float64, wrong []string) {
	var hit int
	for k, v := range got {
		if want[k] == v {
			hit++
		} else {
			wrong = append(wrong, fmt.Sprintf("+%s %s (truth: %q)", v, k, want[k]))
		}
	}
	for k, v := range want {
		if got[k] != v {
			wrong = append(wrong, fmt.Sprintf("-%s %s", v, k))
		}
	}
	sort.Strings(wrong)
	p, r = 1, 1
	if len(got) > 0 {
		p = float64(hit) / float64(len(got))
	}
	if len(want) > 0 {
		r = float64(hit) / float64(len(want))
	}
	return p, r, wrong
}

// TestAttributionBasic: on the basic fixture, where actions run one at a
// time and nothing else writes workload objects, every expected write must
// be attributed to its action and nothing else: precision and recall 1.
func TestAttributionBasic(t *testing.T) {
	checkAttribution(t, "basic", 1, 1)
}

// derived dumps the tables reconstruct fills.
func derived(t *testing.T, dbPath string) string {
	t.Helper()
	db := openDB(t, dbPath)
	var out strings.Builder
	for _, q := range []string{
		`SELECT * FROM revisions ORDER BY event_id`,
		`SELECT m.cpid, m.ts_ns, m.service, m.origin, group_concat(s.source_cpid, ',') FROM mergelogs m
		 LEFT JOIN mergelog_sources s ON s.mergelog_id = m.id GROUP BY m.id ORDER BY m.cpid, m.origin`,
		`SELECT * FROM changes ORDER BY id`,
		`SELECT kind, event_id, detail FROM anomalies ORDER BY kind, event_id`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		n := 0
		for rows.Next() {
			rows.Scan(ptrs...)
			fmt.Fprintf(&out, "%v\n", vals)
			n++
		}
		rows.Close()
		if n == 0 && !strings.Contains(q, "anomalies") {
			t.Errorf("no rows: %s", q)
		}
	}
	return out.String()
}

// TestReconstructIncremental ingests the bundle in two parts with a
// reconstruct after each (the second only processes what is new), and
// checks that a full rebuild gives the same tables; then that ingesting the
// same bundle again, and a rotated file concatenated twice, changes nothing.
func TestReconstructIncremental(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "cpid.db")
	backups, _ := filepath.Glob(filepath.Join(basicBundle, "audit", "*.gz"))
	if len(backups) == 0 {
		t.Fatal("fixture has no rotated backups")
	}
	step := func(args ...string) string {
		t.Helper()
		code, out, e := runCmd(t, nil, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, e)
		}
		return out
	}
	step(append([]string{"ingest", "--db", dbPath}, backups...)...)
	if out := step("reconstruct", "--db", dbPath); !strings.Contains(out, "full rebuild (first run)") {
		t.Errorf("first run: %s", out)
	}
	step("ingest", "--db", dbPath, basicBundle)
	if out := step("reconstruct", "--db", dbPath); !strings.Contains(out, "incremental") {
		t.Errorf("second run is not incremental: %s", out)
	}
	incremental := derived(t, dbPath)
	step("reconstruct", "--full", "--db", dbPath)
	if full := derived(t, dbPath); full != incremental {
		t.Errorf("incremental and full reconstructions differ")
		writeDiff(t, incremental, full)
	}

	// Duplicated input: the same bundle again, and a rotated file
	// concatenated twice under another name.
	b, _ := os.ReadFile(filepath.Join(basicBundle, "audit", "audit.log"))
	twice := filepath.Join(dir, "audit-twice.log")
	os.WriteFile(twice, append(append([]byte{}, b...), b...), 0o644)
	step("ingest", "--db", dbPath, basicBundle, twice)
	if out := step("reconstruct", "--db", dbPath); !strings.Contains(out, "up to date") {
		t.Errorf("reconstruct after duplicated input: %s", out)
	}
	if again := derived(t, dbPath); again != incremental {
		t.Error("duplicated input changed the reconstruction")
	}
}

func writeDiff(t *testing.T, a, b string) {
	t.Helper()
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			t.Errorf("first difference at line %d:\n  incremental: %s\n  full:        %s", i+1, x, y)
			return
		}
	}
}

var update = flag.Bool("update", false, "rewrite golden files")

// reconstructed returns a database with the basic fixture ingested and
// reconstructed.
func reconstructed(t *testing.T) string { return reconstructedFixture(t, basicBundle) }

func reconstructedFixture(t *testing.T, bundle string) string {
	t.Helper()
	db, _ := reconstructedSaying(t, bundle)
	return db
}

// reconstructedSaying is reconstructedFixture, with what reconstruct
// wrote (stdout, then stderr) when it made the database.
func reconstructedSaying(t *testing.T, bundle string) (string, string) {
	t.Helper()
	f, err := sharedOnce(&fixtureDBs, bundle, func() (fixtureDB, error) { return makeFixtureDB(bundle) })
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	b, err := os.ReadFile(f.path)
	if err == nil {
		err = os.WriteFile(dbPath, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dbPath, f.said
}

// fixtureDBs holds, by bundle path as given, the database that
// reconstructedFixture ingested and reconstructed from it: made once in a
// run of the package's tests, each test given a copy of its own (to
// change as it likes), for 30 tests ingested the same fixtures again.
var fixtureDBs sync.Map

// fixtureDB is a database of fixtureDBs.
type fixtureDB struct {
	path string
	said string // reconstruct's stdout and stderr
}

// sharedOnce returns what build gives for key, built once in a run of the
// package's tests and kept in m (build's answer, an error too, by key).
func sharedOnce[T any](m *sync.Map, key any, build func() (T, error)) (T, error) {
	v, _ := m.LoadOrStore(key, sync.OnceValues(build))
	return v.(func() (T, error))()
}

// sharedDir is the directory of what the package's tests make once and
// share (sharedTestDir), removed when they end (TestMain).
var sharedDir struct {
	sync.Mutex
	path string
}

// sharedTestDir returns a new directory under sharedDir.
func sharedTestDir(prefix string) (string, error) {
	sharedDir.Lock()
	defer sharedDir.Unlock()
	if sharedDir.path == "" {
		d, err := os.MkdirTemp("", "cpid-tui-tests")
		if err != nil {
			return "", err
		}
		sharedDir.path = d
	}
	return os.MkdirTemp(sharedDir.path, prefix)
}

// removeSharedDir removes sharedDir (TestMain, once the tests ended).
func removeSharedDir() {
	if sharedDir.path != "" {
		os.RemoveAll(sharedDir.path)
	}
}

// makeFixtureDB ingests and reconstructs bundle into a database file of
// its own, closed (its WAL checkpointed into the file) when it returns,
// with what reconstruct wrote.
func makeFixtureDB(bundle string) (fixtureDB, error) {
	dir, err := sharedTestDir("db")
	if err != nil {
		return fixtureDB{}, err
	}
	f := fixtureDB{path: filepath.Join(dir, "cpid.db")}
	for _, args := range [][]string{{"ingest", "--db", f.path, bundle}, {"reconstruct", "--db", f.path}} {
		var o, e bytes.Buffer
		if code := run(context.Background(), &env{stdin: strings.NewReader(""), stdout: &o, stderr: &e}, args); code != 0 {
			return fixtureDB{}, fmt.Errorf("%s %s: exit %d\n%s%s", args[0], bundle, code, o.String(), e.String())
		}
		f.said = o.String() + e.String()
	}
	if _, err := os.Stat(f.path + "-wal"); err == nil {
		return fixtureDB{}, fmt.Errorf("%s: a WAL left beside the database after the commands closed it", f.path)
	}
	return f, nil
}

// spread reports whether the i-th of n items is one of about k spread
// evenly over them (every item when n <= k): the ones a test reads when
// reading all of them adds time and no case.
func spread(i, n, k int) bool { return i%((n+k-1)/k) == 0 }

// TestGoldenTimelines compares the changes and every change's timeline on
// each real fixture with testdata/FIXTURE.timelines.golden (go test -update
// rewrites them).
func TestGoldenTimelines(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"basic", "instrumented", "paper-5-1-1-stock", "paper-5-1-1", "paper-5-1-2", "figure-5", "rollout-interrupted",
		"node-loss", "kcm-restart", "leader-change", "leader-change-metadata", "leader-gap-scale", "conflicts", "cronjob", "metadata-policy",
		"traced", "waits", "namespace-delete", "daemonset", "drain-pdb", "statefulset", "jobs", "bulk-apply", "operator", "operator-instrumented"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			goldenTimelines(t, f)
		})
	}
}

func goldenTimelines(t *testing.T, fixture string) {
	dbPath := reconstructedFixture(t, filepath.Join("../../fixtures", fixture, "bundle"))
	var b strings.Builder
	code, out, e := runCmd(t, nil, "query", "changes", "--db", dbPath)
	if code != 0 {
		t.Fatalf("query changes: %d %s", code, e)
	}
	b.WriteString("$ cpid-tui query changes\n" + out)
	code, js, _ := runCmd(t, nil, "query", "changes", "--db", dbPath, "--output", "json")
	var cs []struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(js), &cs) != nil || len(cs) == 0 {
		t.Fatalf("query changes --output json: %d %s", code, js)
	}
	for i := len(cs) - 1; i >= 0; i-- {
		code, out, e := runCmd(t, nil, "query", "timeline", cs[i].ID, "--db", dbPath)
		if code != 0 {
			t.Fatalf("query timeline: %d %s", code, e)
		}
		b.WriteString("\n$ cpid-tui query timeline " + cs[i].ID + "\n" + out)
	}
	golden := filepath.Join("testdata", fixture+".timelines.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if b.String() != string(want) {
		writeDiff(t, string(want), b.String())
		t.Errorf("timelines differ from %s (go test -update rewrites it after a deliberate change)", golden)
	}
}

// TestSLI checks the SLI report on the basic fixture: every Pod created by
// a change is counted, and the milestones come in order.
func TestSLI(t *testing.T) {
	dbPath := reconstructed(t)
	code, out, e := runCmd(t, nil, "query", "sli", "--db", dbPath, "--output", "json")
	if code != 0 {
		t.Fatalf("query sli: %d %s", code, e)
	}
	var rows []reconstruct.SLI
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	phase := map[string]reconstruct.SLI{}
	hops := 0
	for _, r := range rows {
		switch r.Scope {
		case "phase":
			phase[r.Name] = r
		case "hop":
			hops++
		}
	}
	// The ground truth creates 3 + 2 + 2 Pods.
	var created int
	for _, a := range readTruth(t, "../../fixtures/basic").Actions {
		for _, c := range a.Changes {
			if c.Kind == "Pod" && c.Change == "created" {
				created++
			}
		}
	}
	for _, name := range []string{"change_to_created", "change_to_scheduled", "change_to_running", "change_to_ready"} {
		if phase[name].N != created {
			t.Errorf("%s: %d pods, want %d", name, phase[name].N, created)
		}
	}
	order := []string{"change_to_created", "change_to_scheduled", "change_to_running", "change_to_ready"}
	for i := 1; i < len(order); i++ {
		if a, b := phase[order[i-1]], phase[order[i]]; a.P50NS > b.P50NS || a.P50NS <= 0 {
			t.Errorf("p50 %s = %d after %s = %d", order[i-1], a.P50NS, order[i], b.P50NS)
		}
	}
	if hops < 5 {
		t.Errorf("hop latency for %d controllers, want the deployment, replicaset, endpointslice controllers, scheduler, kwok...", hops)
	}
}

// TestPrune prunes the basic fixture's merge graph down with one change
// pinned: the pinned change's related CPIDs are unchanged, the graph shrank.
func TestPrune(t *testing.T) {
	dbPath := reconstructed(t)
	code, js, _ := runCmd(t, nil, "query", "changes", "--db", dbPath, "--output", "json", "--sort", "size")
	var cs []struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(js), &cs) != nil || len(cs) < 2 {
		t.Fatalf("query changes: %d %s", code, js)
	}
	pinned := cs[len(cs)-1].ID // an early, small change
	related := func() string {
		code, out, e := runCmd(t, nil, "query", "related", pinned, "--db", dbPath)
		if code != 0 {
			t.Fatalf("query related: %d %s", code, e)
		}
		return out
	}
	count := func() (n int) {
		openDB(t, dbPath).QueryRow(`SELECT count(*) FROM mergelogs`).Scan(&n)
		return n
	}
	before, n0 := related(), count()
	code, out, e := runCmd(t, nil, "prune", "--db", dbPath, "--older-than", "1s", "--keep", pinned)
	if code != 0 {
		t.Fatalf("prune: %d %s%s", code, out, e)
	}
	if after := related(); after != before {
		t.Errorf("related CPIDs of the pinned change changed:\nbefore %s\nafter  %s", before, after)
	}
	if n1 := count(); n1 >= n0 {
		t.Errorf("mergelogs %d -> %d: nothing pruned", n0, n1)
	}
	if code, _, _ := runCmd(t, nil, "prune", "--db", dbPath); code != 2 {
		t.Errorf("prune without a budget: exit %d, want 2", code)
	}
}

// TestAttributionInstrumented: the same actions with the Deployment and
// ReplicaSet controllers instrumented and the users' changes stamped: the
// changes are found by their root CPIDs and attributed just as well.
func TestAttributionInstrumented(t *testing.T) {
	checkAttribution(t, "instrumented", 1, 1)
}

// TestAttributionPaper: the paper's section 5 workloads, recorded for real:
// one Deployment scaled 10 -> 50 (stock and instrumented), and five
// Deployments scaled at once, four times (instrumented; each round's five
// changes run concurrently and must not borrow each other's writes).
func TestAttributionPaper(t *testing.T) {
	for _, f := range []string{"paper-5-1-1-stock", "paper-5-1-1", "paper-5-1-2", "figure-5", "rollout-interrupted"} {
		t.Run(f, func(t *testing.T) { checkAttribution(t, f, 1, 1) })
	}
}

// TestProgressPrinter: a run's progress lines; the end said in full once.
func TestProgressPrinter(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	p := progressPrinter(&out, "cluster a: ")
	p(reconstruct.Progress{Elapsed: 2 * time.Second, Writes: 5000})
	p(reconstruct.Progress{Elapsed: 4 * time.Second, Writes: 9000, End: true})
	p(reconstruct.Progress{Elapsed: 6 * time.Second, Writes: 9000, End: true})
	p(reconstruct.Progress{Elapsed: 6500 * time.Millisecond, Writes: 9000, End: true, Done: true})
	want := "reconstruct: cluster a: 5000 writes through, 2500/s, 2s\n" +
		"reconstruct: cluster a: every write through (9000); storing the end (indexes, renumbering, summaries, the commit), 4s\n" +
		"reconstruct: cluster a: still storing the end, 6s\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
