package main

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The webhook fixtures: kube-apiserver wrote its audit events to the log
// file and posted them to cpid-tui serve over mTLS (record.sh WEBHOOK=1,
// scenario webhook); serve/webhook.db.gz is the database serve wrote
// (docs/LIVE.md, "A real kube-apiserver's webhook").

// webhookEvent is what identifies an audit event in a database: its
// content hash (SHA-256 of the event as the apiserver serialized it, so
// equal hashes mean the same bytes) and what was stored of it.
type webhookEvent struct {
	Hash, Level, Verb, URI string
	Code                   sql.NullInt64
	StageNS, ReceivedNS    int64
	Bodies                 string // SHA-256 of the stored request, response and status
}

// eventKey names an audit event: its audit ID and stage.
type eventKey struct{ AuditID, Stage string }

// webhookEvents reads every audit event of a database, by audit ID and
// stage.
func webhookEvents(t *testing.T, path string) map[eventKey]webhookEvent {
	t.Helper()
	rows, err := openDB(t, path).Query(`SELECT e.audit_id, e.stage, hex(e.hash), e.level, e.verb, e.request_uri, e.code,
		e.stage_ns, e.received_ns, b.request_object, b.response_object, b.response_status
		FROM audit_events e LEFT JOIN audit_bodies b ON b.event_id = e.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[eventKey]webhookEvent{}
	for rows.Next() {
		var k eventKey
		var e webhookEvent
		var req, resp, status sql.NullString
		if err := rows.Scan(&k.AuditID, &k.Stage, &e.Hash, &e.Level, &e.Verb, &e.URI, &e.Code, &e.StageNS, &e.ReceivedNS,
			&req, &resp, &status); err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		for _, s := range []sql.NullString{req, resp, status} {
			fmt.Fprintf(h, "%t %d %s\x00", s.Valid, len(s.String), s.String)
		}
		e.Bodies = hex.EncodeToString(h.Sum(nil))
		if _, dup := m[k]; dup {
			t.Fatalf("%s: two events with audit ID %s at stage %s", path, k.AuditID, k.Stage)
		}
		m[k] = e
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// webhookDiff is how the events of the file's database and serve's differ.
type webhookDiff struct {
	onlyFile, onlyServe []eventKey
	differ              []string // the same event stored differently
}

func diffWebhookEvents(file, served map[eventKey]webhookEvent) webhookDiff {
	var d webhookDiff
	for k, f := range file {
		s, ok := served[k]
		switch {
		case !ok:
			d.onlyFile = append(d.onlyFile, k)
		case s != f:
			d.differ = append(d.differ, fmt.Sprintf("%s %s: file %+v, serve %+v", k.AuditID, k.Stage, f, s))
		}
	}
	for k := range served {
		if _, ok := file[k]; !ok {
			d.onlyServe = append(d.onlyServe, k)
		}
	}
	sortKeys := func(a, b eventKey) int { return strings.Compare(a.AuditID+a.Stage, b.AuditID+b.Stage) }
	slices.SortFunc(d.onlyFile, sortKeys)
	slices.SortFunc(d.onlyServe, sortKeys)
	slices.Sort(d.differ)
	return d
}

// servedDB gunzips a fixture's serve/webhook.db.gz into a temporary
// directory and brings it to the current schema and up to date (serve ran
// with --reconstruct-every 0), as a user's database would be.
func servedDB(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "serve", "webhook.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "webhook.db")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if code, o, e := runCmd(t, nil, "reconstruct", "--db", path); code != 0 {
		t.Fatalf("reconstruct %s: %d\n%s%s", path, code, o, e)
	}
	return path
}

// webhookDrops reads the audit events kube-apiserver gave up on, from its
// log: audit.HandlePluginError logs "Error in audit plugin 'PLUGIN'
// affecting N audit events: ERR\nImpacted events:\n" and one line per
// event with its id and stage. PLUGIN is "webhook" for a batch whose
// posts all failed, "buffered" for events that never reached a batch (the
// buffer full, or already shut down). It returns each event's "PLUGIN:
// ERR" and the number of messages.
func webhookDrops(t *testing.T, log string) (map[eventKey]string, int) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := regexp.MustCompile(`^Error in audit plugin '([^']+)' affecting (\d+) audit events: (.*)\nImpacted events:\n`)
	item := regexp.MustCompile(`AUDIT: id="([^"]+)" stage="([^"]+)"`)
	drops := map[eventKey]string{}
	messages := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), "Error in audit plugin") {
			continue
		}
		var rec struct{ Msg string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v", log, err)
		}
		m := head.FindStringSubmatch(rec.Msg)
		if m == nil {
			t.Fatalf("%s: unexpected message %q", log, rec.Msg)
		}
		items := item.FindAllStringSubmatch(rec.Msg, -1)
		if n, _ := strconv.Atoi(m[2]); n != len(items) {
			t.Fatalf("%s: %d events affected, %d listed", log, n, len(items))
		}
		messages++
		for _, it := range items {
			drops[eventKey{it[1], it[2]}] = m[1] + ": " + m[3]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return drops, messages
}

