package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/cpid-dev/cpid"
)

// The torture tests run the tailer (and the writers) as real processes:
// this test binary started again with CPID_HELPER set, see
// TestHelperProcess. The tailer is SIGKILLed at random moments while a
// writer rotates its log as fast as it can; afterwards every line must be
// in the database exactly once, and no line may have been read twice.

// TestHelperProcess is not a test: it is the entry point of the helper
// processes (cpid-tui itself, and the log writers).
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("CPID_HELPER")
	if mode == "" {
		t.Skip("helper process entry point")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	code := 0
	switch mode {
	case "cpid-tui":
		// The tests wait on these lines instead of polling the database.
		tailIdle = func() { fmt.Fprintln(os.Stderr, "helper: tail caught up") }
		sink := tailSink
		tailSink = func(st store) cpid.RecordWriter { return sayCommits{sink(st)} }
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code = run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, args)
		stop()
		if os.Getenv("CPID_HELPER_HWM") != "" {
			// The peak RSS of this process since its exec (rusage's
			// maxrss would count the parent's at fork).
			status, _ := os.ReadFile("/proc/self/status")
			for _, l := range strings.Split(string(status), "\n") {
				if strings.HasPrefix(l, "VmHWM:") {
					fmt.Fprintln(os.Stderr, "helper-peak-rss:", strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")))
				}
			}
		}
	default:
		n, _ := strconv.Atoi(args[1])
		var err error
		switch mode {
		case "lumberjack":
			err = writeLumberjack(args[0], n)
		case "kubelet":
			err = writeKubelet(args[0], n)
		case "copytruncate":
			err = writeCopytruncate(args[0], n)
		default:
			err = fmt.Errorf("unknown helper %q", mode)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func init() {
	tailIdle = tailerIdle // TestHelperProcess says it on stderr instead
}

// idle is closed, and replaced, each time a tailer of this process caught
// up (tailIdle): a test that waits for what a tailer stores (caughtUp)
// looks again then.
var idle struct {
	sync.Mutex
	c chan struct{}
}

func tailerIdle() {
	idle.Lock()
	defer idle.Unlock()
	if idle.c != nil {
		close(idle.c)
	}
	idle.c = make(chan struct{})
}

// caughtUp is the channel closed the next time a tailer of this process
// catches up.
func caughtUp() <-chan struct{} {
	idle.Lock()
	defer idle.Unlock()
	if idle.c == nil {
		idle.c = make(chan struct{})
	}
	return idle.c
}

// sayCommits says on stderr that a batch was stored, after each.
type sayCommits struct{ cpid.RecordWriter }

func (s sayCommits) Write(ctx context.Context, b *cpid.Batch) (cpid.Written, error) {
	n, err := s.RecordWriter.Write(ctx, b)
	if err == nil {
		fmt.Fprintln(os.Stderr, "helper: committed")
	}
	return n, err
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader, which tells
// wake (when set, with room for one) of every write.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	wake chan struct{}
	done chan struct{} // closed when copyFrom reached the end of its reader
}

// copyFrom reads r into s until its end, then closes done and wakes its
// waiters: a helper process's stderr pipe, whose end is the process's
// exit.
func (s *syncBuffer) copyFrom(r io.ReadCloser) {
	s.done = make(chan struct{})
	go func() {
		io.Copy(s, r)
		r.Close()
		close(s.done)
		s.notify()
	}()
}

// ended reports whether copyFrom reached the end of its reader.
func (s *syncBuffer) ended() bool {
	select {
	case <-s.done:
		return true
	default: // not yet, or no copyFrom (a nil done)
		return false
	}
}

// notify tells wake, when set, of a change.
func (s *syncBuffer) notify() {
	if s.wake != nil {
		select {
		case s.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify()
	return s.b.Write(p)
}

// woken is the channel told of the writes (nil: none).
func (s *syncBuffer) woken() <-chan struct{} { return s.wake }

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int { return len(s.String()) }

// proc is a helper process and what it wrote on stderr.
type proc struct {
	*exec.Cmd
	stderr *syncBuffer
}

// waitFor waits until the process wrote s on stderr; a process that
// exits first fails the test.
func (p proc) waitFor(t *testing.T, s string) {
	t.Helper()
	waitOn(t, fmt.Sprintf("%v to write %q", p.Args, s), func() bool {
		return p.stderr.ended() || strings.Contains(p.stderr.String(), s)
	}, p.stderr.woken, func() string { return "stderr: " + tail(p.stderr.String(), 2048) })
	if !strings.Contains(p.stderr.String(), s) {
		t.Fatalf("%v exited before it wrote %q; stderr: %s", p.Args, s, tail(p.stderr.String(), 2048))
	}
}

// Wait waits for the process to exit and for everything it wrote on
// stderr to be read.
func (p proc) Wait() error {
	err := p.Cmd.Wait()
	<-p.stderr.done
	return err
}

// helper starts this test binary as the helper process mode.
func helper(t *testing.T, mode string, args ...string) proc {
	t.Helper()
	return helperWaking(t, make(chan struct{}, 1), mode, args...)
}

// helperWaking is helper with wake told of every write on its stderr (a
// channel that several processes may share).
func helperWaking(t *testing.T, wake chan struct{}, mode string, args ...string) proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "CPID_HELPER="+mode)
	stderr := &syncBuffer{wake: wake}
	// A pipe of its own, not exec's copy of it: its end tells that the
	// process exited (waitFor), with everything it wrote read.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	cmd.Stdout = io.Discard
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	stderr.copyFrom(r)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		<-stderr.done
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s %v stderr (last 2 KB): %s", mode, args, tail(stderr.String(), 4096))
		}
	})
	return proc{cmd, stderr}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var auditIDField = regexp.MustCompile(`"auditID":"[^"]*"`)

// tortureID is the auditID of the writer's i-th line.
func tortureID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// realLines returns the real fixture's audit lines, each a template.
func realLines(dir string) ([][]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "audit", "*"))
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(f, ".gz") {
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
}

