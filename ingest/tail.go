package ingest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/fsnotify/fsnotify"
)

// Tailer follows live logs (kube-apiserver audit logs, controller JSON logs,
// CRI container logs) and stores every complete line once, through rotation
// by rename (lumberjack, kubelet), compression and pruning of backups,
// copytruncate, files that appear later and restarts. See
// docs/ARCHITECTURE.md for the cases and the checkpoint semantics.
//
// Each batch it hands to the Sink carries the Checkpoint of every log it
// covers, and the Sink stores both in one transaction: a crash at any
// instant loses nothing and duplicates nothing.
type Tailer struct {
	Sink cpid.RecordWriter
	// Paths are the live files to follow, or glob patterns of them. A
	// pattern is expanded again at every poll, so logs that appear later
	// are followed too. Symbolic links are resolved (kubelet's
	// /var/log/containers links to /var/log/pods, where rotation happens).
	Paths []string
	// Resume are the checkpoints stored by an earlier run; a log without
	// one is read from its oldest rotated backup.
	Resume []cpid.Checkpoint
	Limits Limits
	// Redaction removes credentials from audit bodies. Default
	// DefaultRedaction.
	Redaction *Redaction
	// BatchSize is the most records per transaction. Default 20000.
	// A batch also goes once its records hold BatchBytes of log lines
	// (default 16 MiB, about 8,000 of kube-apiserver's audit lines of 2
	// KiB), so that memory does not grow with the size of events. Only a
	// tailer that is behind fills a batch; one that keeps up commits what
	// it read, in groups (CommitEvery). Larger transactions cost less an
	// event (sqlite's BenchmarkWriteTxSize, SQLite in C, 200,000 events:
	// 37-40 µs of CPU an event in transactions of 5,000, 31-36 of 8,000,
	// 24-30 of 17,000), so a tailer that is behind catches up faster; the
	// price is memory (tailbench's peak RSS: 329 MiB with batches of 5,000
	// records, 395 MiB with 16 MiB, 570 MiB with 32 MiB: docs/TAIL.md).
	BatchSize  int
	BatchBytes int
	// CommitEvery is the least time between the starts of two
	// transactions while no batch is full (default 50ms; negative: none):
	// a log written steadily is committed in groups instead of a
	// transaction per wake-up. A transaction costs about the index pages
	// it touches, whatever its size (sqlite's BenchmarkWriteTxSize, on the
	// real fixture's events: 111 µs of CPU an event in transactions of
	// 200, 72 µs of 2,000, 57 µs of 20,000), so transactions of a few
	// records each fall behind a busy log. A full batch goes at once.
	CommitEvery time.Duration
	// Poll is how often every log is checked whatever fsnotify says
	// (some filesystems send no events; a full event queue loses them).
	// Default 1s.
	Poll time.Duration
	// Reconstruct, when set, is run every ReconstructEvery (default 10s),
	// so that readers of the store see fresh derived tables.
	Reconstruct      func(context.Context) error
	ReconstructEvery time.Duration
	// Metrics, when set, is updated as lines are read and batches stored.
	Metrics *Metrics
	// Notice, when set, is told about bad lines, truncations, possible
	// losses, logs waited for and errors that do not stop the tailer. It
	// is called from the goroutine of Run, and from the writing one about
	// a store that is full.
	Notice func(Notice)
	// Full, when set, reports a store error that waiting may cure (a full
	// disk): the batch is tried again every RetryEvery (default 5s), with
	// a notice, instead of ending Run. Reading goes on until the next
	// batch is ready, then waits for the store.
	Full       func(error) bool
	RetryEvery time.Duration
	// Down, when set, reports a store error of a database server that
	// went away (it crashed, restarts, cannot be reached): waited out as
	// Full is, with a notice that says the error only.
	Down func(error) bool
	// Idle, when set, is called from the goroutine of Run each time Run,
	// having read all there is for now, waits (for a log to change, a
	// timer, or the batch being stored), if lines were read or a batch was
	// stored since the last call (and once after the start): whatever it
	// stores is followed by a call, so a test looks at the store then
	// instead of polling it.
	Idle func()

	// pollOnly leaves fsnotify out, so that a test can run the tailer in a
	// testing/synctest bubble: fake time advances only while every
	// goroutine of the bubble waits on its channels or timers, which
	// fsnotify's reader of the inotify descriptor never does.
	pollOnly bool
}

