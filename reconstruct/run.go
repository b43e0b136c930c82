package reconstruct

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cpid-dev/cpid"
)

// Report is what one Run did.
type Report struct {
	Full      bool
	Why       string // why a full rebuild, when it was not asked for
	Writes    int
	Changes   int
	Mergelogs map[cpid.Origin]int
	Anomalies int
	Spans     int
	Bad       int // mergelog or span records that could not be read
	// Evicted counts the times the run moved an object out of memory to
	// a temporary file (Options.MaxObjects), Spilled the objects still
	// there at its end: the others were read back.
	Evicted, Spilled int
	Elapsed          time.Duration
	// Warnings say what the data cannot tell (resources whose objects the
	// rules read audited without them), once per run.
	Warnings []string
}

// String says it for people.
func (r Report) String() string {
	mode := "incremental"
	if r.Full {
		mode = "full rebuild"
		if r.Why != "" {
			mode += " (" + r.Why + ")"
		}
	}
	if r.Writes == 0 && !r.Full {
		return "reconstruct: up to date, nothing new since the last run"
	}
	s := fmt.Sprintf("reconstruct: %s: %d writes in %.2fs (%.0f/s); %d new changes; mergelogs %d inferred, %d annotation, %d log; %d controller spans; %d anomalies",
		mode, r.Writes, r.Elapsed.Seconds(), float64(r.Writes)/max(r.Elapsed.Seconds(), 1e-9), r.Changes,
		r.Mergelogs[cpid.OriginInferred], r.Mergelogs[cpid.OriginAnnotation], r.Mergelogs[cpid.OriginLog],
		r.Spans, r.Anomalies)
	if r.Evicted > 0 {
		s += fmt.Sprintf("\nreconstruct: %d objects moved out of memory to a temporary file, %d of them read back (--max-objects)",
			r.Evicted, r.Evicted-r.Spilled)
	}
	if r.Bad > 0 {
		s += fmt.Sprintf("\nreconstruct: %d mergelog or span records could not be read (see docs/FORMATS.md)", r.Bad)
	}
	for _, w := range r.Warnings {
		s += "\nreconstruct: warning: " + w
	}
	return s
}

// SettleLag is how far behind the newest write the final part of a run
// stops. Lines are written when responses complete and rotation cuts files
// anywhere, so a write received a little earlier can arrive in a later
// file; writes in the last SettleLag are processed but provisional, and the
// next run redoes them with whatever arrived since. Five seconds covers a
// rotation's cut (milliseconds) and slow requests; a write later than that
// costs a full rebuild, not a wrong result. A longer window costs every
// incremental run: it redoes the window's writes (a live tail at 10,000
// events/s redoes 50,000 per run).
const SettleLag = 5 * time.Second

// LiveStepRows is the size of a step for a live database (Options.StepRows):
// about 2,000 rows, 10 to 20 ms of the writer's time, the longest a
// tailer's commit waits for a reconstruction.
const LiveStepRows = 2000

// drainEvery is how many writes the engine processes before its output
// goes to the store.
const drainEvery = 2048

