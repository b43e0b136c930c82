package reconstruct

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cpid-dev/cpid"
)

// StepSide is one change's write at a step.
type StepSide struct {
	EventID  int64  `json:"event_id"`
	Object   string `json:"object"`
	AtNS     int64  `json:"at_ns"`
	HopNS    int64  `json:"hop_ns"`
	HasCause bool   `json:"has_cause"`
	Critical bool   `json:"critical"`
	Explain  string `json:"explain"`
}

// Step is one step of two compared changes: a write of each, or of one.
type Step struct {
	Step       string    `json:"step"`
	Writer     string    `json:"writer"`
	Verb       string    `json:"verb"`
	Resource   string    `json:"resource"`
	Role       string    `json:"role"`
	Occurrence int       `json:"occurrence"`
	A          *StepSide `json:"a"`
	B          *StepSide `json:"b"`
	// DeltaNS is B's hop less A's, when both writes have a cause.
	DeltaNS *int64 `json:"delta_ns"`
}

// WriterDelta is the time one writer spent on each critical path.
type WriterDelta struct {
	Writer  string `json:"writer"`
	ANS     int64  `json:"a_ns"`
	BNS     int64  `json:"b_ns"`
	DeltaNS int64  `json:"delta_ns"`
}

// Rows of Comparison.Writers that are not writers: together with the
// writers' they add up to each change's settled time.
const (
	// RowStart is from the change's first request received to the first
	// write of its critical path completing.
	RowStart = "(start)"
	// RowOverlap is less than zero where a write of the critical path was
	// received before its cause had completed.
	RowOverlap = "(overlap)"
)

// NotWriters are those rows, in the order they are listed.
var NotWriters = []string{RowStart, RowOverlap}

// Comparison is two changes of the same kind (two rollouts, two scale-ups)
// compared step by step, and their critical paths by writer: where the
// slower one lost its time. cpid-tui diff prints it; its JSON is the
// command's --output json.
type Comparison struct {
	A          cpid.ChangeRow `json:"a"`
	B          cpid.ChangeRow `json:"b"`
	SettledANS int64          `json:"settled_a_ns"`
	SettledBNS int64          `json:"settled_b_ns"`
	DeltaNS    int64          `json:"delta_ns"`
	Steps      []Step         `json:"steps"`
	// Writers are the hops on each change's critical path added up by
	// writer, the largest difference first, then RowStart and RowOverlap.
	Writers []WriterDelta `json:"writers"`
	// BeforeA and BeforeB are the waits of the first write of each
	// critical path on a cause outside its change, left out of Writers.
	BeforeA *OutsideWait `json:"before_a"`
	BeforeB *OutsideWait `json:"before_b"`
	// Summary is for people; Compare leaves it to the caller, who knows
	// how it writes durations.
	Summary string `json:"summary"`
}

// OutsideWait is the hop of a critical path's first write whose cause is
// outside the change: a controller-start change's first write waited for
// the controller to come back.
type OutsideWait struct {
	Writer string `json:"writer"`
	HopNS  int64  `json:"hop_ns"`
}

// Compare aligns the timelines of changes a and b step by step and adds up
// their critical paths by writer.
//
// Writes are matched by step: the same writer, verb and subresource on an
// object of the same resource in the same role. An object's role is "root"
// for the object the change started on, else its place among the change's
// objects of that resource in order of their first write; a write's step
// also counts the writes of that writer, verb and role before it. So the
// n-th Pod created by one change meets the n-th Pod created by the other,
// whatever their names. Steps come in the order of the first change, the
// second's own steps at their time in it.
func Compare(a, b cpid.ChangeRow, ta, tb []cpid.TimelineEntry) Comparison {
	r := Comparison{A: a, B: b, SettledANS: a.SettledNS - a.StartedNS, SettledBNS: b.SettledNS - b.StartedNS}
	r.DeltaNS = r.SettledBNS - r.SettledANS
	sa, sb := steps(a, ta), steps(b, tb)
	at := map[string]int{}
	for _, s := range sa {
		at[s.key] = len(r.Steps)
		r.Steps = append(r.Steps, s.Step)
	}
	for _, s := range sb {
		if i, ok := at[s.key]; ok {
			r.Steps[i].B = s.A
			continue
		}
		s.B, s.A = s.A, nil
		r.Steps = append(r.Steps, s.Step)
	}
	for i := range r.Steps {
		if x, y := r.Steps[i].A, r.Steps[i].B; x != nil && y != nil && x.HasCause && y.HasCause {
			d := y.HopNS - x.HopNS
			r.Steps[i].DeltaNS = &d
		}
	}
	// In the first change's order; the second's own steps at their time.
	when := func(s Step) int64 {
		if s.A != nil {
			return s.A.AtNS
		}
		return s.B.AtNS
	}
	sort.SliceStable(r.Steps, func(i, j int) bool { return when(r.Steps[i]) < when(r.Steps[j]) })

	wa, beforeA := pathByWriter(a, ta)
	wb, beforeB := pathByWriter(b, tb)
	r.BeforeA, r.BeforeB = beforeA, beforeB
	for w := range wb {
		if _, ok := wa[w]; !ok {
			wa[w] = 0
		}
	}
	delta := func(w string) WriterDelta {
		return WriterDelta{Writer: w, ANS: wa[w], BNS: wb[w], DeltaNS: wb[w] - wa[w]}
	}
	for w := range wa {
		if !slices.Contains(NotWriters, w) {
			r.Writers = append(r.Writers, delta(w))
		}
	}
	sort.Slice(r.Writers, func(i, j int) bool {
		x, y := r.Writers[i], r.Writers[j]
		if abs(x.DeltaNS) != abs(y.DeltaNS) {
			return abs(x.DeltaNS) > abs(y.DeltaNS)
		}
		return x.Writer < y.Writer
	})
	for _, w := range NotWriters {
		if _, ok := wa[w]; ok {
			r.Writers = append(r.Writers, delta(w))
		}
	}
	return r
}

