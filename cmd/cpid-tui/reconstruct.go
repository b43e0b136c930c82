package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/sqlite"
)

func init() {
	register(command{name: "reconstruct", summary: "rebuild revisions, mergelogs, changes and timelines from what was ingested", run: runReconstruct})
}

func runReconstruct(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "reconstruct", "[--db cpid.db] [--full]", strings.TrimSpace(`
Derives from the ingested audit events and controller logs: every object's
revisions in order, the CPID each write carries (from its annotation, or
inferred from owner references, the object's previous write, Service and
EndpointSlice targets, Node changes), the mergelogs and merge DAG, the root
changes (a user's write) with the writes they caused, and anomalies.

Only what was ingested since the last run is processed; a run that finds
events older than what it already processed (a rotated backup ingested late)
rebuilds everything. --full forces a rebuild. Either way the result is the
same. See docs/SCHEMA.md for the tables it fills.`))
	var db string
	dbFlag(fs, &db)
	full := fs.Bool("full", false, "rebuild everything instead of going on from the last run")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := runReconstruction(ctx, st, *full)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, r)
	return nil
}

// reconstruction is what one run did, for people.
type reconstruction struct {
	full      bool
	why       string
	writes    int
	changes   int
	mergelogs map[reconstruct.Origin]int
	anomalies int
	elapsed   time.Duration
}

func (r reconstruction) String() string {
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
	return fmt.Sprintf("reconstruct: %s: %d writes in %.2fs (%.0f/s); %d new changes; mergelogs %d inferred, %d annotation, %d log; %d anomalies",
		mode, r.writes, r.elapsed.Seconds(), float64(r.writes)/max(r.elapsed.Seconds(), 1e-9), r.changes,
		r.mergelogs[reconstruct.OriginInferred], r.mergelogs[reconstruct.OriginAnnotation], r.mergelogs[reconstruct.OriginLog], r.anomalies)
}

// settleLag is how far behind the newest write the final part of a
// reconstruction stops. Lines are written when responses complete and
// rotation cuts files anywhere, so a write received a little earlier can
// arrive in a later file; writes in the last settleLag are processed but
// provisional, and the next run redoes them with whatever arrived since.
const settleLag = 30 * time.Second

// runReconstruction brings the derived tables up to date with what was
// ingested: incrementally when it can, from scratch when it must.
func runReconstruction(ctx context.Context, st *sqlite.Store, full bool) (reconstruction, error) {
	start := time.Now()
	res := reconstruction{full: full, mergelogs: map[reconstruct.Origin]int{}}
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
		w, redo = sqlite.Watermark{}, -1
	}
	// The new cutoff trails the newest write by settleLag; the engine's
	// state is saved as it stands there.
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
	err = st.SaveReconstruction(ctx, en, sqlite.Watermark{CutoffNS: cutoff, EventID: lastEvent, LogID: lastLog, EngineData: snapshot}, redo)
	if err != nil {
		return res, err
	}
	res.writes = len(en.Writes)
	res.changes = len(en.Changes)
	for _, m := range en.Mergelogs {
		res.mergelogs[m.Origin]++
	}
	res.anomalies = len(en.Anomalies)
	res.elapsed = time.Since(start)
	return res, nil
}
