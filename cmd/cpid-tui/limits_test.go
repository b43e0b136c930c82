package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
)

// userCreate is an audit line of a user creating ConfigMap cm-i.
func userCreate(i int) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"00000000-0000-4000-8000-%012d","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps","verb":"create","user":{"username":"alice"},"userAgent":"kubectl/v1.35.0","objectRef":{"resource":"configmaps","namespace":"default","name":"cm-%d","apiVersion":"v1"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-11-22T16:%02d:%02d.000000Z","stageTimestamp":"2026-11-22T16:%02d:%02d.001000Z"}`,
		i, i, i/60, i%60, i/60, i%60)
}

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustRun(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, out, errOut := runCmd(t, nil, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out, errOut
}

// TestBinaryLine: a NUL byte makes its line bad, reported with file:line;
// the valid lines around it, in the file's first 512 bytes too, are
// stored.
func TestBinaryLine(t *testing.T) {
	dir := t.TempDir()
	db, log := filepath.Join(dir, "cpid.db"), filepath.Join(dir, "audit.log")
	writeLines(t, log, userCreate(1), "\x00\x01\x02core dump", userCreate(2))
	out, _ := mustRun(t, "ingest", "--db", db, log)
	if !strings.Contains(out, "2 new audit events") || !strings.Contains(out, "bad lines: 1") ||
		!strings.Contains(out, log+":2: binary content") {
		t.Errorf("ingest summary:\n%s\nwant 2 events stored and %s:2 a bad line", out, log)
	}
}

// TestQueryLimit: --limit 0 lists every change, a negative one is a usage
// error.
func TestQueryLimit(t *testing.T) {
	dir := t.TempDir()
	db, log := filepath.Join(dir, "cpid.db"), filepath.Join(dir, "audit.log")
	var lines []string
	for i := range 130 {
		lines = append(lines, userCreate(i))
	}
	writeLines(t, log, lines...)
	mustRun(t, "ingest", "--db", db, log)
	mustRun(t, "reconstruct", "--db", db)
	count := func(limit string) int {
		out, _ := mustRun(t, "query", "changes", "--db", db, "--output", "csv", "--limit", limit)
		return strings.Count(out, "\n") - 1
	}
	if n := count("0"); n != 130 {
		t.Errorf("--limit 0 lists %d changes, want all 130", n)
	}
	if n := count("7"); n != 7 {
		t.Errorf("--limit 7 lists %d changes", n)
	}
	code, out, errOut := runCmd(t, nil, "query", "changes", "--db", db, "--limit", "-1")
	if code != 2 || out != "" || !strings.Contains(errOut, "--limit -1") {
		t.Errorf("--limit -1: exit %d, stdout %q, stderr %q; want a usage error", code, out, errOut)
	}
}

// TestSymlinkedDB: a --db that is a symbolic link is followed and said so;
// one to nothing is refused, creating nothing where it points.
func TestSymlinkedDB(t *testing.T) {
	dir := t.TempDir()
	real, link, log := filepath.Join(dir, "real.db"), filepath.Join(dir, "link.db"), filepath.Join(dir, "audit.log")
	writeLines(t, log, userCreate(1))
	mustRun(t, "ingest", "--db", real, log)
	os.Symlink(real, link)
	_, errOut := mustRun(t, "ingest", "--db", link, log)
	if !strings.Contains(errOut, "--db "+link+" is a symbolic link: opening "+real) {
		t.Errorf("stderr %q: want the link and its target", errOut)
	}
	_, errOut = mustRun(t, "query", "changes", "--db", link)
	if !strings.Contains(errOut, "is a symbolic link") {
		t.Errorf("query stderr %q: want the link and its target", errOut)
	}

	nowhere, dangling := filepath.Join(dir, "elsewhere", "planted"), filepath.Join(dir, "dangling.db")
	os.Mkdir(filepath.Dir(nowhere), 0o700)
	os.Symlink(nowhere, dangling)
	code, _, errOut := runCmd(t, nil, "ingest", "--db", dangling, log)
	if code != 1 || !strings.Contains(errOut, "symbolic link to nothing") {
		t.Errorf("dangling link: exit %d, stderr %q; want 1 and a refusal", code, errOut)
	}
	if _, err := os.Stat(nowhere); !os.IsNotExist(err) {
		t.Errorf("a file was created where the dangling link points")
	}
}

// lockedBuffer is a stderr that tests read while a command writes it.
type lockedBuffer struct {
	mu   sync.Mutex
	b    strings.Builder
	wake chan struct{} // see woken
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake != nil {
		select {
		case l.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
	return l.b.Write(p)
}

// woken is a channel told of the writes from now on (waitOn's wake).
func (l *lockedBuffer) woken() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake == nil {
		l.wake = make(chan struct{}, 1)
	}
	return l.wake
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startTail runs cpid-tui tail in the background until the returned
// function is called; that returns its exit code. It runs in this process,
// and the tests read its database meanwhile with the pure-Go SQLite
// (openDB, tail --status, the commands that read): it opens a SQLite
// database with that library too (tailAccess), where cpid-tui tail takes
// SQLite in C, and so do the commands that read (readAccess). The tests that
// run it as a process of its own (the torture, fleet and concurrent-open
// tests) run it as cpid-tui does.
func startTail(t *testing.T, stderr io.Writer, args ...string) func() int {
	t.Helper()
	was, wasRead := tailAccess, readAccess
	t.Cleanup(func() { tailAccess, readAccess = was, wasRead })
	tailAccess, readAccess = readWrite, readOnlyPure
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr}, append([]string{"tail", "--poll", "10ms", "--reconstruct-every", "0"}, args...))
	}()
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	return stop
}

