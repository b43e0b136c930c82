package reconstruct

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cpid-dev/cpid"
)

// What a run reads beside the writes to explain a controller's silence:
// when a process (re)started its informers, and when a leader election
// lease changed hands. Evidence is read again from EvidenceLookback before
// each run's cutoff, so it is not part of the saved state.

// StartMarkers mark the initial list of an informer in a request URI: a
// watch streaming its initial events (WatchList), or a list from the
// watch cache.
var StartMarkers = []string{"sendInitialEvents=true", "resourceVersion=0"}

// LeaderLeases are the leader election leases of the control plane's
// controllers, in LeaseNamespace.
var LeaderLeases = []string{"kube-controller-manager", "kube-scheduler", "cloud-controller-manager"}

// LeaseNamespace is where the leader election leases live.
const LeaseNamespace = "kube-system"

// NodeLeaseNamespace is where each Node's Lease lives, renewed by its
// kubelet as its heartbeat.
const NodeLeaseNamespace = "kube-node-lease"

// AcquiredMsg is what client-go's leader election logs when it acquired a
// lease, with the lease in the field "lock" (k8s.io/client-go/tools/
// leaderelection); before structured logging it logged
// "successfully acquired lease NAMESPACE/NAME".
const AcquiredMsg = "Successfully acquired lease"

// acquiredMsgs are the messages of a lease acquisition of LeaderLeases.
func acquiredMsgs() []string {
	out := []string{AcquiredMsg}
	for _, l := range LeaderLeases {
		out = append(out, "successfully acquired lease "+LeaseNamespace+"/"+l)
	}
	return out
}

// ThrottleMsg is client-go's log message when it held a request back
// (client-side rate limiting), with its delay, verb and URL as fields. It
// logs it at verbosity 2 when the wait passed 1 s (k8s.io/client-go/rest,
// request.go), so a controller run at -v=2 (kube-controller-manager's
// default in most installers) says why its writes came late.
const ThrottleMsg = "Waited before sending request"

// throttleSkew is how far apart a throttle's log time and the request's
// receive time may be: the client logs it just before sending; the
// apiserver's clock may differ a little.
const throttleSkew = time.Second

// evidenceReadAhead is how far past the write that needs it evidence is
// read at once.
const evidenceReadAhead = 10 * time.Minute

// EvidenceLookback is how far before a wait evidence is read: a lease's
// holder before the wait is known from its earlier writes.
const EvidenceLookback = 10 * time.Minute

// A start is a burst: at least startBurst resources listed by one process
// within startSpan, at least startGap after its previous start. A single
// informer re-listing after its watch expired is not a start.
const (
	startBurst = 5
	startSpan  = 2 * time.Second
	startGap   = 10 * time.Second
)

// listed is one initial list of a process.
type listed struct {
	at       int64
	resource string
}

// evidence is what the engine knows of starts and leaders.
type evidence struct {
	// starts holds, per program (the user agent's, "kube-controller-manager"),
	// the times it started listing after a quiet spell, in order.
	starts map[string][]int64
	recent map[string][]listed // each program's lists of the last startSpan
	// leases holds, per lease, its changes of holder in order, and holder
	// the current one.
	leases map[string][]handover
	holder map[string]leaseHolder
	// logged and logHolder are the same from the leaders' own logs, for
	// leases audited without their objects (Metadata level): the holder is
	// the log that said it acquired the lease.
	logged    map[string][]handover
	logHolder map[string]leaseHolder
}

// throttle is a request a client held back before sending it.
type throttle struct {
	at    int64
	verb  string // the HTTP method
	path  string // the URL's path
	delay time.Duration
	file  string
}

// handover is a lease changing hands.
type handover struct {
	From, To string
	FromNS   int64 // the old holder's last write (its acquisition, from logs)
	AtNS     int64 // the new holder's first write (its acquisition, from logs)
	Logged   bool  // read from the leaders' logs: From and To are logs
}

type leaseHolder struct {
	name string
	at   int64
}

