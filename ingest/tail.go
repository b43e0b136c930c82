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
	// BatchSize is the most records per transaction. Default 5000.
	BatchSize int
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
	// losses and errors that do not stop the tailer. It is called from
	// the goroutine of Run.
	Notice func(Notice)
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
	b   *cpid.Batch
	w   cpid.Written
	err error
	at  time.Time
}

// Run follows the logs until ctx ends, then stores what it read and
// returns nil. It returns an error when the store fails.
func (t *Tailer) Run(ctx context.Context) error {
	m := t.Metrics
	if m == nil {
		m = &Metrics{}
	}
	size := t.BatchSize
	if size <= 0 {
		size = 5000
	}
	poll := t.Poll
	if poll <= 0 {
		poll = time.Second
	}
	notice := t.Notice
	if notice == nil {
		notice = func(Notice) {}
	}
	lim := t.Limits.withDefaults()
	resume := map[string]cpid.Checkpoint{}
	for _, c := range t.Resume {
		resume[c.Source] = c
	}

	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := fsnotify.NewWatcher()
	if err != nil {
		notice(Notice{Name: "fsnotify", Reason: fmt.Sprintf("%v: polling every %s only", err, poll)})
	} else {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}

	follows := map[string]*follow{}
	var order []*follow
	watched := map[string]bool{}
	expand := func() {
		for _, src := range t.sources(notice) {
			if follows[src] != nil {
				continue
			}
			f := newFollow(src, resume[src], lim, t.redaction(), notice, m)
			follows[src] = f
			order = append(order, f)
			sort.Slice(order, func(i, j int) bool { return order[i].source < order[j].source })
		}
		for _, f := range order {
			if w != nil && !watched[f.dir] {
				if err := w.Add(f.dir); err == nil {
					watched[f.dir] = true
				}
			}
		}
	}
	wakeAll := func() {
		for _, f := range order {
			f.wake = true
		}
	}
	defer func() {
		for _, f := range order {
			f.close()
		}
	}()
	expand()

	// One goroutine writes, so that reading goes on during a commit.
	toWrite := make(chan *cpid.Batch)
	done := make(chan written)
	wctx := context.WithoutCancel(ctx) // the last batch is stored after ctx ends
	go func() {
		for b := range toWrite {
			n, err := t.Sink.Write(wctx, b)
			done <- written{b: b, w: n, err: err, at: time.Now()}
		}
	}()
	defer close(toWrite)
	spare := &cpid.Batch{}
	inflight := false
	var storeErr error
	finished := func(r written) {
		inflight = false
		if r.err != nil {
			m.Failed.Add(1)
			storeErr = fmt.Errorf("store: %w", r.err)
		} else {
			m.Committed(r.b, r.w, r.at)
		}
		r.b.Reset()
		spare = r.b
	}
	pending := func() int {
		n := 0
		for _, f := range order {
			n += f.pendingRecords()
		}
		return n
	}
	flush := func() {
		b := spare
		for _, f := range order {
			if !f.dirty {
				continue
			}
			b.Checkpoints = append(b.Checkpoints, f.checkpoint())
			b.Audits = append(b.Audits, f.audits...)
			b.Logs = append(b.Logs, f.logs...)
			clear(f.audits)
			clear(f.logs)
			f.audits, f.logs = f.audits[:0], f.logs[:0]
		}
		if len(b.Checkpoints) == 0 {
			return
		}
		spare = nil
		inflight = true
		toWrite <- b
	}
	dirty := func() bool {
		for _, f := range order {
			if f.dirty {
				return true
			}
		}
		return false
	}

	var recon <-chan time.Time
	reconDone := make(chan error, 1)
	reconRunning := false
	if t.Reconstruct != nil {
		every := t.ReconstructEvery
		if every <= 0 {
			every = 10 * time.Second
		}
		tk := time.NewTicker(every)
		defer tk.Stop()
		recon = tk.C
	}
	rctx, rcancel := context.WithCancel(ctx)
	defer func() {
		rcancel()
		if reconRunning {
			<-reconDone
		}
	}()

	tick := time.NewTicker(poll)
	defer tick.Stop()
	for storeErr == nil {
		progress := 0
		if ctx.Err() == nil {
			for _, f := range order {
				if !f.wake {
					continue
				}
				n, err := f.step(readBudget)
				if err != nil {
					if msg := err.Error(); msg != f.lastErr {
						notice(Notice{Name: f.source, Reason: msg})
						f.lastErr = msg
					}
					f.close()
				}
				if n == 0 {
					f.wake = false
				}
				progress += n
			}
		}
		if p := pending(); p >= size || (progress == 0 && dirty()) {
			if inflight && p >= size {
				finished(<-done) // back pressure: the store is behind
			}
			if !inflight && storeErr == nil {
				flush()
			}
		}
		if ctx.Err() != nil {
			// Store everything read, then stop.
			if inflight {
				finished(<-done)
			}
			if storeErr == nil && dirty() {
				flush()
				finished(<-done)
			}
			return storeErr
		}
		// With more to read, only look at what else is ready; else wait.
		var more <-chan time.Time
		if progress > 0 {
			more = ready
		}
		select {
		case <-more:
		case <-ctx.Done():
		case r := <-done:
			finished(r)
		case ev := <-events:
			dir := filepath.Dir(ev.Name)
			for _, f := range order {
				if f.dir == dir {
					f.wake = true
				}
			}
			if ev.Has(fsnotify.Create) {
				expand()
			}
		case err := <-errs:
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				notice(Notice{Name: "fsnotify", Reason: "event queue overflowed: rescanning every log"})
			} else if err != nil {
				notice(Notice{Name: "fsnotify", Reason: err.Error()})
			}
			expand()
			wakeAll()
		case <-tick.C:
			expand()
			wakeAll()
		case <-recon:
			if !reconRunning {
				reconRunning = true
				go func() { reconDone <- t.Reconstruct(rctx) }()
			}
		case err := <-reconDone:
			reconRunning = false
			if err != nil && rctx.Err() == nil {
				notice(Notice{Name: "reconstruct", Reason: err.Error()})
			}
		}
	}
	if inflight {
		<-done
	}
	return storeErr
}

// sources expands Paths into the live paths to follow. A rotated backup
// matched by a pattern stands for its live file.
func (t *Tailer) sources(notice func(Notice)) []string {
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
