package reconstruct

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/cpid-dev/cpid"
)

// Explanation is why a hop took as long as it did: Explain, and Detail
// with what says so, for people.
type Explanation struct {
	Explain cpid.Explain
	Detail  string
	// Start is the writer's start the explanation found between the cause
	// and the write (restart, leader-gap), 0 for others.
	Start int64
}

// Hop is a write that waited after its cause, as an Explainer sees it,
// during its Test only (the engine reuses it).
type Hop struct {
	Event  *Event
	Object *Object
	// Writer is the write's writer, Rule the rule that found the cause.
	Writer, Rule string
	// Wait is the hop: from the cause becoming visible to the write
	// completing (hopOf); CauseNS is when the cause completed.
	Wait    time.Duration
	CauseNS int64
	// Bands are the writer's windows for the rule and the object's
	// resource (Bands of the engine's windows).
	Bands []Window
	en    *Engine
}

// Need is the evidence an Explainer reads beyond the write and what the
// engine knows of the written object (its Object, its writes before).
type Need uint8

const (
	// NeedStarts: informer starts and leader election leases, read from
	// the store (Engine.Evidence).
	NeedStarts Need = 1 << iota
	// NeedThrottles: the controllers' logs of requests their clients held
	// back (Engine.Throttles).
	NeedThrottles
)

// Explainer is one way to say why a hop waited. The engine asks the
// Explainers in order and takes the first answer; a hop none of them
// explains is "unexplained".
type Explainer struct {
	// Name names the explainer, for people; Gives lists the explanations
	// it answers.
	Name  string
	Gives []cpid.Explain
	// Needs is the evidence it reads; an engine without a reader for it
	// (Engine.Evidence, Engine.Throttles nil) skips it.
	Needs Need
	// Test explains h, or says that it does not apply.
	Test func(h *Hop) (Explanation, bool)
}