func newEvidence() evidence {
	return evidence{starts: map[string][]int64{}, recent: map[string][]listed{}, leases: map[string][]handover{},
		holder: map[string]leaseHolder{}, logged: map[string][]handover{}, logHolder: map[string]leaseHolder{}}
}

// add records a start or a lease write; they come in time order.
func (x *evidence) add(ev cpid.Evidence) {
	switch ev.Kind {
	case "start":
		p := agentName(ev.UserAgent)
		r := append(x.recent[p], listed{at: ev.AtNS, resource: ev.Resource})
		for len(r) > 0 && ev.AtNS-r[0].at > int64(startSpan) {
			r = r[1:]
		}
		x.recent[p] = r
		ss := x.starts[p]
		if len(r) >= startBurst && (len(ss) == 0 || r[0].at-ss[len(ss)-1] > int64(startGap)) && distinct(r, startBurst) {
			x.starts[p] = append(ss, r[0].at)
		}
	case "lease":
		if ev.Code >= 400 || ev.Holder == "" {
			return
		}
		h := x.holder[ev.Lease]
		if h.name != "" && h.name != ev.Holder {
			x.leases[ev.Lease] = append(x.leases[ev.Lease], handover{From: h.name, To: ev.Holder, FromNS: h.at, AtNS: ev.AtNS})
		}
		x.holder[ev.Lease] = leaseHolder{name: ev.Holder, at: ev.AtNS}
	case "acquired":
		lock := ev.Lease
		if lock == "" {
			lock = strings.TrimPrefix(strings.ToLower(ev.Holder), "successfully acquired lease ")
		}
		ns, name, _ := strings.Cut(lock, "/")
		if ns != LeaseNamespace || !slices.Contains(LeaderLeases, name) {
			return
		}
		holder := logHolder(ev.File)
		h := x.logHolder[name]
		if h.name != holder {
			x.logged[name] = append(x.logged[name], handover{From: h.name, To: holder, FromNS: h.at, AtNS: ev.AtNS, Logged: true})
		}
		x.logHolder[name] = leaseHolder{name: holder, at: ev.AtNS}
	}
}

// logHolder names the leader whose log is file: its file name, or for a
// kubelet's container log (.../POD/CONTAINER/N.log, N the restart count)
// the pod and container, which a restart does not change.
func logHolder(file string) string {
	dir, base := filepath.Split(file)
	if n := strings.TrimSuffix(base, ".log"); n != base && n != "" && strings.Trim(n, "0123456789") == "" {
		container := filepath.Base(dir)
		return filepath.Base(filepath.Dir(filepath.Clean(dir))) + "/" + container
	}
	return base
}

// startIn returns the latest start of program after afterNS and at most
// atNS.
func (x *evidence) startIn(program string, afterNS, atNS int64) (int64, bool) {
	ss := x.starts[program]
	i := sort.Search(len(ss), func(i int) bool { return ss[i] > atNS })
	if i > 0 && ss[i-1] > afterNS {
		return ss[i-1], true
	}
	return 0, false
}

// handoverIn returns the latest handover of program's lease after afterNS
// and at most atNS.
// The lease's writes in the audit log say it when they hold the lease
// (holderIdentity); else the leaders' own logs.
func (x *evidence) handoverIn(program string, afterNS, atNS int64) (handover, bool) {
	for _, hs := range [][]handover{x.leases[program], x.logged[program]} {
		for i := len(hs) - 1; i >= 0; i-- {
			if h := hs[i]; h.AtNS <= atNS {
				if h.AtNS > afterNS {
					return h, true
				}
				break
			}
		}
	}
	return handover{}, false
}

// Throttles reads the log lines of clients holding requests back
// (ThrottleMsg) logged after afterNS and at most atNS, in time order; nil
// reads none.
type Throttles func(afterNS, atNS int64) ([]cpid.Evidence, error)

// throttleCache holds the throttles read, from lo to hi: writes come in
// receive order, so it slides forward, read ahead and dropped behind.
type throttleCache struct {
	lo, hi int64
	list   []throttle
}

