package reconstruct

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestAheadReader: whatever windows the engine asks for, in whatever
// order, the reader returns what a read of each window returns, each
// piece of evidence once per window asked; it reads the next window in the
// background, and an error of a read in the background is the next get's.
func TestAheadReader(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var all []cpid.Evidence
	for at := int64(1); at < 10_000; at += r.Int64N(7) {
		// Some instants hold more than one piece, as audit events do.
		all = append(all, cpid.Evidence{Kind: "start", AtNS: at, UserAgent: "u"})
	}
	var reads atomic.Int64
	want := func(after, at int64) []cpid.Evidence {
		var out []cpid.Evidence
		for _, e := range all {
			if e.AtNS > after && e.AtNS <= at {
				out = append(out, e)
			}
		}
		return out
	}
	read := func(after, at int64) ([]cpid.Evidence, error) {
		reads.Add(1)
		return want(after, at), nil
	}
	a := newAheadReader(read)
	defer a.wait()
	// Consecutive windows of changing widths, then one from further back
	// (the engine's cache started again), then consecutive again.
	after := int64(0)
	for i := range 200 {
		at := after + r.Int64N(300)
		if i == 120 {
			after = after / 2
		}
		got, err := a.get(after, at)
		if err != nil {
			t.Fatal(err)
		}
		if w := want(after, at); !slices.Equal(got, w) {
			t.Fatalf("window %d (%d, %d]: %d pieces, want %d", i, after, at, len(got), len(w))
		}
		after = at
	}

	// Windows of the same width one after the other: each but the first
	// was read ahead, while the one before was the engine's.
	a.wait()
	c := newAheadReader(read)
	reads.Store(0)
	for i := range int64(5) {
		if _, err := c.get(i*100, i*100+100); err != nil {
			t.Fatal(err)
		}
	}
	c.wait()
	if n := reads.Load(); n != 6 {
		t.Errorf("5 windows of the same width: %d reads, want 6 (the first, and each next one ahead)", n)
	}

	fail := errors.New("server gone")
	calls := 0
	b := newAheadReader(func(after, at int64) ([]cpid.Evidence, error) {
		calls++
		if calls > 1 {
			return nil, fail
		}
		return read(after, at)
	})
	defer b.wait()
	if _, err := b.get(0, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := b.get(100, 150); !errors.Is(err, fail) {
		t.Fatalf("the read ahead failed: got %v, want %v", err, fail)
	}
}
