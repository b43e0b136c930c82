package sqlite

import (
	"context"
	"fmt"
	"time"

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
// ingested: incrementally when it can, from scratch when it must.
func (st *Store) Reconstruct(ctx context.Context, full bool) (Report, error) {
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
	redo := w.CutoffNS
	if !full {
		switch late, err := st.Late(ctx, w); {
		case err != nil:
			return res, err
		case !w.HasState:
			full, res.why = true, "first run"
		case late > 0:
			full, res.why = true, fmt.Sprintf("%d new writes are older than the last run's cutoff", late)
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
		if err := st.ResetReconstruction(ctx); err != nil {
			return res, err
		}
		w, redo = Watermark{}, -1
	}
	// The new cutoff trails the newest write by settleLag; the engine's
	// state is saved as it stands there.
	// Mergelogs and spans from instrumented controllers' logs are exact and
	// final: they go into the graph before any write is explained.
	err = st.ScanCPIDRecords(ctx, w.LogID, lastLog, func(id, ts int64, msg string, fields []byte) error {
		switch msg {
		case reconstruct.MsgMergelog:
			m, err := reconstruct.ParseMergelog(fields, ts)
			if err == nil {
				err = en.AddMergelog(m)
			}
			if err != nil {
				res.bad++
			}
		case reconstruct.MsgSpan:
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
	cutoff := max(w.CutoffNS, latest-int64(settleLag))
	var snapshot []byte
	err = st.ScanWrites(ctx, w.CutoffNS, lastEvent, func(ev *reconstruct.Event) error {
		if snapshot == nil && ev.ReceivedNS > cutoff {
			var err error
			if snapshot, err = en.MarshalState(); err != nil {
				return err
			}
		}
		en.Process(ev)
		return ctx.Err()
	})
	if err != nil {
		return res, err
	}
	if snapshot == nil {
		if snapshot, err = en.MarshalState(); err != nil {
			return res, err
		}
	}
	err = st.SaveReconstruction(ctx, en, Watermark{CutoffNS: cutoff, EventID: lastEvent, LogID: lastLog, EngineData: snapshot}, redo)
	if err != nil {
		return res, err
	}
	res.writes = len(en.Writes)
	res.changes = len(en.Changes)
	for _, m := range en.Mergelogs {
		res.mergelogs[m.Origin]++
	}
	res.anomalies = len(en.Anomalies)
	res.spans = len(en.Spans)
	res.elapsed = time.Since(start)
	return res, nil
}