// throttlesIn returns the throttles logged in (from, to], reading what it
// has not read yet.
func (en *Engine) throttlesIn(from, to int64) []throttle {
	c := &en.thr
	if en.Throttles == nil {
		return nil
	}
	if c.hi == 0 || from < c.lo {
		// First use, or a write older than any before: start again there.
		*c = throttleCache{lo: from, hi: from}
	}
	if to > c.hi {
		hi := to + int64(evidenceReadAhead)
		evs, err := en.Throttles(c.hi, hi)
		if err != nil {
			en.evidenceErr = err
			return nil
		}
		for _, ev := range evs {
			d, err := time.ParseDuration(ev.Delay)
			if err != nil || d <= 0 {
				continue
			}
			path := ev.URL
			if u, err := url.Parse(ev.URL); err == nil {
				path = u.Path
			}
			c.list = append(c.list, throttle{at: ev.AtNS, verb: ev.Verb, path: path, delay: d, file: ev.File})
		}
		c.hi = hi
	}
	// Drop what no later write looks back to.
	if keep := from - int64(evidenceReadAhead); keep > c.lo {
		i := sort.Search(len(c.list), func(i int) bool { return c.list[i].at > keep })
		c.list = append(c.list[:0], c.list[i:]...)
		c.lo = keep
	}
	lo := sort.Search(len(c.list), func(i int) bool { return c.list[i].at > from })
	hi := sort.Search(len(c.list), func(i int) bool { return c.list[i].at > to })
	return c.list[lo:hi]
}