// Options are how Run goes.
type Options struct {
	// Full rebuilds everything, even when an incremental run would do.
	Full bool
	// StepRows > 0 stores the run in transactions of about that many rows,
	// for a live database: another writer (a tailer) then waits for one
	// step, not for the whole run, full rebuilds included, and a reader
	// may see a run partly stored until it ends (changes are summarized
	// last). 0 stores the run in one transaction: a reader sees all of it
	// or none of it.
	StepRows int
	// Windows are reaction windows that go before DefaultWindows. A run
	// that goes on from a saved state explains new hops with them; after
	// changing them, rebuild (Full) to explain the old ones too.
	Windows []Window
	// Rules are the inference rules (nil: Rules) and Ignored the resources
	// (and resource/subresource) whose writes are left out (nil: Ignored),
	// for a program embedding reconstruct. As with Windows, a run that
	// goes on from a saved state uses them for the new writes only.
	Rules   []Rule
	Ignored map[string]bool
	// IgnoreCPIDs reconstructs as if no writer carried a CPID: the
	// objects' CPID annotations and the controllers' mergelog lines are
	// left out, so that inference alone decides (to measure it against an
	// instrumented recording, docs/CAUSALITY.md). A run that goes on from
	// a state saved with the other setting rebuilds everything.
	IgnoreCPIDs bool
	// Family names the log an input file belongs to (its rotation family),
	// so that events of two apiservers are told apart; nil: the file path.
	Family func(path string) string
	// MaxObjects is how many objects a run holds in memory before it
	// evicts the half it met least recently into a temporary file in
	// SpillDir ("": the system's, TMPDIR), reading one back when a write
	// meets it again: the same rows, in memory bounded by the objects in
	// use rather than every object met. 0 is DefaultMaxObjects; < 0 never
	// evicts.
	MaxObjects int
	SpillDir   string
	// Progress, when set, is called about every ProgressEvery (default
	// 2 s) with where the run is, from a goroutine of its own, and once
	// more when the run is done: a first run over ten million events
	// takes minutes.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// Ended, when set, is called once the engine has gone through every
	// write and its memory is released, before the run stores its end
	// (the indexes a full rebuild dropped, the objects to renumber, the
	// summaries): those are sorts in SQLite's memory more than in Go's,
	// and a command may lower the Go heap's limit there. A run that
	// finds nothing new, or fails before the engine is done, does not
	// call it; one that fails after may have.
	Ended func()
}

// Progress is where a running reconstruct is (Options.Progress).
type Progress struct {
	Elapsed time.Duration
	// Writes is how many writes the engine has run through so far.
	Writes int64
	// End is set once every write is through: the run is storing its end
	// (the indexes a full rebuild dropped, the objects to renumber, the
	// changes' summaries, the commit).
	End bool
	// Done is set on the last call, when the run is over.
	Done bool
}

// progress reports a run's Progress every so often until stop.
type progress struct {
	writes atomic.Int64
	end    atomic.Bool
	stop   func()
}

// startProgress calls opt.Progress every opt.ProgressEvery until the
// returned progress is stopped, then once more (Done); nil without
// opt.Progress.
func startProgress(opt Options, start time.Time) *progress {
	if opt.Progress == nil {
		return nil
	}
	every := opt.ProgressEvery
	if every <= 0 {
		every = 2 * time.Second
	}
	p := &progress{}
	snap := func(done bool) Progress {
		return Progress{Elapsed: time.Since(start), Writes: p.writes.Load(), End: p.end.Load(), Done: done}
	}
	quit, over := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				opt.Progress(snap(false))
			}
		}
	}()
	p.stop = func() {
		close(quit)
		<-over
		opt.Progress(snap(true))
	}
	return p
}

func (p *progress) add(n int) {
	if p != nil {
		p.writes.Add(int64(n))
	}
}

func (p *progress) ended() {
	if p != nil {
		p.end.Store(true)
	}
}

// DefaultMaxObjects is Options.MaxObjects' default.
const DefaultMaxObjects = 30_000

