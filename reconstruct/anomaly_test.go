package reconstruct

import (
	"encoding/json"
	"testing"
)

func TestAnomalies(t *testing.T) {
	pod := func(rv, ready string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": rv},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "lastTransitionTime": ready}}}})
		return b
	}
	ev := func(id int64, rv, src, req string, obj json.RawMessage) *Event {
		return &Event{ID: id, AuditID: "a", Verb: "patch", Resource: "pods", Subresource: "status", Namespace: "d", Name: "p",
			ResourceVersion: rv, Username: "system:node:n1", Code: 200, ReceivedNS: id * 10, StageNS: id*10 + 1,
			Source: src, Request: json.RawMessage(req), Object: obj}
	}
	en := NewEngine()
	for _, e := range []*Event{
		ev(1, "10", "apiserver-a/audit.log", `{"a":1}`, pod("10", "2026-11-22T16:00:10Z")),
		ev(2, "12", "apiserver-a/audit.log", `{"a":2}`, pod("12", "2026-11-22T16:00:20Z")),
		ev(3, "11", "apiserver-a/audit.log", `{"a":3}`, pod("11", "2026-11-22T16:00:05Z")), // replay: rv and transition go back
		ev(4, "11", "apiserver-b/audit.log", `{"a":3}`, pod("11", "2026-11-22T16:00:20Z")), // other apiserver, same body again
	} {
		en.Process(e)
	}
	got := map[string][]int64{}
	for _, a := range en.Anomalies {
		got[a.Kind] = append(got[a.Kind], a.EventID)
	}
	want := map[string][]int64{"rv-backwards": {3}, "transition-backwards": {3}, "clock-skew": {4}, "repeated-write": {4}}
	for k, v := range want {
		if len(got[k]) != len(v) || got[k][0] != v[0] {
			t.Errorf("%s: got events %v, want %v (all: %+v)", k, got[k], v, en.Anomalies)
		}
	}
	if len(en.Anomalies) != 4 {
		t.Errorf("anomalies = %+v", en.Anomalies)
	}
}