// TestWebhookFixtureMatchesFile: in the webhook fixture, the database
// serve wrote from kube-apiserver's webhook and the one ingest writes from
// the audit log of the same run hold the same events, event for event:
// same audit IDs and stages, same content hashes (the same bytes), same
// stored fields and bodies; and reconstruct derives the same revisions
// and changes from both. The recorder starts serve before kube-apiserver
// and stops it after, so no event can be logged before the webhook is
// up or be left in the apiserver's buffer; kube-apiserver reported no
// failed post.
func TestWebhookFixtureMatchesFile(t *testing.T) {
	t.Parallel()
	dir := "../../fixtures/webhook"
	fileDB := reconstructedFixture(t, filepath.Join(dir, "bundle"))
	serveDB := servedDB(t, dir)
	file, served := webhookEvents(t, fileDB), webhookEvents(t, serveDB)
	d := diffWebhookEvents(file, served)
	bodies := 0
	for _, e := range file {
		if e.Level == "RequestResponse" {
			bodies++
		}
	}
	t.Logf("audit events: file %d, serve %d (%d at RequestResponse); only in the file %d, only in serve %d, stored differently %d",
		len(file), len(served), bodies, len(d.onlyFile), len(d.onlyServe), len(d.differ))
	if len(file) == 0 {
		t.Fatal("no audit events in the bundle")
	}
	for _, k := range d.onlyFile {
		t.Errorf("only in the file: %s %s", k.AuditID, k.Stage)
	}
	for _, k := range d.onlyServe {
		t.Errorf("only in serve's database: %s %s", k.AuditID, k.Stage)
	}
	for _, s := range d.differ {
		t.Errorf("stored differently: %s", s)
	}
	if drops, batches := webhookDrops(t, filepath.Join(dir, "bundle", "logs", "kube-apiserver.log")); batches > 0 {
		t.Errorf("kube-apiserver gave up on %d batches (%d events)", batches, len(drops))
	}
	// What reconstruct derives, by the events' hashes (row ids differ).
	for _, q := range []struct{ what, sql string }{
		{"revisions", `SELECT hex(e.hash), r.resource, r.namespace, r.name, r.seq, r.writer, coalesce(r.cause_rule, ''),
			coalesce(r.change_id, ''), coalesce(hex(c.hash), '') FROM revisions r JOIN audit_events e ON e.id = r.event_id
			LEFT JOIN audit_events c ON c.id = r.cause_event_id`},
		{"changes", `SELECT c.id, hex(e.hash), c.started_ns, c.settled_ns, c.user, c.verb, c.resource, c.namespace, c.name
			FROM changes c JOIN audit_events e ON e.id = c.event_id`},
	} {
		a, b := queryRows(t, fileDB, q.sql), queryRows(t, serveDB, q.sql)
		t.Logf("%s: file %d, serve %d", q.what, len(a), len(b))
		if !slices.Equal(a, b) {
			t.Errorf("%s differ: file %d, serve %d", q.what, len(a), len(b))
		}
	}
}

// queryRows returns the rows of a query, each as one string (dump's),
// sorted.
func queryRows(t *testing.T, path, query string) []string {
	t.Helper()
	rows, err := openDB(t, path).Query(query)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Split(strings.TrimSuffix(dump(t, rows), "\n"), "\n")
	slices.Sort(out)
	return out
}

// outage is one entry of serve/outages.json (lib.sh webhook_outage).
type outage struct {
	Outage           int
	KilledNS         int64 `json:"killed_ns"`
	ListeningAgainNS int64 `json:"listening_again_ns"`
	PauseS           int   `json:"pause_s"`
}

