package export

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"

	"github.com/cpid-dev/cpid"
)

// The Chrome JSON trace format, which ui.perfetto.dev and chrome://tracing
// open ("Open trace file"): {"traceEvents": [...]}, times in µs.

// PerfettoFile is a Chrome JSON trace.
type PerfettoFile struct {
	TraceEvents     []PerfettoEvent `json:"traceEvents"`
	DisplayTimeUnit string          `json:"displayTimeUnit"`
}

// PerfettoEvent is one trace event. Ts and Dur are µs with ns precision.
type PerfettoEvent struct {
	Ph   string         `json:"ph"`
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Ts   json.Number    `json:"ts"`
	Dur  json.Number    `json:"dur,omitempty"`
	ID   string         `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// Flow names: from a span's parent (its cause, or the nearest write up its
// chain of causes within its CPID's lineage, see Build) and from its links
// (the other sources of a merge).
const (
	FlowCause = "cause"
	FlowMerge = "merge"
)

// minDur is the shortest slice drawn, so that a flow binds inside it.
const minDur = 2

// track is where a span's slice is: a process (a change) and a thread (a
// lane of a writer or controller).
type track struct{ pid, tid int }

type spanKey struct {
	trace TraceID
	span  SpanID
}

// Perfetto lays traces out for a timeline viewer: one process per change
// (named after what started it, in the order of the traces); in it one
// thread per writer or controller, a complete slice per span (a writer
// whose requests overlap gets more lanes, "writer (2)", since slices of a
// thread must nest); an async slice per write on its object's track (cat
// "object", named after the object: the viewer groups an object's writes);
// and flow events into each span from its parent (FlowCause) and its links
// (FlowMerge), when both ends are in the file. Flows bind at the middle
// of their slices.
func Perfetto(traces []Trace) PerfettoFile {
	f := PerfettoFile{TraceEvents: []PerfettoEvent{}, DisplayTimeUnit: "ns"}
	where := map[spanKey]track{}
	spans := map[spanKey]Span{}
	var flows []PerfettoEvent
	for i, t := range traces {
		pid := i + 1
		name := string(t.Change.Trigger) + ": " + t.Change.Verb + " " + object(t.Change.Kind, t.Change.Namespace, t.Change.Name) + " (" + t.Change.ID + ")"
		f.TraceEvents = append(f.TraceEvents,
			PerfettoEvent{Ph: "M", Name: "process_name", Pid: pid, Ts: "0", Args: map[string]any{"name": name}},
			PerfettoEvent{Ph: "M", Name: "process_sort_index", Pid: pid, Ts: "0", Args: map[string]any{"sort_index": i}})
		type lane struct {
			tid int
			end int64 // of its last slice
		}
		lanes := map[string][]lane{} // by service
		tids := 0
		for _, s := range t.Spans {
			ls := lanes[s.Service]
			n := slices.IndexFunc(ls, func(l lane) bool { return l.end <= s.StartNS })
			if n < 0 {
				tids++
				ls = append(ls, lane{tid: tids})
				n = len(ls) - 1
				tname := s.Service
				if n > 0 {
					tname += " (" + strconv.Itoa(n+1) + ")"
				}
				f.TraceEvents = append(f.TraceEvents, PerfettoEvent{Ph: "M", Name: "thread_name", Pid: pid, Tid: tids, Ts: "0",
					Args: map[string]any{"name": tname}})
			}
			end := s.StartNS + max(s.EndNS-s.StartNS, minDur)
			ls[n].end = end
			lanes[s.Service] = ls
			tr := track{pid, ls[n].tid}
			k := spanKey{t.ID, s.ID}
			where[k], spans[k] = tr, s
			args := map[string]any{"trace_id": t.ID.String(), "span_id": s.ID.String(), "kind": string(s.Kind)}
			if !s.Parent.IsZero() {
				args["parent_span_id"] = s.Parent.String()
			}
			for _, a := range s.Attrs {
				args[a.Key] = a.Value
			}
			if s.Error != "" {
				args["error"] = s.Error
			}
			f.TraceEvents = append(f.TraceEvents, PerfettoEvent{Ph: "X", Name: s.Name, Cat: string(s.Kind), Pid: pid, Tid: tr.tid,
				Ts: micros(s.StartNS), Dur: micros(end - s.StartNS), Args: args})
			if s.Kind == KindWrite {
				id := "0x" + s.ID.String()
				obj := attr(s, "cpid.object")
				f.TraceEvents = append(f.TraceEvents,
					PerfettoEvent{Ph: "b", Name: obj, Cat: "object", Pid: pid, Tid: tr.tid, Ts: micros(s.StartNS), ID: id,
						Args: map[string]any{"writer": s.Service, "verb": s.Name, "event_id": s.EventID}},
					PerfettoEvent{Ph: "e", Name: obj, Cat: "object", Pid: pid, Tid: tr.tid, Ts: micros(end), ID: id})
			}
		}
	}
	mid := func(s Span) int64 { return s.StartNS + max(s.EndNS-s.StartNS, minDur)/2 }
	for _, t := range traces {
		for _, s := range t.Spans {
			to := where[spanKey{t.ID, s.ID}]
			add := func(name string, k spanKey) {
				from, ok := where[k]
				if !ok {
					return // a change not in the file
				}
				id := strconv.Itoa(len(flows)/2 + 1)
				flows = append(flows,
					PerfettoEvent{Ph: "s", Name: name, Cat: "cpid", Pid: from.pid, Tid: from.tid, Ts: micros(mid(spans[k])), ID: id},
					PerfettoEvent{Ph: "f", BP: "e", Name: name, Cat: "cpid", Pid: to.pid, Tid: to.tid, Ts: micros(mid(s)), ID: id})
			}
			if !s.Parent.IsZero() {
				add(FlowCause, spanKey{t.ID, s.Parent})
			}
			for _, l := range s.Links {
				add(FlowMerge, spanKey{l.Trace, l.Span})
			}
		}
	}
	f.TraceEvents = append(f.TraceEvents, flows...)
	return f
}

// micros is ns as µs with three decimals.
func micros(ns int64) json.Number {
	us, frac := ns/1000, ns%1000
	if frac < 0 {
		us, frac = us-1, frac+1000
	}
	if frac == 0 {
		return json.Number(strconv.FormatInt(us, 10))
	}
	f := strconv.FormatInt(1000+frac, 10)[1:]
	for f[len(f)-1] == '0' {
		f = f[:len(f)-1]
	}
	return json.Number(strconv.FormatInt(us, 10) + "." + f)
}

// attr is the string attribute k of s, "" when it has none.
func attr(s Span, k string) string {
	for _, a := range s.Attrs {
		if a.Key == k {
			v, _ := a.Value.(string)
			return v
		}
	}
	return ""
}

// WritePerfetto writes traces as a Chrome JSON trace, control characters in
// strings escaped (cpid.EscapeJSON).
func WritePerfetto(w io.Writer, traces []Trace) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Perfetto(traces)); err != nil {
		return err
	}
	_, err := w.Write(cpid.EscapeJSON(b.Bytes()))
	return err
}