// Explainers are the ways to explain a hop, in the order they are asked:
// evidence that the writer waited on purpose or was held back comes before
// the writer's bands (it explains a hop an ordinary reaction's band would
// hold too); what explains only a hop past every band comes after them. It
// is a variable so that a program embedding reconstruct can add its own
// (docs/CAUSALITY.md, Explanations).
var Explainers = []Explainer{
	{
		// A retry is a retry however quick: the write it repeats failed
		// (within retryWithin: a work queue's backoff is seconds, its cap
		// minutes).
		Name:  "retry",
		Gives: []cpid.Explain{cpid.ExplainRequeue, cpid.ExplainBackoff},
		Test: func(h *Hop) (Explanation, bool) {
			e := h.Event
			f, ok := h.Object.Failed[h.Writer]
			if !ok || f.StageNS > e.StageNS || e.StageNS-f.StageNS > int64(retryWithin) {
				return Explanation{}, false
			}
			x := Explanation{Explain: cpid.ExplainBackoff}
			if f.Code == 409 {
				x.Explain = cpid.ExplainRequeue
			}
			x.Detail = fmt.Sprintf("retried after its write failed with %d %s before", f.Code,
				time.Duration(e.StageNS-f.StageNS).Round(time.Millisecond))
			return x, true
		},
	},
	{
		Name:  "on purpose",
		Gives: []cpid.Explain{cpid.ExplainProgressDeadline, cpid.ExplainMinReady},
		Test:  onPurpose,
	},
	{
		// A process that started again (or a new leader) between the
		// cause and the write is why it waited, even when an ordinary
		// reaction's band would hold the hop. A node agent's hops of
		// seconds are its containers starting: its restarts are looked
		// for past its band only (decide).
		Name:  "restart",
		Gives: []cpid.Explain{cpid.ExplainLeaderGap, cpid.ExplainRestart},
		Needs: NeedStarts,
		Test: func(h *Hop) (Explanation, bool) {
			e, en := h.Event, h.en
			if h.Wait < silenceMin || nodeAgent(h.Writer) || !en.silentBetween(agentName(e.UserAgent), h.CauseNS, e.ReceivedNS) {
				return Explanation{}, false
			}
			start, x, ok := en.restarted(e, h.CauseNS)
			x.Start = start
			return x, ok
		},
	},
	{
		// A client that held the write back for most of a hop of a second
		// or more (client-go logs the waits past 1 s) is why it waited,
		// even when an ordinary reaction's band would hold it.
		Name:  "held back",
		Gives: []cpid.Explain{cpid.ExplainThrottled},
		Needs: NeedThrottles,
		Test: func(h *Hop) (Explanation, bool) {
			if h.Wait < silenceMin {
				return Explanation{}, false
			}
			return h.en.throttled(h, true)
		},
	},
	{
		// An ordinary reaction, or a wait of the control plane's own, in
		// one of the writer's bands: the smallest that holds the hop.
		Name: "window",
		Gives: []cpid.Explain{cpid.ExplainInformer, cpid.ExplainKubelet, cpid.ExplainToleration, cpid.ExplainNodeGrace,
			cpid.ExplainPodGC, cpid.ExplainDeletionGrace},
		Test: func(h *Hop) (Explanation, bool) {
			win, ok := within(h.Bands, h.Wait)
			if !ok {
				return Explanation{}, false
			}
			x := Explanation{Explain: win.Explain, Detail: bandDetail(win, h.Wait)}
			if win.Explain == cpid.ExplainToleration {
				if t := h.Object.tolerated(); t != "" {
					x.Detail = fmt.Sprintf("evicted %s after its Node's change: the Pod tolerates %s (its spec)", h.Wait.Round(time.Millisecond), t)
				}
			}
			return x, true
		},
	},
	{
		Name:  "unschedulable",
		Gives: []cpid.Explain{cpid.ExplainUnschedulable},
		Test: func(h *Hop) (Explanation, bool) {
			o, e := h.Object, h.Event
			if o.Key.Resource != "pods" || o.Key.Group != "" || o.UnschedNS == 0 || o.UnschedNS > e.ReceivedNS {
				return Explanation{}, false
			}
			msg := o.Unsched
			if len(msg) > 160 {
				msg = msg[:157] + "..."
			}
			return Explanation{Explain: cpid.ExplainUnschedulable, Detail: fmt.Sprintf("the Pod was Unschedulable for %s before it: %s",
				time.Duration(e.ReceivedNS-o.UnschedNS).Round(time.Millisecond), msg)}, true
		},
	},
	{
		// The writer's client may have held requests back (client-side
		// rate limiting): its log says when and for how long; the rest of
		// the hop must be within the window.
		Name:  "throttled",
		Gives: []cpid.Explain{cpid.ExplainThrottled},
		Needs: NeedThrottles,
		Test:  func(h *Hop) (Explanation, bool) { return h.en.throttled(h, false) },
	},
	{
		Name:  "apiserver",
		Gives: []cpid.Explain{cpid.ExplainAPIServer},
		Test: func(h *Hop) (Explanation, bool) {
			lat := h.Event.APILatency()
			if lat <= h.Wait/2 {
				return Explanation{}, false
			}
			x := Explanation{Explain: cpid.ExplainAPIServer, Detail: fmt.Sprintf("the apiserver took %s of it", lat.Round(time.Millisecond))}
			if parts := h.Event.LatencyParts(); parts != "" {
				x.Detail += " (" + parts + ", by its audit annotations)"
			}
			return x, true
		},
	},
}

// heldBackSpan is how far back from a write its client's throttling is
// looked for.
const heldBackSpan = 5 * time.Minute

// retryWithin is how long after a failed write the writer's next write to
// the object still counts as its retry.
const retryWithin = 5 * time.Minute

// failure is the latest failed write to an object.
type failure struct {
	Writer  string
	Code    int
	StageNS int64
}

// hopOf is the hop from cause r to write e: from when r became visible
// (its stage time, or e's receive time if earlier: watchers see a write at
// its etcd commit, before the apiserver answers its writer) to e completing.
func hopOf(e *Event, r *Ref) int64 { return e.StageNS - min(r.StageNS, e.ReceivedNS) }

