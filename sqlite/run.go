package sqlite

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/reconstruct"
)

// Report is what one Reconstruct run did.
type Report struct {
	full      bool
	why       string
	writes    int
	changes   int
	mergelogs map[reconstruct.Origin]int
	anomalies int
	spans     int
	bad       int // mergelog or span records that could not be read
	elapsed   time.Duration
}

// String says it for people.
func (r Report) String() string {
	mode := "incremental"
	if r.full {
		mode = "full rebuild"
		if r.why != "" {
			mode += " (" + r.why + ")"
		}
	}
	if r.writes == 0 && !r.full {
		return "reconstruct: up to date, nothing new since the last run"
	}
	s := fmt.Sprintf("reconstruct: %s: %d writes in %.2fs (%.0f/s); %d new changes; mergelogs %d inferred, %d annotation, %d log; %d controller spans; %d anomalies",
		mode, r.writes, r.elapsed.Seconds(), float64(r.writes)/max(r.elapsed.Seconds(), 1e-9), r.changes,
		r.mergelogs[reconstruct.OriginInferred], r.mergelogs[reconstruct.OriginAnnotation], r.mergelogs[reconstruct.OriginLog],
		r.spans, r.anomalies)
	if r.bad > 0 {
		s += fmt.Sprintf("\nreconstruct: %d mergelog or span records could not be read (see docs/FORMATS.md)", r.bad)
	}
	return s
}

// settleLag is how far behind the newest write the final part of a
// reconstruction stops. Lines are written when responses complete and
// rotation cuts files anywhere, so a write received a little earlier can
// arrive in a later file; writes in the last settleLag are processed but
// provisional, and the next run redoes them with whatever arrived since.
// Five seconds covers a rotation's cut (milliseconds) and slow requests;
// a write later than that costs a full rebuild, not a wrong result. A longer
// window costs every incremental run: it redoes the window's writes (a live
// tail at 10,000 events/s redoes 50,000 per run).
const settleLag = 5 * time.Second

// Reconstruct brings the derived tables up to date with what was
// ingested: incrementally when it can, from scratch when it must. It stores
// the run in one transaction: a reader sees all of it or none of it.
func (st *Store) Reconstruct(ctx context.Context, full bool) (Report, error) {
	return st.reconstruct(ctx, full, 0)
}

// ReconstructInSteps is Reconstruct storing its output in transactions of
// about txRows rows, for a live database: another writer (cpid-tui tail)
// then waits for one step, not for the whole run, full rebuilds included,
// and a reader may see a run partly stored until it ends (changes are
// summarized last).
func (st *Store) ReconstructInSteps(ctx context.Context, txRows int) (Report, error) {
	return st.reconstruct(ctx, false, max(txRows, 1))
}

// LiveStepRows is the size of a step of ReconstructInSteps for a live
// database: about 2,000 rows, 10 to 20 ms of the writer's time, the
// longest a tailer's commit waits for a reconstruction.
const LiveStepRows = 2000

// drainEvery is how many writes the engine processes before its output
// goes to the saver.
const drainEvery = 2048

