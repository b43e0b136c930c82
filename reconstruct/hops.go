package reconstruct

import (
	"cmp"
	"slices"
	"time"

	"github.com/cpid-dev/cpid"
)

// HopStats are the hops of one writer through one rule on one resource
// beside the reaction windows that explain them: what cpid-tui query
// hops lists, to check the windows against the hops observed.
type HopStats struct {
	Rule, Writer, Resource string
	// Bands are the writer's windows for the rule and resource (Bands),
	// narrowest first; Widest is the widest of them.
	Bands  []Window
	Widest time.Duration
	// Percentiles summarize the hops' durations.
	Percentiles
	// Past counts the hops longer than the widest band.
	Past int
	// Explain counts the hops by explanation.
	Explain map[cpid.Explain]int
}

// Hops groups hops by rule, writer and resource, in that order, with the
// windows of ws (DefaultWindows and those given) that apply to each group.
func Hops(hops []cpid.Hop, ws []Window) []HopStats {
	type key struct{ rule, writer, resource string }
	groups := map[key][]int64{}
	explain := map[key]map[cpid.Explain]int{}
	for _, h := range hops {
		k := key{h.Rule, h.Writer, h.Resource}
		groups[k] = append(groups[k], h.HopNS)
		if explain[k] == nil {
			explain[k] = map[cpid.Explain]int{}
		}
		explain[k][h.Explain]++
	}
	out := make([]HopStats, 0, len(groups))
	for k, ns := range groups {
		s := HopStats{Rule: k.rule, Writer: k.writer, Resource: k.resource, Bands: Bands(ws, k.rule, k.writer, k.resource), Explain: explain[k]}
		for _, b := range s.Bands {
			s.Widest = max(s.Widest, b.Max)
		}
		for _, n := range ns {
			if n > int64(s.Widest) {
				s.Past++
			}
		}
		s.Percentiles = Summarize(ns)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b HopStats) int {
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Writer, b.Writer), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}