// redaction is the tailer's Redaction or the default.
func (t *Tailer) redaction() *Redaction { return orDefault(t.Redaction) }

// ready is always ready.
var ready = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// readBudget is how many lines one log may read before the others get a
// turn.
const readBudget = 1000

// written is what the writing goroutine reports about one batch.
type written struct {
	b   *batch
	w   cpid.Written
	err error
	at  time.Time
}

// Run follows the logs until ctx ends, then stores what it read and
// returns nil. It returns an error when the store fails.
func (t *Tailer) Run(ctx context.Context) error {
	r := t.newRun()
	if !t.pollOnly {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			r.notice(Notice{Name: "fsnotify", Reason: fmt.Sprintf("%v: polling every %s only", err, r.poll)})
		} else {
			defer w.Close()
			r.w = w
		}
	}
	defer r.closeAll()
	r.expand()

	// One goroutine writes, so that reading goes on during a commit.
	wctx := context.WithoutCancel(ctx) // the last batch is stored after ctx ends
	go func() {
		for b := range r.toWrite {
			n, err := t.write(ctx, wctx, &b.Batch)
			r.done <- written{b: b, w: n, err: err, at: time.Now()}
		}
	}()
	defer close(r.toWrite)

	recon, stopRecon := r.reconstructTicker()
	defer stopRecon()
	rctx, rcancel := context.WithCancel(ctx)
	defer func() {
		rcancel()
		if r.reconRunning {
			<-r.reconDone
		}
	}()

	tick := time.NewTicker(r.poll)
	defer tick.Stop()
	defer r.group.Stop()
	busy := true // since the last call of Idle: lines read or a batch stored
	for r.storeErr == nil {
		progress := 0
		if ctx.Err() == nil {
			progress = r.readAll()
		}
		r.store(progress)
		if ctx.Err() != nil {
			return r.drain()
		}
		if busy = busy || progress > 0; busy && progress == 0 && t.Idle != nil {
			busy = false
			t.Idle()
		}
		// With more to read, only look at what else is ready; else wait.
		var more <-chan time.Time
		if progress > 0 {
			more = ready
		}
		var group <-chan time.Time
		if r.grouping {
			group = r.group.C
		}
		var events <-chan fsnotify.Event
		var errs <-chan error
		if r.w != nil {
			events, errs = r.w.Events, r.w.Errors
		}
		select {
		case <-more:
		case <-group:
			r.grouping = false
		case <-ctx.Done():
		case res := <-r.done:
			r.finished(res)
			busy = true
		case ev := <-events:
			r.changed(ev)
		case err := <-errs:
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				r.notice(Notice{Name: "fsnotify", Reason: "event queue overflowed: rescanning every log"})
			} else if err != nil {
				r.notice(Notice{Name: "fsnotify", Reason: err.Error()})
			}
			r.expand()
			r.wakeAll()
		case <-tick.C:
			r.expand()
			r.wakeAll()
		case <-recon:
			if !r.reconRunning {
				r.reconRunning = true
				go func() { r.reconDone <- t.Reconstruct(rctx) }()
			}
		case err := <-r.reconDone:
			r.reconRunning = false
			if err != nil && rctx.Err() == nil {
				r.notice(Notice{Name: "reconstruct", Reason: err.Error()})
			}
		}
	}
	if r.inflight {
		<-r.done
	}
	return r.storeErr
}

// write stores a batch, trying again while the store is full (Full) or its
// server is away (Down), and ctx lasts: nothing read is dropped, and the
// tailer outlives a full disk and a database server's crash.
func (t *Tailer) write(ctx, wctx context.Context, b *cpid.Batch) (cpid.Written, error) {
	every := t.RetryEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	for waited := false; ; waited = true {
		n, err := t.Sink.Write(wctx, b)
		full := err != nil && t.Full != nil && t.Full(err)
		if err == nil || !full && (t.Down == nil || !t.Down(err)) {
			if err == nil && waited && t.Notice != nil {
				t.Notice(Notice{Name: "store", Reason: "stored again after waiting"})
			}
			return n, err
		}
		if !waited && t.Notice != nil {
			why := fmt.Sprintf("%v: trying again every %s (Ctrl-C gives up)", err, every)
			if full {
				why = fmt.Sprintf("%v: full, trying again every %s (free some space; Ctrl-C gives up)", err, every)
			}
			t.Notice(Notice{Name: "store", Reason: why})
		}
		tm := time.NewTimer(every)
		select {
		case <-ctx.Done():
			tm.Stop()
			return n, err
		case <-tm.C:
		}
	}
}

