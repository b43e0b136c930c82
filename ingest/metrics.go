package ingest

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cpid-dev/cpid"
)

// Metrics counts what a live ingester (a Tailer or a Receiver) did since it
// started, for an operator: the Prometheus text format is written by
// WriteText. It is safe for concurrent use.
type Metrics struct {
	Lines        atomic.Int64 // lines read (Tailer) or events received (Receiver)
	Audits       atomic.Int64 // audit events newly stored
	Logs         atomic.Int64 // log records newly stored
	Dups         atomic.Int64 // records found already stored
	Bad          atomic.Int64 // lines or events that could not be decoded
	PossibleLoss atomic.Int64 // truncations, files pruned before they were read
	Batches      atomic.Int64 // transactions committed
	Rejected     atomic.Int64 // requests refused: unauthenticated, too large, malformed (Receiver)
	Failed       atomic.Int64 // batches the store failed to commit

	// Lag is the time from a record's stage (or log) timestamp to the commit
	// of its batch.
	Lag Histogram
}

// Committed records a committed batch: its counts and the lag of each of
// its records at time at.
func (m *Metrics) Committed(b *cpid.Batch, w cpid.Written, at time.Time) {
	m.Batches.Add(1)
	m.Audits.Add(int64(w.Audits))
	m.Logs.Add(int64(w.Logs))
	m.Dups.Add(int64(w.AuditDups + w.LogDups))
	now := at.UnixNano()
	m.Lag.mu.Lock()
	defer m.Lag.mu.Unlock()
	for i := range b.Audits {
		if t := b.Audits[i].StageNS; t > 0 {
			m.Lag.observeLocked(time.Duration(now - t))
		}
	}
	for i := range b.Logs {
		if t := b.Logs[i].TimeNS; t > 0 {
			m.Lag.observeLocked(time.Duration(now - t))
		}
	}
}

// lagBuckets are the upper bounds of the lag histogram, in seconds.
var lagBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// Histogram is a Prometheus-style cumulative histogram of durations.
type Histogram struct {
	mu     sync.Mutex
	counts [15]int64 // len(lagBuckets)+1: the last is +Inf
	sum    float64
	n      int64
}

// Observe adds one duration.
func (h *Histogram) Observe(d time.Duration) {
	h.mu.Lock()
	h.observeLocked(d)
	h.mu.Unlock()
}

func (h *Histogram) observeLocked(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(lagBuckets) && s > lagBuckets[i] {
		i++
	}
	h.counts[i]++
	h.sum += s
	h.n++
}

// WriteText writes the metrics in the Prometheus text exposition format,
// each name prefixed with prefix (e.g. "cpid_tail").
func (m *Metrics) WriteText(w io.Writer, prefix string) error {
	counters := []struct {
		name, help string
		v          int64
	}{
		{"lines_total", "Lines read (tail) or audit events received (webhook).", m.Lines.Load()},
		{"audit_events_total", "Audit events newly stored.", m.Audits.Load()},
		{"log_records_total", "Controller log records newly stored.", m.Logs.Load()},
		{"duplicates_total", "Records found already stored and skipped.", m.Dups.Load()},
		{"bad_lines_total", "Lines or events that could not be decoded (skipped).", m.Bad.Load()},
		{"possible_loss_total", "Events where data may have been lost: truncations, files pruned before they were read.", m.PossibleLoss.Load()},
		{"batches_total", "Transactions committed.", m.Batches.Load()},
		{"rejected_total", "Requests refused: unauthenticated, too large or malformed.", m.Rejected.Load()},
		{"failed_batches_total", "Batches the store failed to commit.", m.Failed.Load()},
	}
	for _, c := range counters {
		if _, err := fmt.Fprintf(w, "# HELP %s_%s %s\n# TYPE %s_%s counter\n%s_%s %d\n",
			prefix, c.name, c.help, prefix, c.name, prefix, c.name, c.v); err != nil {
			return err
		}
	}
	h := &m.Lag
	h.mu.Lock()
	defer h.mu.Unlock()
	name := prefix + "_lag_seconds"
	fmt.Fprintf(w, "# HELP %s Time from a record's stage timestamp to the commit of its batch.\n# TYPE %s histogram\n", name, name)
	var c int64
	for i, n := range h.counts {
		c += n
		le := "+Inf"
		if i < len(lagBuckets) {
			le = fmt.Sprint(lagBuckets[i])
		}
		fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, le, c)
	}
	_, err := fmt.Fprintf(w, "%s_sum %g\n%s_count %d\n", name, h.sum, name, h.n)
	return err
}
