package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/sqlite"
)

// auditTemplates are the real fixture's audit lines.
var auditTemplates = sync.OnceValues(func() ([][]byte, error) {
	dir := filepath.Join("..", "fixtures", "basic", "bundle", "audit")
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(n, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			if b, err = io.ReadAll(zr); err != nil {
				return nil, err
			}
		}
		out = append(out, bytes.Split(bytes.TrimSpace(b), []byte("\n"))...)
	}
	return out, nil
})

var auditIDRe = regexp.MustCompile(`"auditID":"[^"]*"`)

// auditID is the auditID of the i-th test line.
func auditID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// auditLine is a real-shaped audit line, distinct for each i, with its newline.
func auditLine(t testing.TB, i int) []byte {
	t.Helper()
	ts, err := auditTemplates()
	if err != nil {
		t.Fatal(err)
	}
	l := auditIDRe.ReplaceAll(ts[i%len(ts)], []byte(`"auditID":"`+auditID(i)+`"`))
	return append(l, '\n')
}

// auditLines are lines from to to-1.
func auditLines(t testing.TB, from, to int) []byte {
	var b []byte
	for i := from; i < to; i++ {
		b = append(b, auditLine(t, i)...)
	}
	return b
}

// harness runs a Tailer over a directory with a real store, and restarts
// it, in the testing/synctest bubble of its test (see bubble): the tailer
// polls (no fsnotify) on fake time, so what it stored after a poll does not
// depend on the machine's speed.
type harness struct {
	t      *testing.T
	dir    string
	db     string
	paths  []string
	r      *sql.DB
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	notes  []ingest.Notice
}

func newHarness(t *testing.T, paths ...string) *harness {
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, db: filepath.Join(dir, "cpid.db")}
	for _, p := range paths {
		h.paths = append(h.paths, filepath.Join(dir, p))
	}
	t.Cleanup(func() {
		if h.cancel != nil {
			h.stop()
		}
		if h.r != nil {
			h.r.Close()
		}
	})
	return h
}

func (h *harness) path(name string) string { return filepath.Join(h.dir, name) }

