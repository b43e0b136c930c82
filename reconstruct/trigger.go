package reconstruct

import (
	"fmt"
	"time"

	"github.com/cpid-dev/cpid"
)

// Triggers are what may start a change, in the order the CLI lists them
// (--trigger). Engine.trigger decides every one of them but
// TriggerUnknown, which no run gives any more: a database reconstructed by
// an older version may hold it.
var Triggers = []cpid.Trigger{cpid.TriggerUser, cpid.TriggerNode, cpid.TriggerControllerStart, cpid.TriggerSchedule,
	cpid.TriggerGC, cpid.TriggerUnknown}

// rootOf says that a write starts a change, and why; the zero value says
// it does not. For a write that joins a change, changeStart is when that
// change started.
type rootOf struct {
	trigger     cpid.Trigger
	detail      string
	changeStart int64
}

// stage is when, in the processing of a write, Engine.trigger is asked.
type stage int

const (
	// atWrite: before its causes are looked for; the write itself may
	// say that it starts a change (a user's, a Node's transition).
	atWrite stage = iota
	// atLate: every cause of the write that belongs to a change waited
	// past its windows with nothing to explain it; evidence may say that
	// the writer acted on its own (its process started again, its clock,
	// a node's heartbeats).
	atLate
	// atIdle: the write has causes, none of them in a change.
	atIdle
)

// moment is what Engine.trigger is told of a write.
type moment struct {
	at stage
	// wasReady (atWrite) is a Node's Ready status before the write.
	wasReady string
	// late (atLate) is the cause of the most recent change among the
	// causes; restarted says that the writer's process started again
	// after it, at start, with nothing of its change pending and no
	// change of that start yet; why is the start's explanation, else the
	// hop's.
	late      *cause
	restarted bool
	start     int64
	why       Explanation
}

// trigger decides whether write e of writer w to o starts a change of its
// own, and why: every trigger is decided here. It may note on w and o what
// the decision found (the cause of a Node's loss, a Node marked).
func (en *Engine) trigger(m moment, e *Event, o *Object, w *cpid.Write) rootOf {
	writer := w.Writer.Name
	switch m.at {
	case atWrite:
		switch {
		case w.Writer.User:
			return rootOf{trigger: cpid.TriggerUser}
		case w.Attempt:
		case nodeTransition(o, m.wasReady):
			en.lastHeartbeat(e, o, w)
			return rootOf{trigger: cpid.TriggerNode, detail: fmt.Sprintf("Node %s Ready %s -> %s", o.Key.Name, m.wasReady, o.Ready)}
		case blindNodeStatus(o, e, writer):
			o.Marked = true
			en.lastHeartbeat(e, o, w)
			return rootOf{trigger: cpid.TriggerNode, detail: fmt.Sprintf("Node %s status written by the node lifecycle controller "+
				"(its conditions are not in the audit log: nodes audited at Metadata level)", o.Key.Name)}
		case o.Marked && e.Subresource == "status" && nodeAgent(writer) && !e.HasObject():
			o.Marked = false
			return rootOf{trigger: cpid.TriggerNode, detail: fmt.Sprintf("Node %s status written by its node agent again after the "+
				"node lifecycle controller marked it (its conditions are not in the audit log: nodes audited at Metadata level)", o.Key.Name)}
		}
	case atLate:
		hop := hopOf(e, m.late.ref)
		late := func() string {
			return fmt.Sprintf("%s %s after its cause (%s rule): %s", writer, time.Duration(hop).Round(time.Millisecond), m.late.rule, m.why.Detail)
		}
		switch {
		case m.restarted:
			// Its first write after the start opens the change; the hop
			// from the cause it waited for says why (leader-gap, restart).
			en.epoch = epochKey(e, m.start)
			w.CauseEventID, w.Rule, w.HopNS = m.late.ref.EventID, m.late.rule, hop
			w.Explain, w.ExplainDetail, w.Confidence = m.why.Explain, m.why.Detail, cpid.ConfidenceHeuristic
			return rootOf{trigger: cpid.TriggerControllerStart, detail: agentName(e.UserAgent) + " started again: " +
				string(m.why.Explain) + ": " + m.why.Detail}
		case writer == CronJobController:
			// The CronJob controller acts on its clock.
			return rootOf{trigger: cpid.TriggerSchedule, detail: late()}
		case writer == NodeController || writer == TaintEvictionController || writer == PodGarbageCollector ||
			o.Key.Resource == "nodes" && o.Key.Group == "":
			// The node lifecycle, taint eviction and pod garbage
			// collectors act on heartbeats that stopped, and a Node's own
			// writes on its agent.
			return rootOf{trigger: cpid.TriggerNode, detail: late()}
		}
	case atIdle:
		if writer == GarbageCollector && !w.Attempt {
			// The garbage collector acted with nothing pending for the
			// object or its owners (an orphan's owner long gone).
			return rootOf{trigger: cpid.TriggerGC, detail: "the garbage collector wrote " + o.Key.String() +
				" with no change pending for it or its owners"}
		}
	}
	return rootOf{}
}

// blindNodeStatus reports a Node status write by the node lifecycle
// controller whose object the audit log does not hold: the controller
// writes a Node's status only to mark it Unknown (or NotReady), so with
// nodes audited at Metadata level that write is the node's transition.
func blindNodeStatus(o *Object, e *Event, writer string) bool {
	return o.Key.Resource == "nodes" && o.Key.Group == "" && e.Subresource == "status" && writer == NodeController &&
		!e.HasObject()
}

// nodeTransition reports whether a write took a Node's Ready condition
// from one status to another (not from none: a new Node's first status).
func nodeTransition(o *Object, was string) bool {
	return o.Key.Resource == "nodes" && o.Key.Group == "" && was != "" && o.Ready != "" && o.Ready != was
}