// Top is the writer most of the difference went to: the largest delta of
// the same sign as the whole, nil when none is.
func (r Comparison) Top() *WriterDelta {
	var top *WriterDelta
	for i, w := range r.Writers {
		if slices.Contains(NotWriters, w.Writer) || (w.DeltaNS > 0) != (r.DeltaNS > 0) || w.DeltaNS == 0 {
			continue
		}
		if top == nil || abs(w.DeltaNS) > abs(top.DeltaNS) {
			top = &r.Writers[i]
		}
	}
	return top
}

// keyedStep is a Step with the key that matches it across changes; its
// write is in A.
type keyedStep struct {
	Step
	key string
}

// steps names each write of a change by its step (see Compare).
func steps(c cpid.ChangeRow, ts []cpid.TimelineEntry) []keyedStep {
	type objKey struct{ group, resource, ns, name string }
	root := objKey{c.APIGroup, c.Resource, c.Namespace, c.Name}
	roles := map[objKey]string{}
	perResource := map[[2]string]int{}
	seen := map[string]int{}
	out := make([]keyedStep, 0, len(ts))
	for _, t := range ts {
		k := objKey{t.APIGroup, t.Resource, t.Namespace, t.Name}
		role, ok := roles[k]
		if !ok {
			if k == root {
				role = "root"
			} else {
				perResource[[2]string{t.APIGroup, t.Resource}]++
				role = strconv.Itoa(perResource[[2]string{t.APIGroup, t.Resource}])
			}
			roles[k] = role
		}
		verb := t.Verb
		if t.Subresource != "" {
			verb += "/" + strings.TrimPrefix(t.Subresource, "/")
		}
		if t.Attempt {
			verb += " (failed)"
		}
		base := strings.Join([]string{t.Writer, verb, t.APIGroup, t.Resource, role}, "\x00")
		seen[base]++
		n := seen[base]
		label := fmt.Sprintf("%s %s %s[%s]", t.Writer, verb, t.Kind, role)
		if n > 1 {
			label += fmt.Sprintf(" (%d)", n)
		}
		obj := t.Kind + " " + t.Name
		if t.Namespace != "" {
			obj = t.Kind + " " + t.Namespace + "/" + t.Name
		}
		out = append(out, keyedStep{key: base + "\x00" + strconv.Itoa(n), Step: Step{Step: label, Writer: t.Writer, Verb: verb,
			Resource: t.Resource, Role: role, Occurrence: n, A: &StepSide{EventID: t.EventID, Object: obj,
				AtNS: t.NS - c.StartedNS, HopNS: t.HopNS, HasCause: t.CauseID != 0, Critical: t.Critical, Explain: string(t.Explain)}}})
	}
	return out
}

// pathByWriter adds up the hops of a change's critical path by writer
// (cpid.TimeByReason) within the change, with the rows that make them add
// up to its settled time: RowStart and RowOverlap. The hop of the path's
// first write, when its cause is outside the change, is left out and
// returned.
func pathByWriter(c cpid.ChangeRow, ts []cpid.TimelineEntry) (map[string]int64, *OutsideWait) {
	_, by := cpid.TimeByReason(ts)
	// The path from its last write back to its first (MarkCritical): not
	// in timeline order, where a write may complete before its cause.
	idx := make(map[int64]int, len(ts))
	last := -1
	for i, t := range ts {
		idx[t.EventID] = i
		if t.Critical && !t.Attempt {
			last = i
		}
	}
	if last < 0 {
		by[RowStart] = c.SettledNS - c.StartedNS
		return by, nil
	}
	first := last
	var within int64 // hops from causes on the path
	for range ts {   // a path has at most every write
		j, ok := idx[ts[first].CauseID]
		if !ok || j == first || !ts[j].Critical {
			break
		}
		within += ts[first].HopNS
		first = j
	}
	// The path ends at the last successful write, the change's settled
	// time; SettledNS - last.NS is 0 but keeps the sum exact whatever.
	by[RowStart] = ts[first].NS - c.StartedNS + (c.SettledNS - ts[last].NS)
	by[RowOverlap] = (ts[last].NS - ts[first].NS) - within
	var before *OutsideWait
	if f := ts[first]; f.CauseID != 0 {
		before = &OutsideWait{Writer: f.Writer, HopNS: f.HopNS}
		if by[f.Writer] -= f.HopNS; by[f.Writer] == 0 {
			delete(by, f.Writer)
		}
	}
	return by, before
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
