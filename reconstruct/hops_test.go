package reconstruct

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cpid-dev/cpid"
)

// TestHops: hops are grouped by rule, writer and resource in that order,
// summarized, counted past the writer's widest band and by explanation.
func TestHops(t *testing.T) {
	t.Parallel()
	ws := []Window{
		{Writer: "kwok", Max: 2 * time.Second, Explain: "kubelet"},
		{Writer: "kwok", Max: 10 * time.Second, Explain: "restart"},
		{Max: time.Second, Explain: cpid.ExplainInformer},
	}
	ms := int64(time.Millisecond)
	hops := []cpid.Hop{
		{Rule: "self", Writer: "kwok", Resource: "pods", HopNS: 3000 * ms, Explain: "restart"},
		{Rule: "owner", Writer: "rs", Resource: "pods", HopNS: 20 * ms, Explain: cpid.ExplainInformer},
		{Rule: "self", Writer: "kwok", Resource: "pods", HopNS: 11000 * ms, Explain: cpid.ExplainUnexplained},
		{Rule: "owner", Writer: "rs", Resource: "pods", HopNS: 1500 * ms, Explain: cpid.ExplainUnexplained},
		{Rule: "self", Writer: "kwok", Resource: "pods", HopNS: 1000 * ms, Explain: "kubelet"},
		{Rule: "owner", Writer: "rs", Resource: "pods", HopNS: 10 * ms, Explain: cpid.ExplainInformer},
		{Rule: "owner", Writer: "rs", Resource: "events", HopNS: 5 * ms, Explain: cpid.ExplainInformer},
	}
	got := Hops(hops, ws)
	want := []HopStats{
		{Rule: "owner", Writer: "rs", Resource: "events", Bands: []Window{ws[2]}, Widest: time.Second,
			Percentiles: Percentiles{N: 1, P50: 5 * ms, P90: 5 * ms, P99: 5 * ms, Max: 5 * ms}, Explain: map[cpid.Explain]int{cpid.ExplainInformer: 1}},
		{Rule: "owner", Writer: "rs", Resource: "pods", Bands: []Window{ws[2]}, Widest: time.Second,
			Percentiles: Percentiles{N: 3, P50: 20 * ms, P90: 1500 * ms, P99: 1500 * ms, Max: 1500 * ms}, Past: 1,
			Explain: map[cpid.Explain]int{cpid.ExplainInformer: 2, cpid.ExplainUnexplained: 1}},
		{Rule: "self", Writer: "kwok", Resource: "pods", Bands: Bands(ws, "self", "kwok", "pods"), Widest: 10 * time.Second,
			Percentiles: Percentiles{N: 3, P50: 3000 * ms, P90: 11000 * ms, P99: 11000 * ms, Max: 11000 * ms}, Past: 1,
			Explain: map[cpid.Explain]int{"restart": 1, "kubelet": 1, cpid.ExplainUnexplained: 1}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Hops (-want +got):\n%s", d)
	}
	if len(want[2].Bands) != 2 {
		t.Errorf("kwok's bands: %+v, want its own two", want[2].Bands)
	}
	if got := Hops(nil, ws); len(got) != 0 {
		t.Errorf("no hops: %+v", got)
	}
}