// eventually polls cond until it holds (waitUntil).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitUntil(t, what, cond, nil)
}

func auditEvents(t *testing.T, db string) int {
	t.Helper()
	var n int
	if err := openDB(t, db).QueryRow(`SELECT count(*) FROM audit_events`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// TestTailWaitsForMissing: tail on a log that does not exist yet says, once,
// that it waits, and reads it once it appears.
func TestTailWaitsForMissing(t *testing.T) {
	dir := t.TempDir()
	db, log := filepath.Join(dir, "cpid.db"), filepath.Join(dir, "audit", "audit.log")
	var stderr lockedBuffer
	stop := startTail(t, &stderr, "--db", db, "--audit-log", log, "--controller-log", filepath.Join(dir, "pods", "*.log"))
	waitOn(t, "the waiting notices", func() bool {
		s := stderr.String()
		return strings.Contains(s, log+": no such file yet: waiting for it to appear") &&
			strings.Contains(s, "pods/*.log: no file matches it yet: waiting")
	}, stderr.woken, nil)
	os.Mkdir(filepath.Dir(log), 0o700)
	writeLines(t, log, userCreate(1))
	waitOn(t, "the log's event stored", func() bool { return auditEvents(t, db) == 1 }, caughtUp, nil)
	if code := stop(); code != 0 {
		t.Errorf("tail exit %d: %s", code, stderr.String())
	}
	for _, s := range []string{"waiting for it to appear", "waiting for one to appear"} {
		if n := strings.Count(stderr.String(), s); n != 1 {
			t.Errorf("%q said %d times, want once:\n%s", s, n, stderr.String())
		}
	}
}

// fullDisk is the real store, full for its first writes: they fail as a
// write on a full disk does.
type fullDisk struct {
	store
	mu   sync.Mutex
	left int
}

func (f *fullDisk) Write(ctx context.Context, b *cpid.Batch) (cpid.Written, error) {
	f.mu.Lock()
	full := f.left > 0
	f.left--
	f.mu.Unlock()
	if full {
		return cpid.Written{}, fmt.Errorf("write %s: %w", "cpid.db-wal", syscall.ENOSPC)
	}
	return f.store.Write(ctx, b)
}

// TestTailWaitsOutFullDisk: a store that reports a full disk makes tail
// say so and try again, not exit; what it read is stored once there is
// room.
func TestTailWaitsOutFullDisk(t *testing.T) {
	dir := t.TempDir()
	db, log := filepath.Join(dir, "cpid.db"), filepath.Join(dir, "audit.log")
	writeLines(t, log, userCreate(1), userCreate(2))
	defer func(s func(store) cpid.RecordWriter, e time.Duration) { tailSink, tailRetryEvery = s, e }(tailSink, tailRetryEvery)
	tailSink = func(st store) cpid.RecordWriter { return &fullDisk{store: st, left: 3} }
	tailRetryEvery = 10 * time.Millisecond
	var stderr lockedBuffer
	stop := startTail(t, &stderr, "--db", db, "--audit-log", log)
	waitOn(t, "the events stored", func() bool { return auditEvents(t, db) == 2 }, caughtUp, nil)
	if code := stop(); code != 0 {
		t.Errorf("tail exit %d: %s", code, stderr.String())
	}
	s := stderr.String()
	if !strings.Contains(s, "no space left on device: full, trying again every 10ms") || strings.Count(s, "trying again") != 1 ||
		!strings.Contains(s, "stored again after waiting") {
		t.Errorf("stderr:\n%s\nwant the full disk said once, and the recovery", s)
	}
}

// TestLongLineMemory: storing an audit event of 64 MiB (one huge
// ConfigMap) costs the whole ingest process at most about three times the
// line on top of what it needs anyway: the line is read (held in parts,
// then joined), its bodies are not copied again, and they are compressed
// into a block of their own. Before bodies were compressed, SQLite's copies
// of the text made it 8 times.
func TestLongLineMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS from /proc")
	}
	dir := t.TempDir()
	const size = 64 << 20
	body := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"big","namespace":"default","uid":"u","resourceVersion":"5"},"data":{"a":"` +
		strings.Repeat("x", size) + `"}}`
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"11111111-2222-3333-4444-555555555555",` +
		`"stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps","verb":"create","user":{"username":"kubernetes-admin"},` +
		`"sourceIPs":["127.0.0.1"],"userAgent":"kubectl","objectRef":{"resource":"configmaps","namespace":"default","name":"big","apiVersion":"v1"},` +
		`"responseStatus":{"metadata":{},"code":201},"responseObject":` + body +
		`,"requestReceivedTimestamp":"2026-11-22T16:26:54.000000Z","stageTimestamp":"2026-11-22T16:26:54.100000Z"}` + "\n"
	logf := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(logf, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CPID_HELPER_HWM", "1")
	peak := func(args ...string) int64 {
		p := helper(t, "cpid-tui", args...)
		if err := p.Wait(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, p.stderr.String())
		}
		var kb int64
		if _, err := fmt.Sscanf(p.stderr.String()[strings.Index(p.stderr.String(), "helper-peak-rss:"):], "helper-peak-rss: %d kB", &kb); err != nil {
			t.Fatalf("no peak RSS from the helper: %v\n%s", err, p.stderr.String())
		}
		return kb << 10
	}
	db := filepath.Join(dir, "cpid.db")
	// The same process storing a small bundle: what ingest needs anyway.
	base := peak("ingest", "--db", filepath.Join(dir, "base.db"), basicBundle)
	got := peak("ingest", "--max-line", "100000000", "--db", db, logf)
	t.Logf("peak RSS: %d MiB for a line of %d MiB (%d MiB for the basic fixture)", got>>20, len(line)>>20, base>>20)
	if limit := base + 3*int64(len(line)) + 32<<20; got > limit {
		t.Errorf("peak RSS %d MiB, more than %d MiB (the basic fixture's and 3 times the line)", got>>20, limit>>20)
	}
	if code, out, _ := runCmd(t, nil, "sql", "--db", db, "--output", "csv", "select length(response_object) from audit_bodies where response_object is not null"); code != 0 ||
		out != fmt.Sprintf("length(response_object)\n%d\n", len(body)) {
		t.Errorf("the body stored: %q", out)
	}
}

// gzipOf compresses b at the best compression.
func gzipOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestIngestBombs: a gzip bomb, one layer (64 MiB of newlines, about
// 1025 times smaller) or two (1 GiB in under 2 KB), is refused as unreadable,
// exit 1, naming the input; past the old floor of 256 MiB the two-layer
// one took 41 s (issue 30), and the one-layer one was read to its end. A
// bundle past --max-members is refused the same way, what was read of it
// before stored.
func TestIngestBombs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	member := gzipOf(t, bytes.Repeat([]byte("\n"), 8<<20))
	one := filepath.Join(dir, "one.log.gz")
	two := filepath.Join(dir, "two.log.gz")
	os.WriteFile(one, bytes.Repeat(member, 8), 0o600)
	os.WriteFile(two, gzipOf(t, bytes.Repeat(member, 128)), 0o600)
	for _, path := range []string{one, two} {
		code, _, errOut := runCmd(t, nil, "ingest", "-q", "--db", filepath.Join(dir, "cpid.db"), path)
		if code != 1 || !strings.Contains(errOut, path+": decompressed size exceeds the inflate limit") {
			t.Errorf("ingest %s: exit %d, stderr %q; want 1 and the inflate limit", filepath.Base(path), code, errOut)
		}
	}

	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := range 3 {
		line := userCreate(i) + "\n"
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("audit/audit-%d.log", i), Mode: 0o644, Size: int64(len(line)), Typeflag: tar.TypeReg})
		tw.Write([]byte(line))
	}
	tw.Close()
	bundle := filepath.Join(dir, "bundle.tar")
	os.WriteFile(bundle, b.Bytes(), 0o600)
	code, out, errOut := runCmd(t, nil, "ingest", "--db", filepath.Join(dir, "bundle.db"), "--max-members", "2", bundle)
	if code != 1 || !strings.Contains(errOut, bundle+": tar bundle has too many members: more than 2") ||
		!strings.Contains(out, "2 new audit events") {
		t.Errorf("--max-members 2: exit %d\n%s%s\nwant 1, the bundle named and its first 2 events stored", code, out, errOut)
	}
}

// TestProgressLine: the progress line says what was read from disk and
// what it decoded to; a small compressed input read whole was "0.0 MiB
// read (100% of 0.0 MiB)" while its bytes were still being decoded.
func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	printProgress(&b, ingest.Progress{Elapsed: 2 * time.Second, DiskBytes: 25231, TotalDisk: 25231, Bytes: 300 << 20,
		Records: 10, File: "nested.gz"})
	want := "ingest: read 24.6 KiB of 24.6 KiB (100%), 300.0 MiB decoded, 157.3 MB/s, 10 records, 5 records/s, nested.gz\n"
	if b.String() != want {
		t.Errorf("progress line\n%q, want\n%q", b.String(), want)
	}
	b.Reset()
	printProgress(&b, ingest.Progress{Elapsed: time.Second, DiskBytes: 3 << 30, Bytes: 3 << 30, File: "-"})
	if want := "ingest: read 3.0 GiB, 3.0 GiB decoded,"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("progress line of standard input\n%q, want it to start with\n%q", b.String(), want)
	}
}