// tortureLines calls fn with n real-shaped audit lines (newline included),
// each with its own auditID.
func tortureLines(n int, fn func(i int, line []byte) error) error {
	ts, err := realLines(basicBundle)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		l := auditIDField.ReplaceAll(ts[i%len(ts)], []byte(`"auditID":"`+tortureID(i)+`"`))
		if err := fn(i, append(l, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// writeLumberjack writes as kube-apiserver does with --audit-log-maxsize=1
// --audit-log-compress: lumberjack renames the full file, creates a new one
// and gzips the backup in the background.
func writeLumberjack(dir string, n int) error {
	lj := &lumberjack.Logger{Filename: filepath.Join(dir, "audit.log"), MaxSize: 1, Compress: true}
	if err := tortureLines(n, func(_ int, l []byte) error { _, err := lj.Write(l); return err }); err != nil {
		return err
	}
	if err := lj.Close(); err != nil {
		return err
	}
	// Let the background compression finish: a plain backup is left only
	// while its .gz is being written. Looked at again at each change in
	// dir (watched before the first look); no deadline: the test that
	// started this helper waits for it under its own -timeout.
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return err
	}
	for {
		plain, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
		if len(plain) == 0 {
			return nil
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				return err
			}
		}
	}
}

// writeKubelet writes CRI lines (long ones split into partials, as the
// runtime does at 16 KiB) and rotates like the kubelet: 0.log renamed to
// 0.log.<time>, a new 0.log, older backups gzipped (into NAME.tmp, then
// renamed) by another goroutine.
func writeKubelet(dir string, n int) error {
	live := filepath.Join(dir, "0.log")
	open := func() (*os.File, error) {
		return os.OpenFile(live, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	}
	f, err := open()
	if err != nil {
		return err
	}
	backups := make(chan string, 1000)
	compressed := make(chan error, 1)
	go func() {
		var prev string
		for b := range backups {
			if prev != "" {
				if err := gzipVia(prev, ".tmp"); err != nil {
					compressed <- err
					return
				}
			}
			prev = b
		}
		compressed <- nil
	}()
	var size int64
	stamp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := time.Now()
	reopen := false
	err = tortureLines(n, func(i int, l []byte) error {
		var b []byte
		ts := at.Add(time.Duration(i) * time.Microsecond).UTC().Format(time.RFC3339Nano)
		for len(l) > 16<<10 {
			b = fmt.Appendf(b, "%s stdout P %s\n", ts, l[:16<<10])
			l = l[16<<10:]
		}
		b = fmt.Appendf(b, "%s stdout F %s", ts, l)
		if _, err := f.Write(b); err != nil {
			return err
		}
		if reopen {
			// The runtime wrote that line to the renamed file: it reopens
			// only when the kubelet asks it to, after the rename.
			f.Close()
			if f, err = open(); err != nil {
				return err
			}
			reopen = false
		}
		if size += int64(len(b)); size < 1<<20 {
			return nil
		}
		stamp = stamp.Add(time.Second)
		backup := live + "." + stamp.Format("20060102-150405")
		if err := os.Rename(live, backup); err != nil {
			return err
		}
		size, reopen = 0, true
		backups <- backup
		return nil
	})
	close(backups)
	if cerr := <-compressed; err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeCopytruncate writes app.log and rotates it like logrotate's
// copytruncate: app.log.N shifted to N+1, app.log.2 gzipped, app.log copied
// to app.log.1, then app.log truncated in place.
func writeCopytruncate(dir string, n int) error {
	live := filepath.Join(dir, "app.log")
	f, err := os.OpenFile(live, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var size int64
	rotations := 0
	return tortureLines(n, func(i int, l []byte) error {
		if _, err := f.Write(l); err != nil {
			return err
		}
		if size += int64(len(l)); size < 1<<20 {
			return nil
		}
		size = 0
		rotations++
		for k := rotations; k >= 1; k-- {
			for _, ext := range []string{"", ".gz"} {
				from := fmt.Sprintf("%s.%d%s", live, k, ext)
				if _, err := os.Stat(from); err == nil {
					if err := os.Rename(from, fmt.Sprintf("%s.%d%s", live, k+1, ext)); err != nil {
						return err
					}
				}
			}
		}
		if _, err := os.Stat(live + ".2"); err == nil {
			if err := gzipVia(live+".2", ""); err != nil {
				return err
			}
		}
		b, err := os.ReadFile(live)
		if err != nil {
			return err
		}
		if err := os.WriteFile(live+".1", b, 0o644); err != nil {
			return err
		}
		return f.Truncate(0)
	})
}

// gzipVia compresses name into name.gz, through name.gz+tmp when tmp is
// set (then renamed), and removes name.
func gzipVia(name, tmp string) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(name+".gz"+tmp, z.Bytes(), 0o644); err != nil {
		return err
	}
	if tmp != "" {
		if err := os.Rename(name+".gz"+tmp, name+".gz"); err != nil {
			return err
		}
	}
	return os.Remove(name)
}

// storedIDs returns the stored auditIDs with their counts, and the summed
// counters of the tailed sources.
func storedIDs(t *testing.T, db string) (ids map[string]int, rows, dups, loss, bad int64) {
	t.Helper()
	d := openDB(t, db)
	r, err := d.Query(`SELECT audit_id FROM audit_events`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ids = map[string]int{}
	for r.Next() {
		var id string
		if err := r.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[id]++
		rows++
	}
	if err := d.QueryRow(`SELECT coalesce(sum(dups),0), coalesce(sum(possible_loss),0), coalesce(sum(bad),0) FROM tail_checkpoints`).Scan(&dups, &loss, &bad); err != nil {
		t.Fatal(err)
	}
	return ids, rows, dups, loss, bad
}

func countEvents(db *sql.DB) int {
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM audit_events`).Scan(&n); err != nil {
		return 0
	}
	return n
}

// torture runs writer mode over dir while the tailer follows follow, killing
// the tailer at random moments, then checks every line is stored once.
func torture(t *testing.T, mode, follow string, n int) (loss int64) {
	dir := t.TempDir()
	db := filepath.Join(dir, "cpid.db")
	tailArgs := []string{"tail", "--db", db, "--audit-log", filepath.Join(dir, follow), "--poll", "50ms", "--reconstruct-every", "0", "--batch", "1000"}
	writer := helper(t, mode, dir, strconv.Itoa(n))
	writerDone := make(chan error, 1)
	go func() { writerDone <- writer.Wait() }()

	// The kill moments are random (the seed is logged): the torture's
	// point is that no moment loses or duplicates a line, so they pace
	// the test and decide nothing.
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill moments: seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	var at []int // events stored at each kill
	kills := 0
	writing := true
	for kills < 5 || writing {
		tl := helper(t, "cpid-tui", tailArgs...)
		// A random moment: anywhere from opening the database to the
		// middle of a commit, once the tailer has stored k batches (it
		// says so, see TestHelperProcess) or caught up. Counted from its
		// start only, the moment came, on a loaded machine, before the
		// tailer had stored anything, at every kill.
		k := rng.IntN(4)
		waitOn(t, fmt.Sprintf("the tailer to store %d batches or catch up", k), func() bool {
			s := tl.stderr.String()
			return strings.Count(s, "helper: committed") >= k || strings.Contains(s, "helper: tail caught up")
		}, tl.stderr.woken, func() string { return "stderr: " + tail(tl.stderr.String(), 2048) })
		select {
		case err := <-writerDone:
			if err != nil {
				t.Fatalf("writer: %v", err)
			}
			writing = false
		default:
		}
		<-time.After(time.Duration(rng.IntN(100)) * time.Millisecond)
		tl.Process.Signal(syscall.SIGKILL)
		tl.Wait()
		if r, err := sql.Open("sqlite", "file:"+db+"?_pragma=query_only(1)"); err == nil {
			at = append(at, countEvents(r))
			r.Close()
		}
		// No cap on the kills: on a loaded machine the writer takes
		// longer, and a writer that hangs is the test's timeout's.
		kills++
	}
	t.Logf("%s: tailer SIGKILLed %d times, with %v of %d events stored", mode, kills, at, n)

	// The last run catches up and stops cleanly on SIGTERM. The events
	// stored are counted each time it says it caught up (it has then
	// stored all it read): the first time, all were written already.
	tl := helper(t, "cpid-tui", tailArgs...)
	r := openDB(t, db)
	waitOn(t, fmt.Sprintf("%d events stored", n), func() bool { return countEvents(r) >= n }, tl.stderr.woken,
		func() string {
			return fmt.Sprintf("%d stored; stderr: %s", countEvents(r), tail(tl.stderr.String(), 2048))
		})
	tl.Process.Signal(syscall.SIGTERM)
	if err := tl.Wait(); err != nil {
		t.Errorf("tailer after SIGTERM: %v", err)
	}

	ids, rows, dups, loss, bad := storedIDs(t, db)
	var missing, twice []string
	for i := 0; i < n; i++ {
		switch ids[tortureID(i)] {
		case 0:
			missing = append(missing, strconv.Itoa(i))
		case 1:
		default:
			twice = append(twice, strconv.Itoa(i))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		// Where the lines around the first gap were read from.
		m, _ := strconv.Atoi(missing[0])
		d := openDB(t, db)
		for _, i := range []int{m - 2, m - 1, m + len(missing) - 1, m + len(missing)} {
			var file string
			var line int
			d.QueryRow(`SELECT f.path, e.line FROM audit_events e JOIN files f ON f.id = e.file_id WHERE audit_id = ?`, tortureID(i)).Scan(&file, &line)
			t.Logf("line %d was read from %s:%d", i, filepath.Base(file), line)
		}
	}
	if len(missing) > 0 || len(twice) > 0 || rows != int64(n) {
		t.Errorf("%d rows for %d lines: %d missing %v, %d stored more than once %v",
			rows, n, len(missing), first(missing, 20), len(twice), first(twice, 20))
	}
	if dups != 0 || bad != 0 {
		t.Errorf("lines read twice: %d, bad lines: %d; want none", dups, bad)
	}
	// --status reads the same counters from the database.
	code, out, errOut := runCmd(t, nil, "tail", "--db", db, "--status", "--output", "json")
	var status []struct {
		Source  string `json:"source"`
		Records int64  `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &status); code != 0 || err != nil || len(status) != 1 || status[0].Records != int64(n) {
		t.Errorf("tail --status: exit %d, %v, %s %s", code, err, out, errOut)
	}
	return loss
}

func TestLiveUsage(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"tail without a log", []string{"tail", "--db", "x.db"}, "give --audit-log"},
		{"serve with a key and no certificate", []string{"serve", "--tls-key", "k"}, "go together"},
		{"serve verifying clients without TLS", []string{"serve", "--client-ca", "ca.crt"}, "needs TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, nil, c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

func TestTailTortureLumberjack(t *testing.T) {
	t.Parallel()
	if loss := torture(t, "lumberjack", "audit.log", 30000); loss != 0 {
		t.Errorf("possible losses: %d, want 0", loss)
	}
}

func TestTailTortureKubelet(t *testing.T) {
	t.Parallel()
	if loss := torture(t, "kubelet", "0.log", 30000); loss != 0 {
		t.Errorf("possible losses: %d, want 0", loss)
	}
}

// TestTailTortureCopytruncate: copytruncate has a window in which writes
// are lost (between the copy and the truncation); this writer never writes
// in it, so nothing may be missing, and every truncation the tailer saw
// live is counted as a possible loss.
func TestTailTortureCopytruncate(t *testing.T) {
	t.Parallel()
	loss := torture(t, "copytruncate", "app.log", 30000)
	t.Logf("possible losses counted (truncations seen live): %d", loss)
}

// TestTailStatusClusters: without --cluster, tail --status shows the logs
// followed for every cluster, each with its cluster; with --cluster, that
// cluster's only. Before, it showed the default cluster's only: nothing
// for a database written with --cluster NAME.
func TestTailStatusClusters(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "cpid.db")
	logs := map[string]string{"prod": filepath.Join(dir, "prod.log"), "default": filepath.Join(dir, "default.log")}
	writeLines(t, logs["prod"], userCreate(1), userCreate(2))
	writeLines(t, logs["default"], userCreate(3))
	for _, c := range []struct{ cluster, log string }{{"prod", logs["prod"]}, {"", logs["default"]}} {
		args := []string{"--db", db, "--audit-log", c.log}
		if c.cluster != "" {
			args = append(args, "--cluster", c.cluster)
		}
		var stderr lockedBuffer
		stop := startTail(t, &stderr, args...)
		waitOn(t, "the events of "+c.log, func() bool {
			_, out, _ := runCmd(t, nil, "tail", "--db", db, "--cluster", cmp.Or(c.cluster, "default"), "--status", "-o", "json")
			return strings.Contains(out, `"records": `+map[string]string{"prod": "2", "": "1"}[c.cluster])
		}, caughtUp, nil)
		if code := stop(); code != 0 {
			t.Fatalf("tail %v: exit %d\n%s", args, code, stderr.String())
		}
	}

	type source struct {
		Cluster string `json:"cluster"`
		Source  string `json:"source"`
		Records int64  `json:"records"`
	}
	status := func(args ...string) []source {
		t.Helper()
		code, out, errOut := runCmd(t, nil, append([]string{"tail", "--db", db, "--status", "-o", "json"}, args...)...)
		var got []source
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("tail --status %v: exit %d, %v\n%s%s", args, code, err, out, errOut)
		}
		return got
	}
	all := []source{{"default", logs["default"], 1}, {"prod", logs["prod"], 2}}
	if got := status(); !slices.Equal(got, all) {
		t.Errorf("tail --status: %+v, want %+v", got, all)
	}
	if got := status("--cluster", "prod"); !slices.Equal(got, all[1:]) {
		t.Errorf("tail --status --cluster prod: %+v, want %+v", got, all[1:])
	}
	if got := status("--cluster", "default"); !slices.Equal(got, all[:1]) {
		t.Errorf("tail --status --cluster default: %+v, want %+v", got, all[:1])
	}
	// The table names the cluster of each log.
	code, out, errOut := runCmd(t, nil, "tail", "--db", db, "--status")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "CLUSTER ") ||
		!strings.HasPrefix(lines[1], "default ") || !strings.HasPrefix(lines[2], "prod ") || !strings.Contains(lines[2], "prod.log") {
		t.Errorf("tail --status: exit %d\n%s%s\nwant a CLUSTER column, the default cluster's log, then prod's", code, out, errOut)
	}
}
