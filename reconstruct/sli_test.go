package reconstruct

import (
	"encoding/json"
	"testing"

	"github.com/cpid-dev/cpid"
)

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []int64
		want Percentiles
	}{
		{"empty", nil, Percentiles{}},
		{"one", []int64{7}, Percentiles{N: 1, P50: 7, P90: 7, P99: 7, Max: 7}},
		{"ten unsorted", []int64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, Percentiles{N: 10, P50: 5, P90: 9, P99: 10, Max: 10}},
		{"hundred", seq(100), Percentiles{N: 100, P50: 50, P90: 90, P99: 99, Max: 100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Summarize(c.in); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func seq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(n - i)
	}
	return out
}

func TestPodMilestones(t *testing.T) {
	obj := func(node, phase, ready string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"spec": map[string]any{"nodeName": node},
			"status": map[string]any{"phase": phase, "conditions": []any{map[string]any{"type": "Ready", "status": ready}}}})
		return b
	}
	ws := []cpid.PodWrite{
		{Change: "c", ChangeStartNS: 100, Namespace: "d", Name: "p", Verb: "create", StageNS: 110, Object: obj("", "Pending", "False")},
		{Change: "c", ChangeStartNS: 100, Namespace: "d", Name: "p", Verb: "create", Subresource: "binding", StageNS: 130},
		{Change: "c", ChangeStartNS: 100, Namespace: "d", Name: "p", Verb: "patch", Subresource: "status", StageNS: 150, Object: obj("n", "Running", "False")},
		{Change: "c", ChangeStartNS: 100, Namespace: "d", Name: "p", Verb: "patch", Subresource: "status", StageNS: 170, Object: obj("n", "Running", "True")},
		{Change: "c", ChangeStartNS: 100, Namespace: "d", Name: "p", Verb: "patch", Subresource: "status", StageNS: 190, Object: obj("n", "Running", "True")},
		{Change: "c", ChangeStartNS: 100, Namespace: "d", Name: "q", Verb: "create", StageNS: 120},
	}
	got := PodMilestones(ws)
	want := []PodTimes{
		{Change: "c", ChangeStartNS: 100, Namespace: "d", Name: "p", CreatedNS: 110, ScheduledNS: 130, RunningNS: 150, ReadyNS: 170},
		{Change: "c", ChangeStartNS: 100, Namespace: "d", Name: "q", CreatedNS: 120},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pod %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	st := PhaseStats(got)
	if st["change_to_ready"] != (Percentiles{N: 1, P50: 70, P90: 70, P99: 70, Max: 70}) {
		t.Errorf("change_to_ready = %+v", st["change_to_ready"])
	}
	if st["change_to_created"].N != 2 || st["schedule_to_run"].P50 != 20 {
		t.Errorf("stats = %+v", st)
	}
}
