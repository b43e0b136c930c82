package reconstruct

import (
	"encoding/json"
	"sort"

	"github.com/cpid-dev/cpid"
)

// PodTimes are the milestones of one Pod of a change, in apiserver time (0:
// not reached in the logs).
type PodTimes struct {
	Change        string
	ChangeStartNS int64
	Namespace     string
	Name          string
	CreatedNS     int64 // the create completed
	ScheduledNS   int64 // the binding completed (or spec.nodeName first seen)
	RunningNS     int64 // status.phase Running first written
	ReadyNS       int64 // condition Ready=True first written
}

// PodMilestones folds the writes of each Pod, in apiserver order, into its
// milestones.
func PodMilestones(ws []cpid.PodWrite) []PodTimes {
	idx := map[[3]string]int{}
	var out []PodTimes
	for _, w := range ws {
		k := [3]string{w.Change, w.Namespace, w.Name}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, PodTimes{Change: w.Change, ChangeStartNS: w.ChangeStartNS, Namespace: w.Namespace, Name: w.Name})
		}
		p := &out[i]
		set := func(at *int64) {
			if *at == 0 {
				*at = w.StageNS
			}
		}
		switch {
		case w.Verb == "create" && w.Subresource == "":
			set(&p.CreatedNS)
		case w.Verb == "create" && w.Subresource == "binding":
			set(&p.ScheduledNS)
		}
		if len(w.Object) == 0 || w.Verb == "delete" {
			continue
		}
		var pod struct {
			Spec   struct{ NodeName string } `json:"spec"`
			Status struct {
				Phase      string `json:"phase"`
				Conditions []struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"conditions"`
			} `json:"status"`
		}
		if json.Unmarshal(w.Object, &pod) != nil {
			continue
		}
		if pod.Spec.NodeName != "" {
			set(&p.ScheduledNS)
		}
		if pod.Status.Phase == "Running" {
			set(&p.RunningNS)
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				set(&p.ReadyNS)
			}
		}
	}
	return out
}

// Percentiles summarize durations in ns.
type Percentiles struct {
	N                  int
	P50, P90, P99, Max int64
}

// Summarize computes nearest-rank percentiles of vals (it sorts them).
func Summarize(vals []int64) Percentiles {
	if len(vals) == 0 {
		return Percentiles{}
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	rank := func(p float64) int64 {
		i := int(p*float64(len(vals))+0.999999) - 1
		return vals[min(max(i, 0), len(vals)-1)]
	}
	return Percentiles{N: len(vals), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: vals[len(vals)-1]}
}

// Phase is one SLI: a named duration between two milestones of a Pod.
type Phase struct {
	Name string
	Doc  string
	Of   func(p PodTimes) (int64, bool)
}

func between(a, b int64) (int64, bool) { return b - a, a != 0 && b != 0 }

// Phases are the SLIs reported: from the user's change to each milestone of
// the Pods it caused (the control-plane propagation latency users care
// about), and the phases of the Kubernetes scalability tests' pod startup
// latency, all in apiserver time.
var Phases = []Phase{
	{"change_to_created", "change started to Pod created", func(p PodTimes) (int64, bool) { return between(p.ChangeStartNS, p.CreatedNS) }},
	{"change_to_scheduled", "change started to Pod bound to a node", func(p PodTimes) (int64, bool) { return between(p.ChangeStartNS, p.ScheduledNS) }},
	{"change_to_running", "change started to Pod Running", func(p PodTimes) (int64, bool) { return between(p.ChangeStartNS, p.RunningNS) }},
	{"change_to_ready", "change started to Pod Ready", func(p PodTimes) (int64, bool) { return between(p.ChangeStartNS, p.ReadyNS) }},
	{"create_to_schedule", "pod startup: created to scheduled", func(p PodTimes) (int64, bool) { return between(p.CreatedNS, p.ScheduledNS) }},
	{"schedule_to_run", "pod startup: scheduled to Running", func(p PodTimes) (int64, bool) { return between(p.ScheduledNS, p.RunningNS) }},
	{"run_to_ready", "pod startup: Running to Ready", func(p PodTimes) (int64, bool) { return between(p.RunningNS, p.ReadyNS) }},
	{"pod_startup", "pod startup: created to Running (the scalability SLO's measure, in apiserver time)", func(p PodTimes) (int64, bool) { return between(p.CreatedNS, p.RunningNS) }},
}

// PhaseStats computes every phase over pods.
func PhaseStats(pods []PodTimes) map[string]Percentiles {
	out := map[string]Percentiles{}
	for _, ph := range Phases {
		var vals []int64
		for _, p := range pods {
			if d, ok := ph.Of(p); ok {
				vals = append(vals, d)
			}
		}
		out[ph.Name] = Summarize(vals)
	}
	return out
}

// SLI is one line of the SLI report (cpid-tui query sli, the report's SLI
// table): a phase over every Pod, the hop latency of one writer, or one
// change's time to its Pods Ready.
type SLI struct {
	Scope string `json:"scope"`  // "phase", "hop" or "change"
	Name  string `json:"name"`   // the phase, the controller, or the change ID
	Doc   string `json:"doc"`    // what it measures
	N     int    `json:"n"`      // how many samples
	P50NS int64  `json:"p50_ns"` // percentiles in ns, nearest rank
	P90NS int64  `json:"p90_ns"`
	P99NS int64  `json:"p99_ns"`
	MaxNS int64  `json:"max_ns"`
}

// SLIs computes the SLI report from the writes of the Pods changes created
// and the hops of their writes: every phase of Phases, the hop latency of
// each writer (sorted by name), and each change's time to Pod Ready, in the
// order of the changes' Pods.
func SLIs(ws []cpid.PodWrite, hops []cpid.Hop) []SLI {
	pods := PodMilestones(ws)
	var out []SLI
	add := func(scope, name, doc string, p Percentiles) {
		out = append(out, SLI{Scope: scope, Name: name, Doc: doc, N: p.N, P50NS: p.P50, P90NS: p.P90, P99NS: p.P99, MaxNS: p.Max})
	}
	stats := PhaseStats(pods)
	for _, ph := range Phases {
		add("phase", ph.Name, ph.Doc, stats[ph.Name])
	}
	byWriter := map[string][]int64{}
	for _, h := range hops {
		byWriter[h.Writer] = append(byWriter[h.Writer], h.HopNS)
	}
	writers := make([]string, 0, len(byWriter))
	for w := range byWriter {
		writers = append(writers, w)
	}
	sort.Strings(writers)
	for _, w := range writers {
		add("hop", w, "hop latency of "+w+": its cause visible to its write complete", Summarize(byWriter[w]))
	}
	perChange := map[string][]PodTimes{}
	var ids []string
	for _, p := range pods {
		if _, ok := perChange[p.Change]; !ok {
			ids = append(ids, p.Change)
		}
		perChange[p.Change] = append(perChange[p.Change], p)
	}
	for _, id := range ids {
		add("change", id, "change started to Pod Ready, over its Pods", PhaseStats(perChange[id])["change_to_ready"])
	}
	return out
}
