package reconstruct

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cpid-dev/cpid"
)

// Window is a band of reaction time: a hop of a writer, through a rule,
// that takes at most Max is explained by Explain. A writer's own entries
// replace the generic ones (Writer ""); among them the smallest Max that
// holds the hop explains it, so that a node lifecycle controller's
// ordinary reaction is "informer" and one that waited out the grace period
// "node-grace". A hop longer than every band of its writer needs evidence
// of why it waited (a retry after a failed write, the apiserver's own
// latency) or is "unexplained".
type Window struct {
	// Rule is the inference rule ("" for any), Writer the writer's name:
	// exact, a prefix ending in "*", or "" for any; Resource the written
	// object's resource ("" for any).
	Rule, Writer, Resource string
	Max                    time.Duration
	Explain                cpid.Explain
	// Why is the upstream behaviour the default follows, for people.
	Why string
	// Given marks a window from the command line (ParseWindow): the given
	// windows of a writer replace its defaults, so they narrow as well as
	// widen.
	Given bool
}

// informer is the band of an ordinary reaction.
const informer = 5 * time.Second

const informerWhy = "informer delivery is sub-second; a controller's work queue adds its processing and, under load, " +
	"the default rate limiter (10 qps, 100 burst)"

// DefaultWindows is the table of reaction windows, after the upstream
// defaults; `cpid-tui reconstruct --window` puts entries before it.
var DefaultWindows = []Window{
	{Writer: "kubelet *", Max: 5 * time.Minute, Explain: cpid.ExplainKubelet,
		Why: "the node side: image pulls, container starts and readiness probes (initialDelaySeconds, periodSeconds)"},
	{Writer: "kwok", Max: 5 * time.Minute, Explain: cpid.ExplainKubelet,
		Why: "KWOK plays the kubelet, with the delays of its stages"},
	{Writer: "taint-eviction-controller", Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
	{Writer: "taint-eviction-controller", Max: 300*time.Second + informer, Explain: cpid.ExplainToleration,
		Why: "evictions wait for the pod's tolerationSeconds of the node's NoExecute taint (300 s by DefaultTolerationSeconds)"},
	{Writer: "node-controller", Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
	{Writer: "node-controller", Resource: "pods", Max: 300*time.Second + informer, Explain: cpid.ExplainToleration,
		Why: "the node lifecycle controller evicts a pod when its tolerationSeconds of the node's NoExecute taint run out (300 s by DefaultTolerationSeconds)"},
	{Writer: "node-controller", Resource: "nodes", Max: 50*time.Second + informer, Explain: cpid.ExplainNodeGrace,
		Why: "the node lifecycle controller marks a node Unknown after --node-monitor-grace-period (50 s) without a heartbeat"},
	{Writer: "pod-garbage-collector", Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
	{Writer: "pod-garbage-collector", Resource: "pods", Max: 60*time.Second + informer, Explain: cpid.ExplainPodGC,
		Why: "the pod garbage collector deletes a Pod bound to a Node that is gone after a 40 s quarantine, and looks every 20 s (gcCheckPeriod)"},
	{Writer: "namespace-controller", Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
	{Writer: "namespace-controller", Max: 5*time.Second + informer, Explain: cpid.ExplainDeletionGrace,
		Why: "the namespace controller acts 5 s after a namespace's event (namespaceDeletionGracePeriod, so that every apiserver saw the deletion), and requeues until the namespace is empty"},
	{Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
}

// Bands returns the windows of ws that apply to a hop of writer through
// rule to an object of resource: the writer's own, else the generic ones.
func Bands(ws []Window, rule, writer, resource string) []Window {
	var given, own, generic []Window
	for _, w := range ws {
		if w.Rule != "" && w.Rule != rule || w.Resource != "" && w.Resource != resource {
			continue
		}
		match := false
		switch {
		case w.Writer == "":
			match = true
			if !w.Given {
				generic = append(generic, w)
			}
		case strings.HasSuffix(w.Writer, "*"):
			if match = strings.HasPrefix(writer, strings.TrimSuffix(w.Writer, "*")); match && !w.Given {
				own = append(own, w)
			}
		case w.Writer == writer:
			if match = true; !w.Given {
				own = append(own, w)
			}
		}
		if match && w.Given {
			given = append(given, w)
		}
	}
	if len(given) > 0 {
		return given
	}
	if len(own) > 0 {
		return own
	}
	if len(generic) > 0 {
		return generic
	}
	return []Window{{Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy}}
}

// within returns the band that explains a hop of d, and whether there is
// one; without one, the widest band.
func within(bs []Window, d time.Duration) (Window, bool) {
	var fit, widest *Window
	for i := range bs {
		b := &bs[i]
		if d <= b.Max && (fit == nil || b.Max < fit.Max) {
			fit = b
		}
		if widest == nil || b.Max > widest.Max {
			widest = b
		}
	}
	if fit != nil {
		return *fit, true
	}
	return *widest, false
}

// RuleRestart is the rule of a write that took up interrupted work after
// its writer started again: its cause is the start, not an object of
// Rules.
const RuleRestart = "restart"

// RuleNames are the rules a cause may be found by, which a window's Rule
// may name: those of Rules, then RuleRestart.
func RuleNames() []string {
	names := make([]string, 0, len(Rules)+1)
	for _, r := range Rules {
		names = append(names, r.Name)
	}
	return append(names, RuleRestart)
}

// ParseWindow reads a window given as [RULE/]WRITER=DURATION ("kwok=10m",
// "owner/replicaset-controller=2s", "*=3s" for every writer).
func ParseWindow(s string) (Window, error) {
	k, v, ok := strings.Cut(s, "=")
	d, err := time.ParseDuration(v)
	if !ok || err != nil || d <= 0 || k == "" {
		return Window{}, fmt.Errorf("window %q: want [RULE/]WRITER=DURATION, e.g. kwok=10m or owner/replicaset-controller=2s", s)
	}
	w := Window{Max: d, Explain: cpid.ExplainInformer, Why: "given with --window", Given: true}
	if r, wr, ok := strings.Cut(k, "/"); ok {
		w.Rule, k = r, wr
	}
	if k != "*" {
		w.Writer = k
	}
	if strings.HasPrefix(w.Writer, "kubelet ") || w.Writer == "kwok" {
		w.Explain = cpid.ExplainKubelet
	}
	return w, nil
}

// heldBackSpan is how far back from a write its client's throttling is
// looked for.
const heldBackSpan = 5 * time.Minute

// exactRules find causes named by the objects themselves (owner
// references); the others find them by time.
var exactRules = map[string]bool{"owner": true}

// timedRules pick their causes among several objects by time alone (the
// dependents written last, a sibling deleted last): a write still in
// flight when the effect arrived is not one of them, however close.
var timedRules = map[string]bool{"dependents": true, "siblings": true}

// retryWithin is how long after a failed write the writer's next write to
// the object still counts as its retry.
const retryWithin = 5 * time.Minute

// explanation is why a hop took as long as it did.
type explanation struct {
	explain cpid.Explain
	detail  string
	// start is the writer's start the explanation found between the cause
	// and the write (restart, leader-gap), 0 for others.
	start int64
}

// hopOf is the hop from cause r to write e: from when r became visible
// (its stage time, or e's receive time if earlier: watchers see a write at
// its etcd commit, before the apiserver answers its writer) to e completing.
func hopOf(e *Event, r *Ref) int64 { return e.StageNS - min(r.StageNS, e.ReceivedNS) }

// explain says why writer's write e to o waited hop after its cause
// (visible at causeNS) through rule: a retry when the same writer's write
// to the object failed meanwhile; an ordinary reaction within one of the
// writer's bands; the apiserver when the request itself took most of it;
// else unexplained.
func (en *Engine) explain(e *Event, o *Object, writer, rule string, hop, causeNS int64) explanation {
	d := time.Duration(hop)
	// A retry is a retry however quick: the write it repeats failed (within
	// retryWithin: a work queue's backoff is seconds, its cap minutes).
	if f, ok := o.failed[writer]; ok && f.StageNS <= e.StageNS && e.StageNS-f.StageNS <= int64(retryWithin) {
		x := explanation{explain: cpid.ExplainBackoff}
		if f.Code == 409 {
			x.explain = cpid.ExplainRequeue
		}
		x.detail = fmt.Sprintf("retried after its write failed with %d %s before", f.Code,
			time.Duration(e.StageNS-f.StageNS).Round(time.Millisecond))
		return x
	}
	if x, ok := onPurpose(e, o, d); ok {
		return x
	}
	// Evidence before bands: a process that started again (or a new
	// leader) between the cause and the write is why it waited, even when
	// an ordinary reaction's band would hold the hop.
	if d >= silenceMin && !nodeAgent(writer) && en.silentBetween(agentName(e.UserAgent), causeNS, e.ReceivedNS) {
		// (A node agent's hops of seconds are its containers starting:
		// its restarts are looked for past its band only.)
		if start, x, ok := en.restarted(e, causeNS); ok {
			x.start = start
			return x
		}
	}
	bs := en.bands(rule, writer, o.Key.Resource)
	// Evidence before bands: a client that held the write back for most of
	// a hop of a second or more (client-go logs the waits past 1 s) is why
	// it waited, even when an ordinary reaction's band would hold it.
	from := max(causeNS, e.ReceivedNS-int64(heldBackSpan))
	if d >= silenceMin {
		if x, ok := en.throttled(e, bs, d, from, true); ok {
			return x
		}
	}
	if win, ok := within(bs, d); ok {
		x := explanation{explain: win.Explain, detail: bandDetail(win, d)}
		if win.Explain == cpid.ExplainToleration {
			if t := o.tolerated(); t != "" {
				x.detail = fmt.Sprintf("evicted %s after its Node's change: the Pod tolerates %s (its spec)", d.Round(time.Millisecond), t)
			}
		}
		return x
	}
	if o.Key.Resource == "pods" && o.Key.Group == "" && o.unschedNS != 0 && o.unschedNS <= e.ReceivedNS {
		msg := o.unsched
		if len(msg) > 160 {
			msg = msg[:157] + "..."
		}
		return explanation{explain: cpid.ExplainUnschedulable, detail: fmt.Sprintf("the Pod was Unschedulable for %s before it: %s",
			time.Duration(e.ReceivedNS-o.unschedNS).Round(time.Millisecond), msg)}
	}
	// The writer's client may have held requests back (client-side rate
	// limiting): its log says when and for how long; the rest of the hop
	// must be within the window.
	if x, ok := en.throttled(e, bs, d, from, false); ok {
		return x
	}
	if lat := e.APILatency(); lat > d/2 {
		x := explanation{explain: cpid.ExplainAPIServer, detail: fmt.Sprintf("the apiserver took %s of it", lat.Round(time.Millisecond))}
		if parts := e.LatencyParts(); parts != "" {
			x.detail += " (" + parts + ", by its audit annotations)"
		}
		return x
	}
	win, _ := within(bs, d)
	return explanation{explain: cpid.ExplainUnexplained,
		detail: fmt.Sprintf("%s past the %s window of %s", (d - win.Max).Round(time.Millisecond), win.Max, writer)}
}

// bandDetail says, for the bands that stand for a wait of the control
// plane's own (not an ordinary reaction), what waited and for how long.
func bandDetail(w Window, d time.Duration) string {
	switch w.Explain {
	case cpid.ExplainToleration:
		return fmt.Sprintf("evicted %s after its Node's change: the Pod tolerates the Node's NoExecute taint "+
			"(node.kubernetes.io/unreachable or not-ready) for its tolerationSeconds, 300 s unless its spec says less", d.Round(time.Millisecond))
	case cpid.ExplainNodeGrace:
		return fmt.Sprintf("%s without a heartbeat: the node lifecycle controller marks a Node Unknown after "+
			"--node-monitor-grace-period (50 s by default)", d.Round(time.Millisecond))
	case cpid.ExplainPodGC:
		return fmt.Sprintf("%s after its Node went: the pod garbage collector deletes a Pod of a Node that is gone "+
			"after a 40 s quarantine, looking every 20 s", d.Round(time.Millisecond))
	}
	return ""
}

// throttled explains a hop of d whose writer's client held requests back
// after from (client-side rate limiting, from its log): requests like this
// one, else any of its process's, queued before it; what is left of the
// hop must fit one of the bands bs. With most (before the bands), only
// requests like this one count, and they must have been held back for at
// least half the hop.
func (en *Engine) throttled(e *Event, bs []Window, d time.Duration, from int64, most bool) (explanation, bool) {
	kinds := []bool{false, true}
	if most {
		kinds = kinds[:1]
	}
	for _, process := range kinds {
		held, n, file := en.heldBack(e, from, e.ReceivedNS, process)
		if held <= 0 || most && held < d/2 {
			continue
		}
		if _, ok := within(bs, d-held); !ok {
			continue
		}
		if !process {
			return explanation{explain: cpid.ExplainThrottled, detail: fmt.Sprintf(
				"its client held back %d such request(s) for %s of the wait (client-side rate limiting, %s)",
				n, held.Round(time.Millisecond), filepath.Base(file))}, true
		}
		return explanation{explain: cpid.ExplainThrottled, detail: fmt.Sprintf(
			"its process held back %d request(s) of other kinds for %s of the wait, and the write queued behind them "+
				"(client-side rate limiting, %s)", n, held.Round(time.Millisecond), filepath.Base(file))}, true
	}
	return explanation{}, false
}

// onPurpose explains a hop that the object's spec made wait: a ReplicaSet's
// or Deployment's minReadySeconds (its controllers count a Pod as available
// that long after it is Ready, and requeue for then: a hop of at least half
// of it and at most it and an ordinary reaction; its cause may be a later
// write than the Pod's Ready), or a Deployment's
// progressDeadlineSeconds running out (the status write that says so). It
// comes before the bands: minReadySeconds may be shorter than an ordinary
// reaction's band.
func onPurpose(e *Event, o *Object, d time.Duration) (explanation, bool) {
	apps := o.Key.Group == "apps" && (o.Key.Resource == "replicasets" || o.Key.Resource == "deployments")
	switch {
	case !apps:
	case e.deadlineExceeded && o.deadline > 0 && d <= o.deadline+informer:
		return explanation{explain: cpid.ExplainProgressDeadline, detail: fmt.Sprintf(
			"spec.progressDeadlineSeconds %s ran out: the Deployment is marked Progressing=False (ProgressDeadlineExceeded)", o.deadline)}, true
	case o.minReady > 0 && d >= o.minReady/2 && d <= o.minReady+informer:
		return explanation{explain: cpid.ExplainMinReady, detail: fmt.Sprintf(
			"spec.minReadySeconds %s: a Pod counts as available that long after it is Ready", o.minReady)}, true
	}
	return explanation{}, false
}

// triggerOf names the evidence that a write of writer to o, whose causes
// all waited past their windows, started a change of its own: a schedule
// (the CronJob controller acts on its clock), a node (the node lifecycle,
// taint eviction and pod garbage collectors act on heartbeats that stopped,
// and a Node's own writes on its agent); TriggerUnknown when there is
// none, and the write stays in its cause's change.
func triggerOf(writer string, o *Object) cpid.Trigger {
	switch {
	case writer == "cronjob-controller":
		return cpid.TriggerSchedule
	case writer == "node-controller" || writer == "taint-eviction-controller" || writer == "pod-garbage-collector" ||
		(o.Key.Resource == "nodes" && o.Key.Group == ""):
		return cpid.TriggerNode
	}
	return cpid.TriggerUnknown
}

// gcWriter is the garbage collector's name as a writer.
const gcWriter = "generic-garbage-collector"

// blindNodeStatus reports a Node status write by the node lifecycle
// controller whose object the audit log does not hold: the controller
// writes a Node's status only to mark it Unknown (or NotReady), so with
// nodes audited at Metadata level that write is the node's transition.
func blindNodeStatus(o *Object, e *Event, writer string) bool {
	return o.Key.Resource == "nodes" && o.Key.Group == "" && e.Subresource == "status" && writer == "node-controller" &&
		!e.HasObject()
}

// nodeTransition reports whether a write took a Node's Ready condition
// from one status to another (not from none: a new Node's first status).
func nodeTransition(o *Object, was string) bool {
	return o.Key.Resource == "nodes" && o.Key.Group == "" && was != "" && o.ready != "" && o.ready != was
}

// failure is the latest failed write to an object.
type failure struct {
	Writer  string
	Code    int
	StageNS int64
}

// bands is Bands of the engine's windows, kept per rule, writer and
// resource: the table does not change within a run.
func (en *Engine) bands(rule, writer, resource string) []Window {
	k := [3]string{rule, writer, resource}
	if bs, ok := en.bandCache[k]; ok {
		return bs
	}
	if en.bandCache == nil {
		en.bandCache = map[[3]string][]Window{}
	}
	bs := Bands(en.windows(), rule, writer, resource)
	en.bandCache[k] = bs
	return bs
}

func (en *Engine) windows() []Window {
	if en.Windows != nil {
		return en.Windows
	}
	return DefaultWindows
}