// heldBack returns how much of the interval (from, to] clients spent
// holding back requests like write e (the same HTTP method on e's resource
// collection or a member of it): the union of the logged waits, each the
// delay before its log time; how many requests those were, and the log of
// the latest. A controller's writes queue behind each other (the ReplicaSet
// controller creates Pods in batches, each after the previous one), so a
// write waits for the others' throttling as well as its own.
//
// With process set, it counts every request the writer's process held
// back instead (its log's name begins with the program's): a controller's
// requests share its client's rate limiter, so a status update waits for
// the deletes queued before it.
func (en *Engine) heldBack(e *Event, from, to int64, process bool) (held time.Duration, n int, file string) {
	method := cpid.Method(e.Verb)
	if method == "" {
		return 0, 0, ""
	}
	program := agentName(e.UserAgent)
	type span struct{ lo, hi int64 }
	var spans []span
	for _, t := range en.throttlesIn(from, to+int64(throttleSkew)) {
		switch {
		case process && !strings.HasPrefix(filepath.Base(t.file), program):
			continue
		case !process && (t.verb != method || !inCollection(e, t.path)):
			continue
		}
		sp := span{max(t.at-int64(t.delay), from), min(t.at, to)}
		if sp.hi > sp.lo {
			spans = append(spans, sp)
			n++
			file = t.file
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	var end int64
	for _, sp := range spans {
		if sp.lo > end {
			held += time.Duration(sp.hi - sp.lo)
			end = sp.hi
		} else if sp.hi > end {
			held += time.Duration(sp.hi - end)
			end = sp.hi
		}
	}
	return held, n, file
}

// inCollection reports whether path is e's resource collection or a member
// of it: the group's prefix, then .../namespaces/NS/RESOURCE[/NAME[/SUB]].
func inCollection(e *Event, path string) bool {
	if e.APIGroup == "" {
		if !strings.HasPrefix(path, "/api/") {
			return false
		}
	} else if !strings.HasPrefix(path, "/apis/"+e.APIGroup+"/") {
		return false
	}
	coll := "/" + e.Resource
	if e.Namespace != "" {
		coll = "/namespaces/" + e.Namespace + coll
	}
	i := strings.Index(path, coll)
	if i < 0 {
		return false
	}
	rest := path[i+len(coll):]
	return rest == "" || rest[0] == '/'
}

// Evidence reads the evidence of one program (a user agent's program
// name) received after afterNS and at most atNS, in time order; nil reads
// none. A run reads it from its store only for the writes that need it
// (those past their windows), so a run where nothing is late reads none.
type Evidence func(program string, afterNS, atNS int64) ([]cpid.Evidence, error)

// evidenceOf returns what explains a wait of program's up to atNS after
// afterNS: the evidence from EvidenceLookback before, so that a lease's
// holder before the wait is known. Writes come in time order, so what was
// read for one late write is kept and only the newer part read for the
// next.
func (en *Engine) evidenceOf(program string, afterNS, atNS int64) *evidence {
	// A start that explains a wait comes shortly before the write, however
	// old the cause: evidence is read from EvidenceLookback before the
	// later of the cause and EvidenceLookback before the write, so that the
	// window only moves forward as writes come (a cause hours old would
	// make every read start again from it).
	lo := max(afterNS, atNS-int64(EvidenceLookback)) - int64(EvidenceLookback)
	// One read serves every program: the evidence keeps each program's
	// starts, and leases by name (a read per program scanned the same
	// lists once for each).
	c := en.evCache[""]
	if c == nil || lo < c.lo || en.Evidence == nil {
		x := newEvidence()
		c = &evCache{lo: lo, hi: lo, x: &x}
		if en.evCache == nil {
			en.evCache = map[string]*evCache{}
		}
		en.evCache[""] = c
	}
	if en.Evidence != nil && atNS > c.hi {
		// Read ahead: late writes come by the thousand in a busy bundle,
		// and a query each cost more than the engine's work. Lookups
		// filter by time, so evidence read early changes nothing.
		to := atNS + int64(evidenceReadAhead)
		evs, err := en.Evidence("", c.hi, to)
		if err != nil {
			en.evidenceErr = err
			return c.x
		}
		for _, ev := range evs {
			c.x.add(ev)
		}
		c.hi = to
	}
	return c.x
}

// evCache is the evidence read of one program, from lo to hi.
type evCache struct {
	lo, hi int64
	x      *evidence
}

// restarted looks for why writer's write e, whose cause became visible at
// causeNS, waited that long: its process started again (re-listing its
// informers) in between, maybe after a leader election handover. It
// returns the start and the explanation.
func (en *Engine) restarted(e *Event, causeNS int64) (int64, Explanation, bool) {
	p := agentName(e.UserAgent)
	ev := en.evidenceOf(p, causeNS, e.ReceivedNS)
	start, ok := ev.startIn(p, causeNS, e.ReceivedNS)
	if !ok {
		return 0, Explanation{}, false
	}
	at := time.Unix(0, start).UTC().Format("15:04:05.000")
	if h, ok := ev.handoverIn(p, causeNS, e.ReceivedNS); ok && h.Logged {
		from := "a holder whose log is not in the bundle"
		if h.From != "" {
			from = fmt.Sprintf("%s (which had acquired it at %s)", h.From, clockOf(h.FromNS))
		}
		return start, Explanation{Explain: cpid.ExplainLeaderGap, Detail: fmt.Sprintf(
			"lease %s/%s went from %s to %s, which logged %q at %s (the leases' holders are not in the audit log: "+
				"from the leaders' logs); informers started at %s", LeaseNamespace, p, from, h.To, AcquiredMsg, clockOf(h.AtNS), at)}, true
	} else if ok {
		return start, Explanation{Explain: cpid.ExplainLeaderGap, Detail: fmt.Sprintf(
			"lease %s/%s held by %s (last renewed %s) went to %s at %s: no leader for %s; informers started at %s",
			LeaseNamespace, p, h.From, clockOf(h.FromNS), h.To, clockOf(h.AtNS),
			time.Duration(h.AtNS-h.FromNS).Round(time.Millisecond), at)}, true
	}
	stopped := ""
	if last := en.lastBefore(p, start); last > causeNS {
		stopped = fmt.Sprintf("%s stopped writing after %s; ", p, clockOf(last))
	} else if last > 0 {
		stopped = fmt.Sprintf("%s wrote nothing after %s, before the cause; ", p, clockOf(last))
	}
	return start, Explanation{Explain: cpid.ExplainRestart, Detail: fmt.Sprintf("%sit started again: its informers listed at %s, %s after the cause",
		stopped, at, time.Duration(start-causeNS).Round(time.Millisecond))}, true
}

func clockOf(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000") }

// epochKey names one start of a program.
func epochKey(e *Event, start int64) string {
	return agentName(e.UserAgent) + "@" + fmt.Sprint(start)
}

// distinct reports whether ls name at least n different resources.
func distinct(ls []listed, n int) bool {
	var seen []string
	for _, l := range ls {
		if !slices.Contains(seen, l.resource) {
			if seen = append(seen, l.resource); len(seen) >= n {
				return true
			}
		}
	}
	return false
}

// silenceMin is the shortest pause in a program's writes that counts as a
// silence: a process that stopped, or lost its lease.
const silenceMin = time.Second

// keepSilences is how many of a program's latest silences are kept: a
// restart is looked for a few seconds to minutes after its silence began.
const keepSilences = 16

// activity is when a program wrote: its latest write and its latest
// silences, each from the last write before it to the first after it.
type activity struct {
	Last     int64
	Silences [][2]int64 `json:",omitempty"`
}

// active records that program wrote at ns (writes come in receive order).
func (en *Engine) active(program string, ns int64) {
	a := en.mem.Programs[program]
	if a == nil {
		a = &activity{}
		en.mem.Programs[program] = a
	}
	if a.Last != 0 && ns-a.Last >= int64(silenceMin) {
		a.Silences = append(a.Silences, [2]int64{a.Last, ns})
		if len(a.Silences) > keepSilences {
			a.Silences = slices.Delete(a.Silences, 0, 1)
		}
	}
	a.Last = max(a.Last, ns)
}

// lastBefore returns when program last wrote before its start at start:
// the beginning of the silence the start fell in; 0 when none did (the
// program wrote right up to it, or never before).
func (en *Engine) lastBefore(program string, start int64) int64 {
	a := en.mem.Programs[program]
	if a == nil {
		return 0
	}
	for i := len(a.Silences) - 1; i >= 0; i-- {
		if s := a.Silences[i]; s[0] < start && start <= s[1] {
			return s[0]
		}
	}
	return 0
}

// silentBetween reports whether program had a silence (no write for
// silenceMin or more) that ended after fromNS and began before toNS: a
// process that started again was silent meanwhile, so a program that kept
// writing needs no evidence read.
func (en *Engine) silentBetween(program string, fromNS, toNS int64) bool {
	a := en.mem.Programs[program]
	if a == nil {
		return true // nothing known of it: look
	}
	for i := len(a.Silences) - 1; i >= 0; i-- {
		s := a.Silences[i]
		if s[1] <= fromNS {
			return false
		}
		if s[0] < toNS {
			return true
		}
	}
	// The silences kept do not reach back to fromNS: an older one may
	// hold the start.
	return len(a.Silences) == keepSilences
}

// pending reports whether the change of cause r was still going when the
// process that writes e stopped before its start at start: its latest
// write came at most an ordinary reaction before the process's last write
// (or after it). A process that started again takes up what it had
// pending; what it writes for a change that had settled long before it
// stopped is a resync, its own controller-start change.
func (en *Engine) pending(e *Event, r *Ref, start int64) bool {
	last := en.lastBefore(agentName(e.UserAgent), start)
	if last == 0 || r.Change == "" {
		return r.Change != ""
	}
	changeLast, _ := en.mem.ChangeLast.Get(r.Change)
	return max(changeLast, r.StageNS) >= last-int64(informer)
}

// UnexplainedHops counts the writes kept in their changes after a hop past
// every window of their writer that nothing in the logs explains, with the
// longest of them.
type UnexplainedHops struct {
	N       int
	Longest time.Duration
	What    string // the longest: writer, verb and object
}

func (en *Engine) unexplainedHop(e *Event, o *Object, writer string, hop int64) {
	u := &en.Unexplained
	u.N++
	if d := time.Duration(hop); d > u.Longest {
		verb := e.Verb
		if e.Subresource != "" {
			verb += "/" + e.Subresource
		}
		u.Longest, u.What = d, fmt.Sprintf("%s %s %s", writer, verb, o.Key)
	}
}