// start runs the tailer from the stored checkpoints.
func (h *harness) start() {
	h.t.Helper()
	st, err := sqlite.Open(context.Background(), h.db)
	if err != nil {
		h.t.Fatal(err)
	}
	srcs, err := st.TailSources(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	var resume []cpid.Checkpoint
	for _, s := range srcs {
		resume = append(resume, s.Checkpoint)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	tl := &ingest.Tailer{Sink: st, Paths: h.paths, Resume: resume, Poll: poll,
		Limits: ingest.Limits{MaxLine: 64 << 10},
		Notice: func(n ingest.Notice) { h.mu.Lock(); h.notes = append(h.notes, n); h.mu.Unlock() }}
	ingest.PollOnly(tl)
	go func() {
		err := tl.Run(ctx)
		st.Close()
		h.done <- err
	}()
	if h.r == nil {
		if h.r, err = sql.Open("sqlite", "file:"+h.db+"?_pragma=query_only(1)&_pragma=busy_timeout(10000)"); err != nil {
			h.t.Fatal(err)
		}
	}
}

// stop ends the tailer cleanly.
func (h *harness) stop() {
	h.t.Helper()
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) write(name string, b []byte) {
	h.t.Helper()
	f, err := os.OpenFile(h.path(name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		h.t.Fatal(err)
	}
	f.Close()
}

func (h *harness) rename(from, to string) {
	h.t.Helper()
	if err := os.Rename(h.path(from), h.path(to)); err != nil {
		h.t.Fatal(err)
	}
}

// gzip compresses a backup as lumberjack does: NAME.gz written, then NAME removed.
func (h *harness) gzip(name string) {
	h.t.Helper()
	b, err := os.ReadFile(h.path(name))
	if err != nil {
		h.t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(h.path(name+".gz"), z.Bytes(), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Remove(h.path(name)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) count() int {
	h.t.Helper()
	if h.r == nil {
		return 0
	}
	return h.countIn(h.r)
}

// countIn counts the audit events stored, as reader r sees them.
func (h *harness) countIn(r *sql.DB) int {
	h.t.Helper()
	var n int
	if err := r.QueryRow(`SELECT count(*) FROM audit_events`).Scan(&n); err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return 0
		}
		h.t.Fatal(err)
	}
	return n
}

// wait lets fake time pass until n audit events are stored (see until).
func (h *harness) wait(n int) {
	h.t.Helper()
	h.until(fmt.Sprintf("%d events stored", n), func() bool { return h.count() >= n },
		func() string { return fmt.Sprintf("%d stored; notices: %v", h.count(), h.notices()) })
}

func (h *harness) notices() []ingest.Notice {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ingest.Notice(nil), h.notes...)
}

// check asserts that exactly the lines in want are stored, each once, and
// the counters of the sources.
func (h *harness) check(want []int, dups, loss int64) {
	h.t.Helper()
	rows, err := h.r.Query(`SELECT audit_id FROM audit_events ORDER BY audit_id`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id string
		rows.Scan(&id)
		got = append(got, id)
	}
	var ws []string
	for _, i := range want {
		ws = append(ws, auditID(i))
	}
	sort.Strings(ws)
	if strings.Join(got, ",") != strings.Join(ws, ",") {
		h.t.Errorf("stored %d events, want %d:\n got %v\nwant %v", len(got), len(ws), short(got), short(ws))
	}
	var d, l int64
	if err := h.r.QueryRow(`SELECT coalesce(sum(dups), 0), coalesce(sum(possible_loss), 0) FROM tail_checkpoints`).Scan(&d, &l); err != nil {
		h.t.Fatal(err)
	}
	if d != dups || l != loss {
		h.t.Errorf("duplicates %d, possible losses %d; want %d and %d; notices: %v", d, l, dups, loss, h.notices())
	}
}

// poll is how often the tailers of these tests look at their logs, in the
// fake time of their bubble.
const poll = 10 * time.Millisecond

// bubble runs f in a testing/synctest bubble: time is fake there, and
// passes only while every goroutine of the bubble waits on its channels or
// timers. blocks' zstd codecs are made first, outside: made inside a
// bubble, their channels would belong to it, and the next bubble that
// stores a body would fail.
func bubble(t *testing.T, f func(t *testing.T)) {
	blocks.Compress(nil, nil)
	synctest.Test(t, f)
}

// look lets fake time pass to the tailer's next poll and waits until it is
// done: it sees the files as they are now, e.g. between two steps of a
// rotation. (The steps between two looks happen at one instant of the
// tailer's time: other interleavings are the torture tests', in
// cmd/cpid-tui, with real processes.)
func (h *harness) look() {
	h.t.Helper()
	time.Sleep(poll)
	synctest.Wait()
}

// until lets the bubble's fake time pass, a poll at a time, each step
// taken once every goroutine waits, until cond holds. A minute of fake time
// without it is a failure, whatever the machine's speed: the tailer had
// polled 6,000 times, with nothing else to do.
func (h *harness) until(what string, cond func() bool, detail func() string) {
	h.t.Helper()
	synctest.Wait()
	for start := time.Now(); !cond(); synctest.Wait() {
		if time.Since(start) > time.Minute {
			more := ""
			if detail != nil {
				more = ": " + detail()
			}
			h.t.Fatalf("%s: not after a minute of the tailer's time%s", what, more)
		}
		time.Sleep(poll) // fake time: returns once every goroutine waits
	}
}

func short(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strings.TrimLeft(x[len(x)-12:], "0")
	}
	return out
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// TestTailRotation drives the tailer through the ways logs are rotated,
// restarting it in between, and checks that every line is stored exactly
// once, without a line read twice, and that losses are counted.
func TestTailRotation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		follow     []string
		run        func(h *harness)
		want       []int
		dups, loss int64
	}{
		{
			name:   "partial last line waits for its newline, across a restart",
			follow: []string{"audit.log"},
			run: func(h *harness) {
				l1 := auditLine(h.t, 1)
				h.write("audit.log", append(auditLine(h.t, 0), l1[:100]...))
				h.start()
				h.wait(1)
				h.stop()
				if n := h.count(); n != 1 {
					h.t.Errorf("%d events stored before the newline, want 1", n)
				}
				h.write("audit.log", l1[100:])
				h.start()
				h.wait(2)
			},
			want: seq(0, 2),
		},
		{
			name:   "lumberjack: rename, new file, gzip of the backup",
			follow: []string{"audit.log"},
			run: func(h *harness) {
				h.write("audit.log", auditLines(h.t, 0, 10))
				h.start()
				h.wait(10)
				h.write("audit.log", auditLines(h.t, 10, 20))
				h.rename("audit.log", "audit-2026-01-01T00-00-00.000.log")
				h.look() // renamed with unread lines, no live file yet
				h.write("audit.log", auditLines(h.t, 20, 30))
				h.look()
				h.gzip("audit-2026-01-01T00-00-00.000.log")
				h.wait(30)
				h.stop()
				// Rotated twice while stopped, the checkpoint's file now a .gz.
				h.write("audit.log", auditLines(h.t, 30, 40))
				h.rename("audit.log", "audit-2026-01-01T00-00-01.000.log")
				h.gzip("audit-2026-01-01T00-00-01.000.log")
				h.write("audit.log", auditLines(h.t, 40, 50))
				h.rename("audit.log", "audit-2026-01-01T00-00-02.000.log")
				h.write("audit.log", auditLines(h.t, 50, 60))
				h.start()
				h.wait(60)
			},
			want: seq(0, 60),
		},
		{
			name:   "backups rotated before the first start are read oldest first",
			follow: []string{"audit.log"},
			run: func(h *harness) {
				h.write("audit-2026-01-01T00-00-00.000.log", auditLines(h.t, 0, 10))
				h.gzip("audit-2026-01-01T00-00-00.000.log")
				h.write("audit-2026-01-01T00-00-01.000.log", auditLines(h.t, 10, 20))
				h.start()
				h.wait(20)
				h.write("audit.log", auditLines(h.t, 20, 25))
				h.wait(25)
			},
			want: seq(0, 25),
		},
		{
			name:   "kubelet: CRI lines, rename to 0.log.<time>, writes to the old file until the new one appears",
			follow: []string{"0.log"},
			run: func(h *harness) {
				cri := func(from, to int) []byte {
					var b []byte
					for i := from; i < to; i++ {
						l := auditLine(h.t, i)
						// A long line as the runtime splits it: partial, then final.
						b = fmt.Appendf(b, "2026-01-01T00:00:00.000000001Z stdout P %s\n", l[:200])
						b = fmt.Appendf(b, "2026-01-01T00:00:00.000000002Z stdout F %s", l[200:])
					}
					return b
				}
				h.write("0.log", cri(0, 10))
				h.start()
				h.wait(10)
				h.rename("0.log", "0.log.20260101-000000")
				h.look() // no live file: the renamed one may still grow
				h.write("0.log.20260101-000000", cri(10, 15))
				h.look()
				h.write("0.log", cri(15, 20))
				h.wait(20)
				h.stop()
				h.gzip("0.log.20260101-000000")
				h.rename("0.log", "0.log.20260101-000010")
				h.write("0.log", cri(20, 30))
				h.start()
				h.wait(30)
			},
			want: seq(0, 30),
		},
		{
			name:   "copytruncate: the rest is read from the copy, the loss window counted",
			follow: []string{"app.log"},
			run: func(h *harness) {
				h.write("app.log", auditLines(h.t, 0, 10))
				h.start()
				h.wait(10)
				h.stop()
				h.write("app.log", auditLines(h.t, 10, 20))
				copyFile(h, "app.log", "app.log.1")
				os.Truncate(h.path("app.log"), 0)
				h.write("app.log", auditLines(h.t, 20, 30))
				h.start()
				h.wait(30)
				// Live: copy, truncate, write more than was read.
				h.write("app.log", auditLines(h.t, 30, 40))
				h.wait(40)
				copyFile(h, "app.log.1", "app.log.2")
				copyFile(h, "app.log", "app.log.1")
				h.look() // copied, not truncated yet
				os.Truncate(h.path("app.log"), 0)
				h.look() // truncated, nothing written yet
				h.write("app.log", auditLines(h.t, 40, 60))
				h.wait(60)
			},
			want: seq(0, 60),
			loss: 2, // the truncation while stopped, the one seen live
		},
		{
			name:   "a file that appears later, in a directory that appears later",
			follow: []string{"pods/*/c/0.log"},
			run: func(h *harness) {
				h.start()
				os.MkdirAll(h.path("pods/a/c"), 0o755)
				h.write("pods/a/c/0.log", auditLines(h.t, 0, 5))
				h.wait(5)
				os.MkdirAll(h.path("pods/b/c"), 0o755)
				h.write("pods/b/c/0.log", auditLines(h.t, 5, 10))
				h.wait(10)
			},
			want: seq(0, 10),
		},
		{
			name:   "the checkpoint's file pruned while stopped: the rest is read, the loss counted",
			follow: []string{"audit.log"},
			run: func(h *harness) {
				h.write("audit.log", auditLines(h.t, 0, 10))
				h.start()
				h.wait(10)
				h.stop()
				h.write("audit.log", auditLines(h.t, 10, 20))
				h.rename("audit.log", "audit-2026-01-01T00-00-00.000.log")
				h.write("audit.log", auditLines(h.t, 20, 30))
				os.Remove(h.path("audit-2026-01-01T00-00-00.000.log"))
				h.start()
				h.wait(20)
			},
			want: append(seq(0, 10), seq(20, 30)...),
			loss: 1,
		},
		{
			name:   "a line longer than the limit is skipped and counted",
			follow: []string{"audit.log"},
			run: func(h *harness) {
				long := append(bytes.Repeat([]byte("x"), 100<<10), '\n')
				h.write("audit.log", append(append(auditLine(h.t, 0), long...), auditLine(h.t, 1)...))
				h.start()
				h.wait(2)
			},
			want: seq(0, 2),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T) {
				h := newHarness(t, c.follow...)
				c.run(h)
				if h.cancel != nil {
					h.stop()
				}
				h.check(c.want, c.dups, c.loss)
			})
		})
	}
}

