package main

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// ingestNoBad ingests paths into a new database, fails on a bad line, and
// returns the database and the summary.
func ingestNoBad(t *testing.T, paths ...string) (string, string) {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	code, out, e := runCmd(t, nil, append([]string{"ingest", "--db", dbPath}, paths...)...)
	if code != 0 || strings.Contains(out, "bad lines:") {
		t.Fatalf("ingest %v: exit %d\n%s%s", paths, code, out, e)
	}
	if code, out, e := runCmd(t, nil, "reconstruct", "--db", dbPath); code != 0 {
		t.Fatalf("reconstruct: %d\n%s%s", code, out, e)
	}
	return dbPath, out
}

// shape describes a reconstruction in words that two recordings of one
// scenario share: for each root change (its trigger, verb, kind and name),
// the writers, the kinds written, and each object created, as "writer
// create kind rule origin", by count (a subresource create without its
// rule). Names the recordings generate (Pods, EndpointSlices) and times are
// left out; so are updates, whose number depends on timing.
func shape(t *testing.T, dbPath string) string {
	t.Helper()
	db := openDB(t, dbPath)
	rows, err := db.Query(`SELECT c.trigger || ' ' || c.verb || ' ' || c.resource || ' ' || c.namespace || '/' || c.name,
		r.writer, r.resource, e.verb, e.subresource, COALESCE(r.cause_rule, ''), COALESCE(r.cpid_origin, ''), COALESCE(e.code, 0)
		FROM revisions r JOIN changes c ON c.id = r.change_id JOIN audit_events e ON e.id = r.event_id
		WHERE r.attempt = 0`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type change struct {
		writers, kinds map[string]bool
		creates        map[string]int
	}
	changes := map[string]*change{}
	for rows.Next() {
		var root, writer, res, verb, sub, rule, origin string
		var code int
		if err := rows.Scan(&root, &writer, &res, &verb, &sub, &rule, &origin, &code); err != nil {
			t.Fatal(err)
		}
		c := changes[root]
		if c == nil {
			c = &change{writers: map[string]bool{}, kinds: map[string]bool{}, creates: map[string]int{}}
			changes[root] = c
		}
		c.writers[writer] = true
		c.kinds[res] = true
		switch {
		case verb != "create" || code >= 400:
		case sub == "":
			c.creates[fmt.Sprintf("%s create %s %s %s", writer, res, rule, origin)]++
		default:
			// A subresource create (a binding) follows its object's own
			// last write or its owner's, whichever timing made latest.
			c.creates[fmt.Sprintf("%s create/%s %s", writer, sub, res)]++
		}
	}
	keys := func(m map[string]bool) string {
		var s []string
		for k := range m {
			s = append(s, k)
		}
		sort.Strings(s)
		return strings.Join(s, ", ")
	}
	var out []string
	for root, c := range changes {
		var cr []string
		for k, n := range c.creates {
			cr = append(cr, fmt.Sprintf("%d x %s", n, k))
		}
		sort.Strings(cr)
		out = append(out, fmt.Sprintf("%s\n  writers: %s\n  kinds: %s\n  creates: %s", root, keys(c.writers), keys(c.kinds),
			strings.Join(cr, "; ")))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestFigure5Text: the figure-5 scenario recorded with kube-controller-manager
// and kube-scheduler logging klog text ingests with no bad line, the two
// text logs read as klog text; its reconstruction is right against its own
// ground truth, and has the shape of the JSON recording's: the same
// changes, writers, kinds, and objects created by the same writers through
// the same rules.
func TestFigure5Text(t *testing.T) {
	text, out := ingestNoBad(t, "../../fixtures/figure-5-text/bundle")
	for _, f := range []string{"kube-controller-manager.log", "kube-scheduler.log"} {
		if !strings.Contains(out, "klog text") || !regexpLine(out, `klog text\s+\d+\s+\d+\s+0\s+\S*`+f) {
			t.Errorf("summary does not list %s as klog text:\n%s", f, out)
		}
	}
	checkAttribution(t, "figure-5-text", 1, 1)
	jsonLogs, _ := ingestNoBad(t, "../../fixtures/figure-5/bundle")
	if a, b := shape(t, jsonLogs), shape(t, text); a != b {
		t.Errorf("figure-5 (klog JSON):\n%s\n\nfigure-5-text (klog text):\n%s", a, b)
	}
	var n int
	openDB(t, text).QueryRow(`SELECT count(*) FROM log_records l JOIN files f ON f.id = l.file_id
		WHERE f.path LIKE '%kube-controller-manager.log' AND l.component IN ('kube-controller-manager', 'UnhandledError', 'resourcequota-controller',
		'node-lifecycle-controller', 'persistentvolume-attach-detach-controller')`).Scan(&n)
	if n != 514 {
		t.Errorf("%d records of kube-controller-manager.log named after it or their logger, want its 514 lines", n)
	}
}

// regexpLine reports whether a line of out matches re.
func regexpLine(out, re string) bool {
	r := regexp.MustCompile(re)
	for _, l := range strings.Split(out, "\n") {
		if r.MatchString(l) {
			return true
		}
	}
	return false
}

// derivedRows is what reconstruct derived, in words that do not depend on
// the input's file names or row ids.
func derivedRows(t *testing.T, dbPath string) string {
	t.Helper()
	rows, err := openDB(t, dbPath).Query(`SELECT e.audit_id, r.writer, r.seq, r.attempt, COALESCE(r.cpid, ''), COALESCE(r.cpid_origin, ''),
		COALESCE(r.cause_rule, ''), COALESCE(c.audit_id, ''), COALESCE(r.change_id, ''), COALESCE(r.hop_ns, -1)
		FROM revisions r JOIN audit_events e ON e.id = r.event_id LEFT JOIN audit_events c ON c.id = r.cause_event_id
		ORDER BY e.audit_id`)
	if err != nil {
		t.Fatal(err)
	}
	return dump(t, rows)
}

func dump(t *testing.T, rows *sql.Rows) string {
	t.Helper()
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var b strings.Builder
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, vals...)
	}
	return b.String()
}

// TestEnvelopeFixtures: the basic recording's audit log as EKS and AKS hand
// it over (fixtures/envelopes, made by go run ./fixtures/envelopes) ingests
// with no bad line and gives the reconstruction of the raw log, row for
// row (the AKS and EKS ones leave out get and list requests, as
// kube-audit-admin and the fixture's filter pattern do).
func TestEnvelopeFixtures(t *testing.T) {
	raw, _ := ingestNoBad(t, basicBundle+"/audit")
	want := derivedRows(t, raw)
	if strings.Count(want, "\n") < 100 {
		t.Fatalf("the raw log's reconstruction has %d writes", strings.Count(want, "\n"))
	}
	for _, f := range []string{"eks", "eks-s3", "aks"} {
		t.Run(f, func(t *testing.T) {
			db, _ := ingestNoBad(t, "../../fixtures/envelopes/"+f)
			if got := derivedRows(t, db); got != want {
				writeDiff(t, want, got)
				t.Errorf("%s: reconstruction differs from the raw audit log's", f)
			}
		})
	}
}

// TestEnvelopeGKE: GKE's AuditLog entries (gcloud's JSON array, a sink's
// JSON lines) carry one time per request, when the entry was emitted, so
// writes are ordered by completion (format.go, gkeLoss). What must hold:
// the same root changes as the raw log, with the same IDs (the auditIDs),
// and every write in the change it has from the raw log, except a write
// that completed before its change's root write completed, which the
// order by completion cannot put after it; the summary warns of it.
func TestEnvelopeGKE(t *testing.T) {
	raw, _ := ingestNoBad(t, basicBundle+"/audit")
	roots := func(db string) string {
		rows, err := openDB(t, db).Query(`SELECT id, verb, resource, namespace, name FROM changes WHERE trigger = 'user' ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		return dump(t, rows)
	}
	// auditID -> change, and the stage time of each write and root.
	changeOf := func(db string) (map[string]string, map[string]int64) {
		rows, err := openDB(t, db).Query(`SELECT e.audit_id, COALESCE(r.change_id, ''), e.stage_ns FROM revisions r
			JOIN audit_events e ON e.id = r.event_id WHERE r.attempt = 0`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		ch, at := map[string]string{}, map[string]int64{}
		for rows.Next() {
			var id, c string
			var ns int64
			rows.Scan(&id, &c, &ns)
			ch[id], at[id] = c, ns
		}
		return ch, at
	}
	rawChange, _ := changeOf(raw)
	for _, f := range []string{"gke", "gke-sink"} {
		t.Run(f, func(t *testing.T) {
			db, out := ingestNoBad(t, "../../fixtures/envelopes/"+f)
			if !strings.Contains(out, "warning: GKE AuditLog entries carry no stage") {
				t.Errorf("no data-quality warning:\n%s", out)
			}
			if a, b := roots(raw), roots(db); a != b {
				t.Errorf("root changes differ:\nraw\n%s\n%s\n%s", a, f, b)
			}
			got, at := changeOf(db)
			if len(got) != len(rawChange) {
				t.Errorf("%d writes, raw %d", len(got), len(rawChange))
			}
			moved := 0
			for id, c := range rawChange {
				if got[id] == c || c == "" {
					continue
				}
				if at[id] < at[c] { // the root's auditID is the change's ID
					moved++
					continue
				}
				t.Errorf("write %s: change %q, raw %q", id, got[id], c)
			}
			if moved > 2 {
				t.Errorf("%d writes left their change", moved)
			}
		})
	}
}

// TestMustGatherApiservers: the basic recording's events split between two
// apiservers' logs in an OpenShift must-gather layout reconstruct as the
// single log does.
func TestMustGatherApiservers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "must-gather.local.1", "quay-io-openshift-release-dev-ocp")
	logs := filepath.Join(dir, "audit_logs", "kube-apiserver")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"audit-2026-11-22T16-26-45.615.log.gz", "audit-2026-11-22T16-26-59.899.log.gz", "audit.log"} {
		b, err := os.ReadFile(filepath.Join(basicBundle, "audit", f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(zr)
		}
		var server [2]bytes.Buffer
		for i, l := range strings.SplitAfter(string(b), "\n") {
			server[i%2].WriteString(l)
		}
		for s := range server {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(server[s].Bytes())
			zw.Close()
			name := fmt.Sprintf("master-%d-%s", s, strings.TrimSuffix(f, ".gz")+".gz")
			if err := os.WriteFile(filepath.Join(logs, name), z.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	raw, _ := ingestNoBad(t, basicBundle+"/audit")
	mg, _ := ingestNoBad(t, filepath.Dir(dir))
	if a, b := derivedRows(t, raw), derivedRows(t, mg); a != b {
		writeDiff(t, a, b)
		t.Error("the must-gather's reconstruction differs from the single log's")
	}
}

// TestIngestUnreadable: an input none of whose lines could be decoded makes
// the exit code 1, naming the input, the format detected and its first bad
// lines; the other inputs are stored.
func TestIngestUnreadable(t *testing.T) {
	dir := t.TempDir()
	legacy := filepath.Join(dir, "legacy.log")
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, "2017-03-21T03:57:09.10684188%d-04:00 AUDIT: id=\"c939d2a7\" ip=\"127.0.0.1\" method=\"GET\" user=\"admin\"\n", i)
	}
	os.WriteFile(legacy, []byte(b.String()), 0o644)
	mixed := filepath.Join(dir, "mixed")
	os.MkdirAll(mixed, 0o755)
	os.WriteFile(filepath.Join(mixed, "notes.txt"), []byte("not a log\n"), 0o644)
	good, _ := os.ReadFile(filepath.Join(basicBundle, "audit", "audit.log"))
	os.WriteFile(filepath.Join(mixed, "audit.log"), good, 0o644)

	dbPath := filepath.Join(dir, "cpid.db")
	code, out, e := runCmd(t, nil, "ingest", "--db", dbPath, mixed, legacy)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, e)
	}
	for _, want := range []string{
		legacy + ": no line could be decoded (5 bad lines, detected format: legacy audit text); first bad lines:",
		legacy + ":1: legacy text audit format is not supported",
		legacy + ":3: legacy text audit format is not supported",
	} {
		if !strings.Contains(e, want) {
			t.Errorf("stderr lacks %q:\n%s", want, e)
		}
	}
	if strings.Contains(e, mixed+":") {
		t.Errorf("an input with good lines is reported as unreadable:\n%s", e)
	}
	var n int
	openDB(t, dbPath).QueryRow(`SELECT count(*) FROM audit_events`).Scan(&n)
	if n == 0 {
		t.Error("the readable input was not stored")
	}

	code, _, e = runCmd(t, strings.NewReader("just some text\nand more\n"), "ingest", "--db", dbPath, "-")
	if code != 1 || !strings.Contains(e, "-: no line could be decoded (2 bad lines, detected format: unrecognised)") {
		t.Errorf("standard input of text: exit %d\n%s", code, e)
	}
}

// TestIngestComponentStdin: klog text read from standard input is named by
// --component, except what names its logger.
func TestIngestComponentStdin(t *testing.T) {
	when := time.Now().UTC().Add(-48 * time.Hour)
	hdr := "I" + when.Format("0102 15:04:05.000000")
	in := hdr + " 7 server.go:187] \"Starting Kubernetes Scheduler\" version=\"v1.37.2\"\n" +
		hdr + " 7 x.go:1] \"Unhandled Error\" err=\"e\" logger=\"UnhandledError\"\n"
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	code, out, e := runCmd(t, strings.NewReader(in), "ingest", "--db", dbPath, "--component", "kube-scheduler", "-")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, e)
	}
	rows, err := openDB(t, dbPath).Query(`SELECT component, ts_ns FROM log_records ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var c string
		var ns int64
		rows.Scan(&c, &ns)
		got = append(got, c)
		if d := time.Unix(0, ns).Sub(when.Truncate(time.Microsecond)); d != 0 {
			t.Errorf("record %s off by %s", c, d)
		}
	}
	if strings.Join(got, ",") != "kube-scheduler,UnhandledError" {
		t.Errorf("components %v", got)
	}
}