// run is the state of one Tailer.Run, owned by its goroutine: the followed
// logs, the batch being filled and the one being written.
type run struct {
	t      *Tailer
	m      *Metrics
	size   int
	bytes  int // BatchBytes or its default
	poll   time.Duration
	notice func(Notice)
	lim    Limits
	resume map[string]cpid.Checkpoint

	w       *fsnotify.Watcher // nil: polling only
	follows map[string]*follow
	order   []*follow // by source
	watched map[string]bool
	waited  map[string]bool // patterns said to match nothing yet

	toWrite  chan *batch
	done     chan written
	spare    *batch
	inflight bool
	storeErr error

	// Group commit (CommitEvery): when the last batch was handed over,
	// and the timer that ends the wait for the next one while grouping.
	every    time.Duration
	lastSent time.Time
	group    *time.Timer
	grouping bool

	reconDone    chan error
	reconRunning bool
}

func (t *Tailer) newRun() *run {
	r := &run{t: t, m: t.Metrics, size: t.BatchSize, poll: t.Poll, notice: t.Notice, lim: t.Limits.withDefaults(),
		resume: map[string]cpid.Checkpoint{}, follows: map[string]*follow{}, watched: map[string]bool{}, waited: map[string]bool{},
		toWrite: make(chan *batch), done: make(chan written), spare: &batch{}, reconDone: make(chan error, 1),
		every: t.CommitEvery, group: time.NewTimer(time.Hour)}
	r.group.Stop()
	if r.every == 0 {
		r.every = 50 * time.Millisecond
	}
	if r.m == nil {
		r.m = &Metrics{}
	}
	if r.size <= 0 {
		r.size = 20000
	}
	if r.bytes = t.BatchBytes; r.bytes <= 0 {
		r.bytes = 16 << 20
	}
	if r.poll <= 0 {
		r.poll = time.Second
	}
	if r.notice == nil {
		r.notice = func(Notice) {}
	}
	for _, c := range t.Resume {
		r.resume[c.Source] = c
	}
	return r
}

// expand follows the sources that appeared, and watches their directories.
func (r *run) expand() {
	for _, src := range r.t.sources(r.notice, r.waitGlob) {
		if r.follows[src] != nil {
			continue
		}
		f := newFollow(src, r.resume[src], r.lim, r.t.redaction(), r.notice, r.m)
		r.follows[src] = f
		r.order = append(r.order, f)
		sort.Slice(r.order, func(i, j int) bool { return r.order[i].source < r.order[j].source })
	}
	for _, f := range r.order {
		if r.w != nil && !r.watched[f.dir] {
			if err := r.w.Add(f.dir); err == nil {
				r.watched[f.dir] = true
			}
		}
	}
}

func (r *run) wakeAll() {
	for _, f := range r.order {
		f.wake = true
	}
}

func (r *run) closeAll() {
	for _, f := range r.order {
		f.close()
	}
}

// changed wakes the logs of the directory an fsnotify event is about.
func (r *run) changed(ev fsnotify.Event) {
	dir := filepath.Dir(ev.Name)
	for _, f := range r.order {
		if f.dir == dir {
			f.wake = true
		}
	}
	if ev.Has(fsnotify.Create) {
		r.expand()
	}
}

// readAll gives every awake log a turn of readBudget lines and returns how
// many lines were read.
func (r *run) readAll() int {
	progress := 0
	for _, f := range r.order {
		if !f.wake {
			continue
		}
		n, err := f.step(readBudget)
		if err != nil {
			if msg := err.Error(); msg != f.lastErr {
				r.notice(Notice{Name: f.source, Reason: msg})
				f.lastErr = msg
			}
			f.close()
		}
		if n == 0 {
			f.wake = false
		}
		progress += n
	}
	return progress
}