func (st *Store) reconstruct(ctx context.Context, full bool, txRows int) (Report, error) {
	start := time.Now()
	res := Report{full: full, mergelogs: map[reconstruct.Origin]int{}}
	w, err := st.ReconstructWatermark(ctx)
	if err != nil {
		return res, err
	}
	lastEvent, lastLog, err := st.LastIDs(ctx)
	if err != nil {
		return res, err
	}
	en := reconstruct.NewEngine()
	if !full {
		switch late, err := st.Late(ctx, w); {
		case err != nil:
			return res, err
		case !w.HasState:
			full, res.why = true, "first run"
		case late > 0:
			full, res.why = true, fmt.Sprintf("%d new writes or mergelog records are older than the last run's cutoff", late)
		case lastEvent == w.EventID && lastLog == w.LogID:
			return res, nil
		default:
			if err := en.RestoreState(w.EngineData); err != nil {
				full, res.why = true, err.Error()
				en = reconstruct.NewEngine()
			} else if err := st.ScanMergelogs(ctx, w.CutoffNS, en.RestoreMergelog); err != nil {
				return res, err
			}
		}
	}
	res.full = full
	if full {
		w = Watermark{}
	}
	sv := newSaver(st, full, w.CutoffNS, txRows)
	defer sv.abort()
	count := func(out reconstruct.Output) reconstruct.Output {
		res.writes += len(out.Writes)
		res.changes += len(out.Changes)
		for _, m := range out.Mergelogs {
			res.mergelogs[m.Origin]++
		}
		res.anomalies += len(out.Anomalies)
		res.spans += len(out.Spans)
		return out
	}
	// Mergelogs and spans from instrumented controllers' logs are exact and
	// final: they go into the graph before any write is explained.
	err = st.ScanCPIDRecords(ctx, w.LogID, lastLog, func(id, ts int64, msg string, fields []byte) error {
		switch msg {
		case cpid.MsgMergelog:
			m, err := reconstruct.ParseMergelog(fields, ts)
			if err == nil {
				err = en.AddMergelog(m)
			}
			if err != nil {
				res.bad++
			}
		case cpid.MsgSpan:
			sp, err := reconstruct.ParseSpan(fields)
			if err != nil {
				res.bad++
				return nil
			}
			sp.LogID = id
			en.AddSpan(sp)
		}
		return ctx.Err()
	})
	if err != nil {
		return res, err
	}
	latest, err := st.LatestWrite(ctx, lastEvent)
	if err != nil {
		return res, err
	}
	// The new cutoff trails the newest write by settleLag; the engine's
	// state is saved as it stands there.
	cutoff := max(w.CutoffNS, latest-int64(settleLag))

	// Stages, so that both cores work: the scan of the writes, the
	// decoding of the bodies the rules read, the engine, and the saver,
	// each in its own goroutine, handing batches on.
	g, gctx := errgroup.WithContext(ctx)
	batches := make(chan []*reconstruct.Event, 4)
	g.Go(func() error {
		defer close(batches)
		var b []*reconstruct.Event
		send := func() error {
			select {
			case batches <- b:
				b = nil
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		err := st.ScanWrites(gctx, w.CutoffNS, lastEvent, func(ev *reconstruct.Event) error {
			if b == nil {
				b = make([]*reconstruct.Event, 0, 256)
			}
			if b = append(b, ev); len(b) == cap(b) {
				return send()
			}
			return nil
		})
		if err == nil && len(b) > 0 {
			err = send()
		}
		return err
	})
	// Digesting the bodies (Event.Digest) is a stage of its own.
	digested := make(chan []*reconstruct.Event, 4)
	g.Go(func() error {
		defer close(digested)
		for b := range batches {
			for _, ev := range b {
				ev.Digest()
			}
			select {
			case digested <- b:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	outs := make(chan reconstruct.Output, 2)
	g.Go(func() error {
		for out := range outs {
			if err := sv.save(gctx, out); err != nil {
				return err
			}
		}
		return nil
	})
	var snapshot []byte
	every := drainEvery
	if txRows > 0 {
		every = min(every, txRows)
	}
	g.Go(func() error {
		defer close(outs)
		pending := 0
		for b := range digested {
			for _, ev := range b {
				if snapshot == nil && ev.ReceivedNS > cutoff {
					var err error
					if snapshot, err = en.MarshalState(); err != nil {
						return err
					}
				}
				en.Process(ev)
				if pending++; pending >= every {
					pending = 0
					select {
					case outs <- count(en.Drain()):
					case <-gctx.Done():
						return gctx.Err()
					}
				}
			}
		}
		if err := gctx.Err(); err != nil {
			return err
		}
		if snapshot == nil {
			var err error
			if snapshot, err = en.MarshalState(); err != nil {
				return err
			}
		}
		select {
		case outs <- count(en.Drain()):
		case <-gctx.Done():
			return gctx.Err()
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return res, err
	}

	if err := sv.finish(ctx, Watermark{CutoffNS: cutoff, EventID: lastEvent, LogID: lastLog, EngineData: snapshot}); err != nil {
		return res, err
	}
	res.elapsed = time.Since(start)
	return res, nil
}
