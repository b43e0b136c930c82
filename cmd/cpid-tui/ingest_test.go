package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

const basicBundle = "../../fixtures/basic/bundle"

// runCmd runs one cpid-tui command line in-process.
func runCmd(t *testing.T, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code = run(context.Background(), &env{stdin: stdin, stdout: &o, stderr: &e}, args)
	return code, o.String(), e.String()
}

func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// auditLines reads every line of the fixture's audit logs, decompressing the
// rotated backups, with nothing of cpid's readers or decoders.
func auditLines(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "audit", "*"))
	var lines []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		lines = append(lines, strings.Split(strings.TrimRight(string(b), "\n"), "\n")...)
	}
	return lines
}

// countBy returns "stage verb count" lines, sorted, for comparisons.
func countBy(m map[[2]string]int) string {
	var out []string
	for k, n := range m {
		out = append(out, fmt.Sprintf("%s %s %d", k[0], k[1], n))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func dbCounts(t *testing.T, db *sql.DB) map[[2]string]int {
	t.Helper()
	rows, err := db.Query(`SELECT stage, verb, count(*) FROM audit_events GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[[2]string]int{}
	for rows.Next() {
		var s, v string
		var n int
		if err := rows.Scan(&s, &v, &n); err != nil {
			t.Fatal(err)
		}
		m[[2]string{s, v}] = n
	}
	return m
}

// dumpDB renders every row of every table, in rowid order (a WITHOUT
// ROWID table's, such as cpid_ids, in the order of its key; of
// schema_migrations, not when each was applied): two databases with the
// same dump hold the same records with the same ids.
func dumpDB(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT name, CASE WHEN sql LIKE '%WITHOUT ROWID' THEN '1' ELSE 'rowid' END
		FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables, orders []string
	for rows.Next() {
		var n, order string
		if err := rows.Scan(&n, &order); err != nil {
			t.Fatal(err)
		}
		tables, orders = append(tables, n), append(orders, order)
	}
	rows.Close()
	var out strings.Builder
	for i, tb := range tables {
		q := `SELECT * FROM "` + tb + `" ORDER BY ` + orders[i]
		if tb == "schema_migrations" {
			q = `SELECT version, name FROM schema_migrations ORDER BY version` // not when they were applied
		}
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
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, "%s%v\n", tb, vals)
		}
		rows.Close()
	}
	return out.String()
}

func TestIngestFixtureMatchesIndependentCount(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	code, out, errOut := runCmd(t, nil, "ingest", "--db", dbPath, basicBundle)
	if code != 0 {
		t.Fatalf("ingest exit %d\n%s\n%s", code, out, errOut)
	}
	t.Log(out)
	db := openDB(t, dbPath)

	// Independent count: distinct lines, decoded with encoding/json.
	want := map[[2]string]int{}
	seen := map[string]bool{}
	for _, l := range auditLines(t, basicBundle) {
		if seen[l] {
			continue
		}
		seen[l] = true
		var ev struct{ Stage, Verb string }
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("fixture line does not decode: %v", err)
		}
		want[[2]string{ev.Stage, ev.Verb}]++
	}
	got := dbCounts(t, db)
	if countBy(got) != countBy(want) {
		t.Errorf("stored events by stage and verb:\n%s\nindependent count:\n%s", countBy(got), countBy(want))
	}

	// And with jq, a tool that shares no code with us.
	jq, err := exec.LookPath("jq")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("jq is missing; .ci/run installs it")
		}
		t.Log("jq not installed: skipping the jq cross-check")
	} else {
		cmd := exec.Command(jq, "-r", `[.stage, .verb] | @tsv`)
		cmd.Stdin = strings.NewReader(strings.Join(keys(seen), "\n") + "\n")
		b, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		fromJQ := map[[2]string]int{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			s, v, _ := strings.Cut(l, "\t")
			fromJQ[[2]string{s, v}]++
		}
		if countBy(got) != countBy(fromJQ) {
			t.Errorf("stored events by stage and verb:\n%s\njq count:\n%s", countBy(got), countBy(fromJQ))
		}
	}

	var logs int
	if err := db.QueryRow(`SELECT count(*) FROM log_records`).Scan(&logs); err != nil {
		t.Fatal(err)
	}
	if logs == 0 {
		t.Error("no controller log records stored")
	}
	for _, c := range []string{"kube-controller-manager.log", "kube-scheduler.log", "kwok.log"} {
		var n int
		db.QueryRow(`SELECT count(*) FROM log_records l JOIN files f ON f.id = l.file_id WHERE f.path LIKE ?`, "%"+c).Scan(&n)
		if n == 0 {
			t.Errorf("no log records from %s", c)
		}
	}

	// A second ingest of the same bundle changes nothing.
	before := dumpDB(t, db)
	code, out, errOut = runCmd(t, nil, "ingest", "--db", dbPath, basicBundle)
	if code != 0 {
		t.Fatalf("second ingest exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, " 0 new audit events") || !strings.Contains(out, " 0 new log records") {
		t.Errorf("second ingest summary does not say nothing was new:\n%s", out)
	}
	if after := dumpDB(t, db); after != before {
		t.Error("second ingest changed the database")
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestIngestMangled feeds one file of good and broken lines: the good ones are
// stored, each bad one is reported with file:line, the exit code is 0.
func TestIngestMangled(t *testing.T) {
	good := auditLines(t, basicBundle)
	pick := func(i int) string { return good[i] }
	var ev map[string]any
	json.Unmarshal([]byte(good[1]), &ev)
	var ev2 map[string]any
	json.Unmarshal([]byte(good[2]), &ev2)
	list, _ := json.Marshal(map[string]any{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": map[string]any{},
		"items": []any{ev, ev2}})
	big := pick(3)
	crit := pick(4)
	half := len(crit) / 2
	lines := []struct {
		text string
		bad  bool // reported as bad
		n    int  // audit events it holds
	}{
		{pick(0), false, 1},
		{big[:len(big)/2], true, 0}, // truncated JSON
		{`{"kind":"Event","auditID":"` + "\xff\xfe" + `","stage":"x"}`, true, 0},                                                 // invalid UTF-8
		{`{"kind":"Event","x":"` + strings.Repeat("a", 20<<20) + `"}`, true, 0},                                                  // a 20 MB line
		{`2026-11-22T16:26:45.615Z AUDIT: id="1f6a" stage="ResponseComplete" ip="127.0.0.1" method="get" user="admin"`, true, 0}, // legacy text format
		{string(list), false, 2}, // an EventList of two events
		{"2026-11-22T16:26:45.615123456Z stdout P " + crit[:half], false, 0}, // CRI partial...
		{"2026-11-22T16:26:45.615123457Z stdout F " + crit[half:], false, 1}, // ...completed
		{"2026-11-22T16:26:45.7Z stderr F " + pick(5), false, 1},             // CRI full line
		{"", false, 0},
		{"not json at all", true, 0},
		{"2026-11-22T16:26:45.8Z stdout P " + pick(6)[:10], true, 0}, // dangling partial at the end
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "mangled.log")
	var buf bytes.Buffer
	wantBad := map[int]bool{}
	for i, l := range lines {
		buf.WriteString(l.text + "\n")
		if l.bad {
			wantBad[i+1] = true
		}
	}
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "cpid.db")
	code, out, errOut := runCmd(t, nil, "ingest", "--db", dbPath, in)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (bad lines are not fatal)\n%s\n%s", code, out, errOut)
	}
	for n := range wantBad {
		if !strings.Contains(out, fmt.Sprintf("%s:%d: ", in, n)) {
			t.Errorf("summary does not report bad line %d:\n%s", n, out)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("bad lines: %d", len(wantBad))) {
		t.Errorf("summary does not count %d bad lines:\n%s", len(wantBad), out)
	}
	distinct := map[string]bool{good[0]: true, good[1]: true, good[2]: true, crit: true, good[5]: true}
	var n int
	openDB(t, dbPath).QueryRow(`SELECT count(*) FROM audit_events`).Scan(&n)
	if n != len(distinct) {
		t.Errorf("stored %d audit events, want %d", n, len(distinct))
	}
}

// TestIngestTarBundle reads a .tgz as a stream: the same events as the
// directory, links skipped, unsafe names harmless and reported.
func TestIngestTarBundle(t *testing.T) {
	dir := t.TempDir()
	tgz := filepath.Join(dir, "bundle.tgz")
	f, err := os.Create(tgz)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.Walk(basicBundle, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(basicBundle, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tw.WriteHeader(&tar.Header{Name: "bundle/" + rel, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tw.WriteHeader(&tar.Header{Name: "bundle/evil-link", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink})
	escape := auditLines(t, basicBundle)[0] + "\n"
	tw.WriteHeader(&tar.Header{Name: "../../escape.log", Mode: 0o644, Size: int64(len(escape)), Typeflag: tar.TypeReg})
	tw.Write([]byte(escape))
	tw.Close()
	zw.Close()
	f.Close()

	dbDir, dbTar := filepath.Join(dir, "dir.db"), filepath.Join(dir, "tar.db")
	if code, out, e := runCmd(t, nil, "ingest", "--db", dbDir, basicBundle); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, e)
	}
	code, out, e := runCmd(t, nil, "ingest", "--db", dbTar, tgz)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, e)
	}
	if a, b := countBy(dbCounts(t, openDB(t, dbDir))), countBy(dbCounts(t, openDB(t, dbTar))); a != b {
		t.Errorf("tar bundle and directory differ:\n%s\n---\n%s", b, a)
	}
	if !strings.Contains(out, "evil-link: link inside a bundle: skipped") {
		t.Errorf("symlink member not reported:\n%s", out)
	}
	if !strings.Contains(out, "unsafe member name") {
		t.Errorf("unsafe member name not reported:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "..", "escape.log")); err == nil {
		t.Error("a bundle member was written outside the bundle")
	}
}

func TestIngestUnreadableInput(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "cpid.db")
	corrupt := filepath.Join(dir, "audit-2026-01-01T00-00-00.000.log.gz")
	os.WriteFile(corrupt, []byte{0x1f, 0x8b, 0, 1, 2, 3}, 0o644)
	code, out, errOut := runCmd(t, nil, "ingest", "--db", dbPath,
		filepath.Join(dir, "missing.log"), corrupt, basicBundle)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"missing.log", "no such file", corrupt} {
		if !strings.Contains(errOut+out, want) {
			t.Errorf("output does not mention %q:\n%s\n%s", want, out, errOut)
		}
	}
	var n int
	openDB(t, dbPath).QueryRow(`SELECT count(*) FROM audit_events`).Scan(&n)
	if n == 0 {
		t.Error("the readable input was not stored")
	}
}

func TestIngestStdinAndRedaction(t *testing.T) {
	secret := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"0a9e3c5e-1b7f-4c1e-9d55-3c1f0e6b2a11","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/secrets","verb":"create","user":{"username":"kubernetes-admin"},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.37.2","objectRef":{"resource":"secrets","namespace":"default","name":"db-pass","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestObject":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"db-pass","namespace":"default"},"data":{"password":"aHVudGVyMg=="},"stringData":{"user":"admin"}},"responseObject":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"db-pass","namespace":"default","uid":"5b0c7f61-0d0b-4c59-a7d9-0c5b9e2f3a10","resourceVersion":"901"},"data":{"password":"aHVudGVyMg=="},"type":"Opaque"},"requestReceivedTimestamp":"2026-11-22T16:26:45.615123Z","stageTimestamp":"2026-11-22T16:26:45.620000Z"}`
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	code, out, errOut := runCmd(t, strings.NewReader(secret+"\n"), "ingest", "--db", dbPath, "-")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "redacted") {
		t.Errorf("summary does not say it redacted:\n%s", out)
	}
	db := openDB(t, dbPath)
	var req, resp, path string
	var redacted int
	if err := db.QueryRow(`SELECT b.request_object, b.response_object, e.redacted, f.path FROM audit_events e
		JOIN audit_bodies b ON b.event_id = e.id JOIN files f ON f.id = e.file_id`).Scan(&req, &resp, &redacted, &path); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(req+resp, "aHVudGVyMg") || strings.Contains(req, "stringData") {
		t.Errorf("secret data stored:\n%s\n%s", req, resp)
	}
	if redacted != 1 || path != "-" {
		t.Errorf("redacted = %d, path = %q", redacted, path)
	}
	// Nothing of the secret anywhere in the file, WAL included.
	for _, p := range []string{dbPath, dbPath + "-wal"} {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte("aHVudGVyMg")) {
			t.Errorf("secret bytes found in %s", p)
		}
	}
}

// TestIngestCredentials ingests every credential shape of the redaction
// table (ingest/testdata/audit/credentials.jsonl, written by ingest's
// TestRedactShapes) plus a custom resource covered by --redact, and looks
// for the credentials in the bytes of the database file and its WAL.
func TestIngestCredentials(t *testing.T) {
	const marker = "c0ffee5ecret42" // ingest_test.credMarker
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + marker + "\nAAAA\n-----END RSA PRIVATE KEY-----\n"
	custom := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"sealed","stage":"ResponseComplete",` +
		`"verb":"create","objectRef":{"resource":"sealedsecrets","apiGroup":"bitnami.com","namespace":"d","name":"s","apiVersion":"v1alpha1"},` +
		`"requestObject":{"kind":"SealedSecret","apiVersion":"bitnami.com/v1alpha1","spec":{"encryptedData":{"k":"sealed` + marker + `"}}}}`
	in, err := os.ReadFile("../../ingest/testdata/audit/credentials.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in = append(in, custom+"\n"...)
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	code, out, errOut := runCmd(t, bytes.NewReader(in), "ingest", "--db", dbPath,
		"--redact", "sealedsecrets.bitnami.com:spec.encryptedData", "-")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	lines := bytes.Count(in, []byte("\n"))
	if want := fmt.Sprintf("from %d event(s)", lines); !strings.Contains(out, want) {
		t.Errorf("summary does not say %q:\n%s", want, out)
	}
	var n int
	if err := openDB(t, dbPath).QueryRow(`SELECT count(*) FROM audit_events WHERE redacted = 1`).Scan(&n); err != nil || n != lines {
		t.Errorf("%d events marked redacted (%v), want %d", n, err, lines)
	}
	for _, p := range []string{dbPath, dbPath + "-wal"} {
		b, _ := os.ReadFile(p)
		for _, c := range []string{marker, base64.StdEncoding.EncodeToString([]byte(pem))[:40]} {
			if bytes.Contains(b, []byte(c)) {
				t.Errorf("credential %q found in %s", c, p)
			}
		}
	}
	// Without the rule, the custom resource is stored as it came.
	dbPath = filepath.Join(t.TempDir(), "plain.db")
	if code, out, errOut := runCmd(t, strings.NewReader(custom+"\n"), "ingest", "--db", dbPath, "-"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var body string
	openDB(t, dbPath).QueryRow(`SELECT request_object FROM audit_bodies`).Scan(&body)
	if !strings.Contains(body, "sealed"+marker) {
		t.Errorf("stored without --redact: %s", body)
	}
	if code, _, errOut := runCmd(t, nil, "ingest", "--redact", "nopath", "-"); code != 2 || !strings.Contains(errOut, "NAME[.GROUP]") {
		t.Errorf("bad --redact: exit %d\n%s", code, errOut)
	}
}

func TestIngestUsage(t *testing.T) {
	if code, _, _ := runCmd(t, nil, "ingest"); code != 2 {
		t.Errorf("no PATH: exit %d, want 2", code)
	}
	// Help goes to standard output, as kubectl's does (| less).
	code, out, _ := runCmd(t, nil, "ingest", "-h")
	if code != 0 || !strings.Contains(out, "cpid-tui ingest PATH...") || !strings.Contains(out, "--db") || !strings.Contains(out, "--strict") {
		t.Errorf("-h: exit %d\n%s", code, out)
	}
}