// store hands a batch to the writer when one is full, or when nothing more
// was read and something is pending, CommitEvery after the last one was
// handed over (group commit: until then, and while one is being written,
// what is read joins the next batch); a full batch waits for the one being
// written (back pressure: the store is behind).
func (r *run) store(progress int) {
	full := r.full()
	if !full && (progress > 0 || !r.dirty()) {
		return
	}
	if r.inflight && full {
		r.finished(<-r.done)
	}
	if r.inflight || r.storeErr != nil {
		return
	}
	if !full && r.every > 0 {
		if wait := r.every - time.Since(r.lastSent); wait > 0 {
			if !r.grouping {
				r.grouping = true
				r.group.Reset(wait)
			}
			return
		}
	}
	r.flush()
}

// drain stores everything read, then returns the store's error, if any.
func (r *run) drain() error {
	if r.inflight {
		r.finished(<-r.done)
	}
	if r.storeErr == nil && r.dirty() {
		r.flush()
		r.finished(<-r.done)
	}
	return r.storeErr
}

// finished takes the writer's report of a batch.
func (r *run) finished(res written) {
	r.inflight = false
	if res.err != nil {
		r.m.Failed.Add(1)
		r.storeErr = fmt.Errorf("store: %w", res.err)
	} else {
		r.m.Committed(&res.b.Batch, res.w, res.at)
	}
	res.b.reset()
	r.spare = res.b
}

// full reports that what the logs read makes a full batch: BatchSize
// records or BatchBytes of lines.
func (r *run) full() bool {
	n, b := 0, 0
	for _, f := range r.order {
		n += f.pendingRecords()
		b += f.pendingBytes
	}
	return n >= r.size || b >= r.bytes
}

func (r *run) dirty() bool {
	for _, f := range r.order {
		if f.dirty {
			return true
		}
	}
	return false
}

// flush moves what every log read, with its checkpoint, into a batch and
// hands it to the writer.
func (r *run) flush() {
	b := r.spare
	for _, f := range r.order {
		if !f.dirty {
			continue
		}
		b.Checkpoints = append(b.Checkpoints, f.checkpoint())
		b.Audits = append(b.Audits, f.audits...)
		b.Logs = append(b.Logs, f.logs...)
		clear(f.audits)
		clear(f.logs)
		f.audits, f.logs = f.audits[:0], f.logs[:0]
		b.bufs = f.arena.lend(b.bufs)
	}
	if len(b.Checkpoints) == 0 {
		return
	}
	r.spare = nil
	r.inflight = true
	r.lastSent = time.Now()
	r.toWrite <- b
}

// reconstructTicker returns the channel that says when to reconstruct (nil
// when the Tailer does not) and what stops it.
func (r *run) reconstructTicker() (<-chan time.Time, func()) {
	if r.t.Reconstruct == nil {
		return nil, func() {}
	}
	every := r.t.ReconstructEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	tk := time.NewTicker(every)
	return tk.C, tk.Stop
}

// waitGlob says, once, that a pattern matches no file yet.
func (r *run) waitGlob(pattern string) {
	if !r.waited[pattern] {
		r.waited[pattern] = true
		r.notice(Notice{Name: pattern, Reason: "no file matches it yet: waiting for one to appear"})
	}
}

// sources expands Paths into the live paths to follow. A rotated backup
// matched by a pattern stands for its live file; unmatched is told about
// patterns that match nothing.
func (t *Tailer) sources(notice func(Notice), unmatched func(string)) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range t.Paths {
		matches := []string{p}
		if hasMeta(p) {
			var err error
			if matches, err = filepath.Glob(p); err != nil {
				notice(Notice{Name: p, Reason: err.Error()})
				continue
			}
			if len(matches) == 0 {
				unmatched(p)
			}
		}
		for _, m := range matches {
			abs, err := filepath.Abs(m)
			if err != nil {
				continue
			}
			if r, err := filepath.EvalSymlinks(abs); err == nil {
				abs = r
			}
			if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
				continue
			}
			dir, base := filepath.Split(abs)
			if fam, ord := rotation(base); ord != math.MaxInt64 {
				abs = filepath.Join(dir, fam)
			}
			if !seen[abs] {
				seen[abs] = true
				out = append(out, abs)
			}
		}
	}
	return out
}

func hasMeta(p string) bool {
	for _, c := range p {
		switch c {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}
