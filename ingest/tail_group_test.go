package ingest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/sqlite"
)

// batchLog is a Sink that stores through a real store and keeps the size
// of each batch it committed.
type batchLog struct {
	st    *sqlite.Store
	mu    sync.Mutex
	sizes []int
}

func (b *batchLog) Write(ctx context.Context, batch *cpid.Batch) (cpid.Written, error) {
	n, err := b.st.Write(ctx, batch)
	if err == nil {
		b.mu.Lock()
		b.sizes = append(b.sizes, batch.Len())
		b.mu.Unlock()
	}
	return n, err
}

func (b *batchLog) batches() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.sizes...)
}

// TestTailGroupCommit: while CommitEvery has not passed since the last
// transaction began, what the tailer reads joins the next one instead of
// being committed at each wake-up; on stop it is committed. With no
// grouping (CommitEvery < 0), each burst read to the end is a transaction
// of its own. Either way every line is stored once. The tailer runs on
// fake time (see bubble): after each poll, the lines read and the batches
// committed are exact.
func TestTailGroupCommit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		every time.Duration
		after []string // the batches' sizes after each burst was polled
		want  string   // and after the tailer stopped
	}{
		// The first burst goes at once (no transaction before it); the
		// next two wait for the hour to pass, and go when the tailer stops.
		{"grouped", time.Hour, []string{"[3]", "[3]", "[3]"}, "[3 6]"},
		{"none", -1, []string{"[3]", "[3 3]", "[3 3 3]"}, "[3 3 3]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T) {
				h := newHarness(t, "audit.log")
				st, err := sqlite.Open(context.Background(), h.db)
				if err != nil {
					t.Fatal(err)
				}
				sink := &batchLog{st: st}
				m := &ingest.Metrics{}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				tl := &ingest.Tailer{Sink: sink, Paths: h.paths, Poll: poll, CommitEvery: c.every, Metrics: m}
				ingest.PollOnly(tl)
				go func() { done <- tl.Run(ctx) }()
				for burst := range 3 {
					// Each burst is one write, read to its end at the next poll.
					h.write("audit.log", auditLines(t, 3*burst, 3*burst+3))
					time.Sleep(poll)
					synctest.Wait()
					if n, got := m.Lines.Load(), fmt.Sprint(sink.batches()); n != int64(3*burst+3) || got != c.after[burst] {
						t.Errorf("after burst %d: %d lines read, batches of %s records; want %d and %s", burst, n, got, 3*burst+3, c.after[burst])
					}
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				st.Close()
				if got := fmt.Sprint(sink.batches()); got != c.want {
					t.Errorf("batches of %s records, want %s", got, c.want)
				}
				h.start() // opens the reader; the tailer finds nothing new
				h.stop()
				h.check(seq(0, 9), 0, 0)
			})
		})
	}
}
