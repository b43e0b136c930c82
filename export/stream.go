package export

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/cpid-dev/cpid"
)

// Stream pushes changes while they happen (cpid-tui tail --otlp-endpoint):
// after each reconstruct run, Push sends the changes that settled since
// the last call. A change is sent once its last write is Settle older than
// the run's cutoff (the writes after the cutoff are provisional); a write
// that joins it later is sent then, as a span of the same trace (receivers
// gather a trace's spans from any number of requests). Spans are never sent
// twice, and a span sent is not sent again if a rebuild changed it.
//
// Pushes are serialized: a call waits for the one in progress.
type Stream struct {
	Pusher *Pusher
	// Settle is how long a change must have been quiet (30 s when 0).
	Settle time.Duration
	// Horizon is how far back before the cutoff changes are watched (15
	// minutes when 0): a change that started earlier is not sent, and is
	// forgotten. export --all sends the history.
	Horizon time.Duration

	mu   sync.Mutex
	sent map[string]*sent
}

// sent is what Stream sent of a change.
type sent struct {
	startedNS, settledNS int64
	writes               int
	spans                map[SpanID]bool
}

// Push sends what settled, reading through r; with final (the tailer
// stopping) it sends every change in the horizon whatever its last write.
func (s *Stream) Push(ctx context.Context, r cpid.ChangeReader, final bool) (Pushed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	settle, horizon := s.Settle, s.Horizon
	if settle <= 0 {
		settle = 30 * time.Second
	}
	if horizon <= 0 {
		horizon = 15 * time.Minute
	}
	if s.sent == nil {
		s.sent = map[string]*sent{}
	}
	v, err := r.DataVersion(ctx)
	if err != nil || v.CutoffNS == 0 {
		return Pushed{}, err
	}
	since := v.CutoffNS - int64(horizon)
	for id, x := range s.sent {
		if x.startedNS < since {
			delete(s.sent, id)
		}
	}
	cs, err := r.Changes(ctx, cpid.ChangeQuery{SinceNS: since, Limit: math.MaxInt})
	if err != nil {
		return Pushed{}, err
	}
	var ids []string
	for _, c := range cs {
		x := s.sent[c.ID]
		if x != nil && x.settledNS == c.SettledNS && x.writes == c.Writes {
			continue // nothing new
		}
		if !final && c.SettledNS > v.CutoffNS-int64(settle) {
			continue // not quiet yet
		}
		ids = append(ids, c.ID)
	}
	if len(ids) == 0 {
		return Pushed{}, nil
	}
	set, err := Read(ctx, r, ids)
	if err != nil {
		return Pushed{}, err
	}
	traces := Build(set)
	var todo []Trace
	for _, t := range traces {
		x := s.sent[t.Change.ID]
		var spans []Span
		for _, sp := range t.Spans {
			if x == nil || !x.spans[sp.ID] {
				spans = append(spans, sp)
			}
		}
		if len(spans) > 0 {
			t.Spans = spans
			todo = append(todo, t)
		}
	}
	n, err := s.Pusher.Push(ctx, todo)
	if err != nil {
		return n, err
	}
	// Marked sent only once the receiver took them: a failed push is
	// tried again after the next run.
	for _, t := range traces {
		x := s.sent[t.Change.ID]
		if x == nil {
			x = &sent{startedNS: t.Change.StartedNS, spans: map[SpanID]bool{}}
			s.sent[t.Change.ID] = x
		}
		x.settledNS, x.writes = t.Change.SettledNS, t.Change.Writes
		for _, sp := range t.Spans {
			x.spans[sp.ID] = true
		}
	}
	return n, nil
}