func copyFile(h *harness, from, to string) {
	h.t.Helper()
	b, err := os.ReadFile(h.path(from))
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(h.path(to), b, 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// TestTailReconstructs: the tailer brings the derived tables up to date on
// its interval, so a reader of the store sees changes while it tails: none
// before the interval has passed, some after it.
func TestTailReconstructs(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "audit.log")
		src := filepath.Join("..", "fixtures", "basic", "bundle", "audit")
		names, _ := filepath.Glob(filepath.Join(src, "*"))
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			h.write(filepath.Base(n), b)
		}
		st, err := sqlite.Open(context.Background(), h.db)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		const every = time.Second
		tl := &ingest.Tailer{Sink: st, Paths: h.paths, Poll: poll, ReconstructEvery: every,
			Reconstruct: func(ctx context.Context) error {
				_, err := reconstruct.Run(ctx, st, reconstruct.Options{Full: false, Family: ingest.Family})
				return err
			}}
		ingest.PollOnly(tl)
		go func() { done <- tl.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			st.Close()
		}()
		r, err := sql.Open("sqlite", "file:"+h.db+"?_pragma=query_only(1)")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		changes := func() int {
			var n int
			r.QueryRow(`SELECT count(*) FROM changes`).Scan(&n)
			return n
		}
		time.Sleep(every - poll) // fake time: the logs are read and stored
		synctest.Wait()
		if n, stored := changes(), h.countIn(r); n != 0 || stored == 0 {
			t.Errorf("before the interval passed: %d changes of %d events stored, want none of some", n, stored)
		}
		time.Sleep(2 * poll)
		synctest.Wait()
		if n := changes(); n == 0 {
			t.Error("no change reconstructed once the interval passed")
		}
	})
}
