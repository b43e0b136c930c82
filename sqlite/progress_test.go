package sqlite

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestReconstructProgress: a run with Options.Progress reports its writes
// as they go through, never fewer than before, and ends with one call that
// says it is done, after every write and the end were stored, whatever the
// ticks in between (their number depends on the machine).
func TestReconstructProgress(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []reconstruct.Progress
	opt := reconstruct.Options{Family: ingest.Family, ProgressEvery: time.Millisecond,
		Progress: func(p reconstruct.Progress) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p)
		}}
	r, err := reconstruct.Run(ctx, s, opt)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no progress reported")
	}
	last := got[len(got)-1]
	if !last.Done || !last.End || last.Writes < int64(r.Writes) {
		t.Errorf("last progress %+v, want done, at the end, with at least the run's %d writes", last, r.Writes)
	}
	for i, p := range got {
		if p.Done != (i == len(got)-1) {
			t.Errorf("progress %d of %d: %+v: only the last says done", i+1, len(got), p)
		}
		if i > 0 && (p.Writes < got[i-1].Writes || p.Elapsed < got[i-1].Elapsed || got[i-1].End && !p.End) {
			t.Errorf("progress %d went back: %+v after %+v", i+1, p, got[i-1])
		}
	}
}

// TestReconstructEnded: Options.Ended is called once a run, after the
// engine went through every write and before the run's end is stored (a
// first run is one transaction: a reader sees none of its changes yet),
// and not at all by a run that finds nothing new.
func TestReconstructEnded(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	calls, seen := 0, -1
	opt := reconstruct.Options{Family: ingest.Family, Ended: func() {
		calls++
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM changes`).Scan(&seen); err != nil {
			t.Error(err)
		}
	}}
	r, err := reconstruct.Run(ctx, s, opt)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || seen != 0 || r.Changes == 0 {
		t.Errorf("first run: Ended called %d times, the changes a reader saw then %d, the run's %d; want once, 0, some",
			calls, seen, r.Changes)
	}
	if _, err := reconstruct.Run(ctx, s, opt); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("a run with nothing new called Ended: %d calls in all", calls)
	}
}