// bodiedList is readsBody as a sorted list: the scan fetches the object
// after the write only for those resources (a Deployment's or a
// ReplicaSet's body is not read, so it is not fetched).
func bodiedList() []string {
	out := make([]string, 0, len(readsBody))
	for k := range readsBody {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ignoredList is the engine's ignored resources as a sorted list.
func (en *Engine) ignoredList() []string {
	return slices.Sorted(maps.Keys(en.ignored()))
}

// engine returns a new engine with the run's tables and setting.
func (opt Options) engine() *Engine {
	en := NewEngine()
	if len(opt.Windows) > 0 {
		en.Windows = append(slices.Clone(opt.Windows), DefaultWindows...)
	}
	en.Rules, en.Ignored, en.IgnoreCPIDs = opt.Rules, opt.Ignored, opt.IgnoreCPIDs
	en.maxObjects, en.spillDir = opt.MaxObjects, opt.SpillDir
	if en.maxObjects == 0 {
		en.maxObjects = DefaultMaxObjects
	}
	return en
}

// Run brings the derived rows of st up to date with what was ingested:
// incrementally when it can, from scratch when it must.
func Run(ctx context.Context, st cpid.DerivedStore, opt Options) (Report, error) {
	start := time.Now()
	res := Report{Full: opt.Full, Mergelogs: map[cpid.Origin]int{}}
	release, err := st.LockRun(ctx)
	if err != nil {
		return res, fmt.Errorf("reconstruct lock: %w", err)
	}
	defer release()
	w, err := st.Watermark(ctx)
	if err != nil {
		return res, err
	}
	lastEvent, lastLog, err := st.LastIDs(ctx)
	if err != nil {
		return res, err
	}
	en := opt.engine()
	defer func() { en.closeSpill() }()
	prog := startProgress(opt, start)
	if prog != nil {
		defer prog.stop()
	}
	if !res.Full && !w.HasState {
		// Before Late: with no last run, everything is new, and reading
		// it to count the late rows would read the whole table.
		res.Full, res.Why = true, "first run"
	}
	if !res.Full {
		switch late, err := st.Late(ctx, w, cpid.MsgMergelog); {
		case err != nil:
			return res, err
		case late > 0:
			res.Full, res.Why = true, fmt.Sprintf("%d new writes or mergelog records are older than the last run's cutoff", late)
		case lastEvent == w.EventID && lastLog == w.LogID:
			return res, nil
		default:
			cutoff := w.CutoffNS
			saved := Saved{
				Object: func(key string) ([]byte, error) { return st.LoadObject(ctx, key) },
				ByUID:  func(uid string) ([]byte, error) { return st.LoadObjectByUID(ctx, uid) },
				Mergelogs: func(cpids []string, fn func(cpid.Mergelog) error) error {
					return st.ScanMergelogsOf(ctx, cutoff, cpids, fn)
				},
			}
			if err := en.RestoreState(w.EngineData, saved); err != nil {
				res.Full, res.Why = true, err.Error()
				en = opt.engine()
			}
		}
	}
	if res.Full {
		w = cpid.Watermark{}
	}
	bulk := res.Full && opt.StepRows == 0
	tx, err := st.Derive(ctx, cpid.DeriveMode{Full: res.Full, RedoNS: w.CutoffNS, Bulk: bulk})
	if err != nil {
		return res, err
	}
	defer tx.Abort()
	sv := newSaver(tx, bulk, opt.StepRows)

	// Mergelogs and spans from instrumented controllers' logs are exact and
	// final: they go into the graph before any write is explained.
	err = st.ScanLogs(ctx, w.LogID, lastLog, []string{cpid.MsgMergelog, cpid.MsgSpan}, func(r cpid.LogEntry) error {
		switch r.Msg {
		case cpid.MsgMergelog:
			if opt.IgnoreCPIDs {
				return nil
			}
			m, err := ParseMergelog(r.Fields, r.TimeNS)
			if err == nil {
				err = en.AddMergelog(m)
			}
			if err != nil {
				res.Bad++
			}
		case cpid.MsgSpan:
			sp, err := ParseSpan(r.Fields)
			if err != nil {
				res.Bad++
				return nil
			}
			sp.LogID = r.ID
			en.AddSpan(sp)
		}
		return ctx.Err()
	})
	if err != nil {
		return res, err
	}
	// Evidence of restarts and leader handovers, read for the writes that
	// waited past their windows only.
	evidence := func(program string, afterNS, atNS int64) ([]cpid.Evidence, error) {
		var out []cpid.Evidence
		err := st.ScanEvidence(ctx, cpid.EvidenceScan{AfterNS: afterNS, AtNS: atNS, UpToID: lastEvent, Program: program,
			StartMarkers: StartMarkers, LeaseNamespace: LeaseNamespace, Leases: LeaderLeases,
			AcquiredMsgs: acquiredMsgs(), UpToLogID: lastLog}, func(ev cpid.Evidence) error {
			if program != "" && ev.Kind == "start" && agentName(ev.UserAgent) != program {
				return nil // another program whose name begins the same
			}
			out = append(out, ev)
			return nil
		})
		return out, err
	}
	// Every program's evidence, window after window, the next read in the
	// background (aheadReader).
	ahead := newAheadReader(func(afterNS, atNS int64) ([]cpid.Evidence, error) { return evidence("", afterNS, atNS) })
	defer ahead.wait()
	en.Evidence = func(program string, afterNS, atNS int64) ([]cpid.Evidence, error) {
		if program == "" {
			return ahead.get(afterNS, atNS)
		}
		return evidence(program, afterNS, atNS)
	}
	en.NodeLeases = func(node string, afterNS, atNS int64) ([]cpid.Evidence, error) {
		var out []cpid.Evidence
		err := st.ScanEvidence(ctx, cpid.EvidenceScan{AfterNS: afterNS, AtNS: atNS, UpToID: lastEvent,
			LeaseNamespace: NodeLeaseNamespace, Leases: []string{node}, UpToLogID: lastLog}, func(ev cpid.Evidence) error {
			if ev.Kind == "lease" {
				out = append(out, ev)
			}
			return nil
		})
		return out, err
	}
	en.Throttles = func(afterNS, atNS int64) ([]cpid.Evidence, error) {
		var out []cpid.Evidence
		err := st.ScanEvidence(ctx, cpid.EvidenceScan{AfterNS: afterNS, AtNS: atNS, Throttles: true, ThrottleMsg: ThrottleMsg,
			UpToLogID: lastLog}, func(ev cpid.Evidence) error {
			out = append(out, ev)
			return nil
		})
		return out, err
	}
	latest, err := st.LatestWrite(ctx, lastEvent)
	if err != nil {
		return res, err
	}
	// The new cutoff trails the newest write by SettleLag; the engine's
	// state is saved as it stands there.
	cutoff := max(w.CutoffNS, latest-int64(SettleLag))
	family := opt.Family
	if family == nil {
		family = func(p string) string { return p }
	}
	snapshot, objects, err := process(ctx, st, en, cpid.WriteScan{AfterNS: w.CutoffNS, UpToID: lastEvent, Ignored: en.ignoredList(), Bodies: bodiedList()},
		family, cutoff, opt.StepRows, res.Full, prog, func(ctx context.Context, d cpid.Derived) error {
			res.count(&d)
			return sv.save(ctx, &d)
		})
	if err != nil {
		return res, err
	}
	prog.ended()
	en.release()
	if bulk {
		// The engine's maps (the objects' states, the merge graph) are
		// garbage now, and the end of a bulk rebuild (the indexes it
		// dropped, sorted by SQLite in C) needs memory of its own: the
		// engine's goes back to the system first, so that the run's peak
		// is the larger of the two, not their sum (10M synthetic events:
		// 120 MB back, BENCHMARKS.md).
		debug.FreeOSMemory()
	}
	if opt.Ended != nil {
		opt.Ended()
	}
	if err := en.LoadErr(); err != nil {
		// As for evidence: nothing is committed past the last step.
		return res, fmt.Errorf("read the last run's state: %w", err)
	}
	if en.evidenceErr != nil {
		// Nothing is committed past the last step: the next run redoes it.
		return res, fmt.Errorf("read evidence: %w", en.evidenceErr)
	}
	if err := sv.finish(ctx, cpid.Watermark{CutoffNS: cutoff, EventID: lastEvent, LogID: lastLog, EngineData: snapshot,
		Objects: objects}); err != nil {
		return res, err
	}
	res.Warnings = blindWarnings(en.Bodies)
	res.Evicted, res.Spilled = en.evicted, en.spilledSaved
	if en.spillErr != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("could not evict objects to a temporary file (%v): "+
			"the run held every object in memory from then on (Options.SpillDir, TMPDIR)", en.spillErr))
	}
	if u := en.Unexplained; u.N > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d write(s) waited past every window of their writer with nothing in "+
			"the logs to say why; each stays in its cause's change, its hop marked unexplained (the longest: %s, %s; "+
			"query timeline shows them, --window widens a band)", u.N, u.Longest.Round(time.Millisecond), u.What))
	}
	if b := en.BadOwnerRefs; b.N > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d write(s) carry owner references that are not valid JSON; "+
			"the owner rule did without them (the first: %s)", b.N, b.First))
	}
	if b := en.BadAncestors; b.N > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d write(s) carry CPID ancestors that are not valid JSON; "+
			"their CPIDs' mergelogs were made without them (the first: %s)", b.N, b.First))
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func (r *Report) count(d *cpid.Derived) {
	r.Writes += len(d.Writes)
	r.Changes += len(d.Changes)
	for _, m := range d.Mergelogs {
		r.Mergelogs[m.Origin]++
	}
	r.Anomalies += len(d.Anomalies)
	r.Spans += len(d.Spans)
}