// explain says why writer's write e to o waited hop after its cause
// (visible at causeNS) through rule: the first of the engine's Explainers
// that explains it, else unexplained.
func (en *Engine) explain(e *Event, o *Object, writer, rule string, hop, causeNS int64) Explanation {
	// One Hop, reused: it would otherwise be allocated for every cause.
	h := &en.hop
	*h = Hop{Event: e, Object: o, Writer: writer, Rule: rule, Wait: time.Duration(hop), CauseNS: causeNS,
		Bands: en.bands(rule, writer, o.Key.Resource), en: en}
	xs := en.Explainers
	if xs == nil {
		xs = Explainers
	}
	for i := range xs {
		x := &xs[i]
		if x.Needs&NeedStarts != 0 && en.Evidence == nil || x.Needs&NeedThrottles != 0 && en.Throttles == nil {
			continue
		}
		if ex, ok := x.Test(h); ok {
			return ex
		}
	}
	win, _ := within(h.Bands, h.Wait)
	return Explanation{Explain: cpid.ExplainUnexplained,
		Detail: fmt.Sprintf("%s past the %s window of %s", (h.Wait - win.Max).Round(time.Millisecond), win.Max, writer)}
}

// throttled explains hop h whose writer's client held requests back
// after the cause, up to heldBackSpan before the write (client-side rate
// limiting, from its log): requests like this one, else any of its
// process's, queued before it; what is left of the hop must fit one of its
// bands. With most (before the bands), only requests like this one count,
// and they must have been held back for at least half the hop.
func (en *Engine) throttled(h *Hop, most bool) (Explanation, bool) {
	e, d := h.Event, h.Wait
	from := max(h.CauseNS, e.ReceivedNS-int64(heldBackSpan))
	kinds := []bool{false, true}
	if most {
		kinds = kinds[:1]
	}
	for _, process := range kinds {
		held, n, file := en.heldBack(e, from, e.ReceivedNS, process)
		if held <= 0 || most && held < d/2 {
			continue
		}
		if _, ok := within(h.Bands, d-held); !ok {
			continue
		}
		if !process {
			return Explanation{Explain: cpid.ExplainThrottled, Detail: fmt.Sprintf(
				"its client held back %d such request(s) for %s of the wait (client-side rate limiting, %s)",
				n, held.Round(time.Millisecond), filepath.Base(file))}, true
		}
		return Explanation{Explain: cpid.ExplainThrottled, Detail: fmt.Sprintf(
			"its process held back %d request(s) of other kinds for %s of the wait, and the write queued behind them "+
				"(client-side rate limiting, %s)", n, held.Round(time.Millisecond), filepath.Base(file))}, true
	}
	return Explanation{}, false
}

// onPurpose explains a hop that the object's spec made wait: a ReplicaSet's
// or Deployment's minReadySeconds (its controllers count a Pod as available
// that long after it is Ready, and requeue for then: a hop of at least half
// of it and at most it and an ordinary reaction; its cause may be a later
// write than the Pod's Ready), or a Deployment's
// progressDeadlineSeconds running out (the status write that says so). It
// comes before the bands: minReadySeconds may be shorter than an ordinary
// reaction's band.
func onPurpose(h *Hop) (Explanation, bool) {
	e, o, d := h.Event, h.Object, h.Wait
	apps := o.Key.Group == "apps" && (o.Key.Resource == "replicasets" || o.Key.Resource == "deployments")
	switch {
	case !apps:
	case e.deadlineExceeded && o.Deadline > 0 && d <= o.Deadline+informer:
		return Explanation{Explain: cpid.ExplainProgressDeadline, Detail: fmt.Sprintf(
			"spec.progressDeadlineSeconds %s ran out: the Deployment is marked Progressing=False (ProgressDeadlineExceeded)", o.Deadline)}, true
	case o.MinReady > 0 && d >= o.MinReady/2 && d <= o.MinReady+informer:
		return Explanation{Explain: cpid.ExplainMinReady, Detail: fmt.Sprintf(
			"spec.minReadySeconds %s: a Pod counts as available that long after it is Ready", o.MinReady)}, true
	}
	return Explanation{}, false
}
