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