// process runs the writes q selects through the engine in stages, so that
// both cores work: the scan of the writes, the decoding of the bodies the
// rules read (Event.Digest), and the engine, each in its own goroutine,
// handing batches on; save (the store) is the fourth. It returns the
// engine's state at the cutoff: a full rebuild saves its objects' states
// as it goes (cpid.Derived.Objects), an incremental run returns those it
// met, stored with the watermark so that a run that stops halfway leaves
// the states of the last one.
func process(ctx context.Context, st cpid.DerivedStore, en *Engine, q cpid.WriteScan, family func(string) string,
	cutoff int64, stepRows int, full bool, prog *progress, save func(context.Context, cpid.Derived) error) ([]byte, []cpid.ObjectState, error) {
	g, gctx := errgroup.WithContext(ctx)
	batches := make(chan []*Event, 4)
	var badOwners, badAncestors BadInput // the scan's, read once it ended
	g.Go(func() error {
		defer close(batches)
		var b []*Event
		send := func() error {
			select {
			case batches <- b:
				b = nil
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		families := map[string]string{}
		var slab []Event
		err := st.ScanWrites(gctx, q, func(w *cpid.WriteEvent) error {
			if len(slab) == 0 {
				slab = make([]Event, 256)
			}
			ev := &slab[0]
			slab = slab[1:]
			fam, ok := families[w.File]
			if !ok {
				fam = family(w.File)
				families[w.File] = fam
			}
			owners, ancestors := fromStore(ev, w, fam)
			badOwners.add(w, owners)
			badAncestors.add(w, ancestors)
			if b == nil {
				b = make([]*Event, 0, 256)
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
	digested := make(chan []*Event, 4)
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
	outs := make(chan cpid.Derived, 2)
	g.Go(func() error {
		for out := range outs {
			if err := save(gctx, out); err != nil {
				return err
			}
		}
		return nil
	})
	var snapshot []byte
	var objects []cpid.ObjectState
	marshal := func() (err error) {
		snapshot, err = en.MarshalState(func(chunk []cpid.ObjectState) error {
			if !full {
				objects = append(objects, chunk...)
				return nil
			}
			select {
			case outs <- cpid.Derived{Objects: chunk}:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
		return err
	}
	every := drainEvery
	if stepRows > 0 {
		every = min(every, stepRows)
	}
	g.Go(func() error {
		defer close(outs)
		pending := 0
		for b := range digested {
			for _, ev := range b {
				if snapshot == nil && ev.ReceivedNS > cutoff {
					if err := marshal(); err != nil {
						return err
					}
				}
				en.Process(ev)
				if pending++; pending >= every {
					prog.add(pending)
					pending = 0
					select {
					case outs <- en.Drain():
					case <-gctx.Done():
						return gctx.Err()
					}
				}
			}
		}
		if err := gctx.Err(); err != nil {
			return err
		}
		prog.add(pending)
		if snapshot == nil {
			if err := marshal(); err != nil {
				return err
			}
		}
		select {
		case outs <- en.Drain():
		case <-gctx.Done():
			return gctx.Err()
		}
		return nil
	})
	err := g.Wait()
	en.BadOwnerRefs, en.BadAncestors = badOwners, badAncestors
	return snapshot, objects, err
}

// fromStore fills ev from a stored write. Owner references and CPID
// ancestors that are not valid JSON are left out, and said: the first
// error is of the owner references (the owner rule cannot use them), the
// second of the ancestors (the CPID's mergelog is made without them).
func fromStore(ev *Event, w *cpid.WriteEvent, family string) (owners, ancestors error) {
	*ev = Event{ID: w.ID, AuditID: w.AuditID, Verb: w.Verb, APIGroup: w.APIGroup, Resource: w.Resource,
		Subresource: w.Subresource, Namespace: w.Namespace, Name: w.Name, UID: w.UID,
		ResourceVersion: w.ResourceVersion, Username: w.Username, UserAgent: w.UserAgent, Code: w.Code,
		ReceivedNS: w.ReceivedNS, StageNS: w.StageNS, CPID: w.CPID, Traceparent: w.Traceparent,
		Request: w.Request, Latency: w.Latency, Source: family}
	if cpid.IsObjectBody(w.Subresource, w.Response) {
		ev.Object = w.Response
	}
	if len(w.OwnerRefs) > 0 {
		if err := json.Unmarshal(w.OwnerRefs, &ev.OwnerRefs); err != nil {
			ev.OwnerRefs = nil
			owners = fmt.Errorf("owner references: %w", err)
		}
	}
	if len(w.Ancestors) > 0 {
		if err := json.Unmarshal(w.Ancestors, &ev.Ancestors); err != nil {
			ev.Ancestors = nil
			ancestors = fmt.Errorf("CPID ancestors: %w", err)
		}
	}
	return owners, ancestors
}

// blind says what inference cannot see, per resource the rules read, when
// the audit log holds none of its objects.
var blind = map[string]string{
	"pods":           "no spec.nodeName: a Pod's node is not known, so node evictions and kubelet writes are linked by time only",
	"nodes":          "no conditions: a Node going NotReady or coming back is found only from the node lifecycle controller's writes",
	"endpointslices": "no endpoints: EndpointSlices are not linked to the Pods they list",
	"endpoints":      "no subsets: Endpoints are not linked to the Pods they list",
}

// BlindReason says what inference cannot see of resource r (one of
// cpid.BodiedResources) when its writes carry no object.
func BlindReason(r string) string { return blind[r] }

// blindWarnings says, once, which resources the rules read were audited
// without their objects (Metadata level, or truncated), and what that
// hides.
func blindWarnings(bodies map[string]*[2]int) []string {
	var out []string
	for _, r := range slices.Sorted(maps.Keys(bodies)) {
		n := bodies[r]
		switch {
		case n[1] == 0:
		case n[0] == 0:
			out = append(out, fmt.Sprintf("%s: none of %d writes carries the object (audited at Metadata level?): %s", r, n[1], blind[r]))
		default:
			out = append(out, fmt.Sprintf("%s: %d of %d writes carry no object (Metadata level for some users, or truncated): %s",
				r, n[1], n[0]+n[1], blind[r]))
		}
	}
	return out
}