// TestWebhookKillRun checks a recording of the webhook scenario in which
// serve was SIGKILLed and started again (record.sh WEBHOOK_KILL=2; the
// command is in docs/LIVE.md), named by CPID_WEBHOOK_KILL_RUN, and prints
// its figures: what kube-apiserver's retries recovered and what it lost.
// What it lost must be exactly what kube-apiserver says it gave up on:
// every event it does not list was acknowledged by serve (a post answered
// 2xx), and must be in serve's database.
func TestWebhookKillRun(t *testing.T) {
	dir := os.Getenv("CPID_WEBHOOK_KILL_RUN")
	if dir == "" {
		t.Skip("set CPID_WEBHOOK_KILL_RUN to the output of record.sh webhook with WEBHOOK_KILL=2 (docs/LIVE.md)")
	}
	t.Parallel()
	var outages []outage
	b, err := os.ReadFile(filepath.Join(dir, "serve", "outages.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &outages); err != nil {
		t.Fatal(err)
	}
	fileDB := reconstructedFixture(t, filepath.Join(dir, "bundle"))
	serveDB := servedDB(t, dir)
	file, served := webhookEvents(t, fileDB), webhookEvents(t, serveDB)
	d := diffWebhookEvents(file, served)
	drops, batches := webhookDrops(t, filepath.Join(dir, "bundle", "logs", "kube-apiserver.log"))
	for _, k := range d.onlyServe {
		t.Errorf("only in serve's database: %s %s", k.AuditID, k.Stage)
	}
	for _, s := range d.differ {
		t.Errorf("stored differently: %s", s)
	}
	// Acknowledged: every event of the file kube-apiserver did not give up on.
	missingAcked := 0
	for _, k := range d.onlyFile {
		if drops[k] == "" {
			missingAcked++
			t.Errorf("missing from serve's database, not given up on by kube-apiserver (acknowledged): %s %s", k.AuditID, k.Stage)
		}
	}
	droppedStored, droppedUnknown := 0, 0
	for k := range drops {
		switch _, inFile := file[k]; {
		case !inFile:
			droppedUnknown++
		case served[k] != webhookEvent{}:
			droppedStored++ // committed, but the answer died with serve, and every retry failed
		}
	}
	if droppedUnknown > 0 {
		t.Errorf("kube-apiserver gave up on %d events the audit log does not hold", droppedUnknown)
	}
	// kube-apiserver's own count, scraped before it stopped.
	metrics, err := os.ReadFile(filepath.Join(dir, "serve", "apiserver-audit-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	counted := "none"
	if m := regexp.MustCompile(`(?m)^apiserver_audit_error_total\{plugin="webhook"\} (\d+)$`).FindSubmatch(metrics); m != nil {
		counted = string(m[1])
	}
	t.Logf("audit events: file %d, serve %d; lost (only in the file) %d; kube-apiserver gave up on %d events in %d batches "+
		"(apiserver_audit_error_total{plugin=\"webhook\"} %s), %d of them stored all the same; acknowledged but missing %d; only in serve %d",
		len(file), len(served), len(d.onlyFile), len(drops), batches, counted, droppedStored, missingAcked, len(d.onlyServe))
	// Per outage: the events whose stage timestamp falls between the kill
	// and 1 s (--audit-webhook-batch-max-wait) before serve listened again
	// were first posted while serve was down: those stored were recovered
	// by kube-apiserver's retries. Those of the 2 s before the kill that
	// were lost were in its buffer, or in a post serve did not answer.
	for _, o := range outages {
		var down, recovered, lost, lostBefore int
		end := o.ListeningAgainNS - int64(time.Second)
		for k, e := range file {
			_, stored := served[k]
			switch {
			case e.StageNS >= o.KilledNS && e.StageNS < end:
				down++
				if stored {
					recovered++
				} else {
					lost++
				}
			case e.StageNS >= o.KilledNS-2*int64(time.Second) && e.StageNS < o.KilledNS && !stored:
				lostBefore++
			}
		}
		t.Logf("outage %d (SIGKILL, started again %d s later, listening %.1f s after the kill): %d events first posted "+
			"while serve was down: %d recovered by kube-apiserver's retries, %d lost; %d events of the 2 s before the kill lost",
			o.Outage, o.PauseS, float64(o.ListeningAgainNS-o.KilledNS)/1e9, down, recovered, lost, lostBefore)
	}
}

// TestAttributionWebhook: the webhook fixture's user actions are
// attributed with precision and recall 1, from the file (the events are
// the same in serve's database: TestWebhookFixtureMatchesFile).
func TestAttributionWebhook(t *testing.T) {
	t.Parallel()
	checkAttribution(t, "webhook", 1, 1)
}
