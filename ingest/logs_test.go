package ingest_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cpid-dev/cpid/ingest"
)

func TestDecodeLog(t *testing.T) {
	lines := map[string][]string{}
	for _, f := range []string{"kube-controller-manager", "kube-scheduler", "controller-runtime", "slog"} {
		lines[f] = strings.Split(string(readLine(t, "logs/"+f+".jsonl")), "\n")
	}
	at := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixNano()
	}
	const cpid = "8f14e45f-ceea-467f-a0e6-6c1b6c1e2f3a"
	type want struct {
		TimeNS                      int64
		Level, Component, Msg, CPID string
	}
	tests := []struct {
		name string
		line string
		want want
	}{
		{"klog info, v=0, no logger", lines["kube-controller-manager"][0],
			want{1795362471902132800, "info", "app/controllermanager.go", "Starting", ""}},
		{"klog V(4) with a logger name", lines["kube-controller-manager"][1],
			want{1795362478166087200, "v=4", "deployment-controller", "Started syncing deployment", ""}},
		{"klog V(2)", lines["kube-controller-manager"][2],
			want{1795362478172910400, "v=2", "replicaset-controller", "Too few replicas", ""}},
		{"klog error: no v, err", lines["kube-controller-manager"][3],
			want{1795362478192881600, "error", "UnhandledError", "Unhandled Error", ""}},
		{"kube-scheduler", lines["kube-scheduler"][0],
			want{1795362478302551000, "v=2", "scheduler/schedule_one.go", "Successfully bound pod to node", ""}},
		{"zap, epoch seconds", lines["controller-runtime"][0],
			want{1795362478123123400, "info", "controller-runtime.metrics", "Starting metrics server", ""}},
		{"zap without logger: the controller", lines["controller-runtime"][1],
			want{1795362478530011400, "info", "webapp", "Starting workers", ""}},
		{"zap error", lines["controller-runtime"][2],
			want{1795362479001120600, "error", "webapp", "Reconciler error", ""}},
		{"zap V(2)", lines["controller-runtime"][3],
			want{1795362479200000000, "v=2", "webapp", "requeue", ""}},
		{"zap ISO 8601 with offset, cpid", lines["controller-runtime"][4],
			want{at("2026-11-22T15:47:58.123Z"), "debug", "webapp", "reconciling", cpid}},
		{"slog with source", lines["slog"][0],
			want{at("2026-11-22T15:47:58.123Z"), "info", "/src/cmd/webapp/main.go", "reconciled", cpid}},
		{"slog with component", lines["slog"][1],
			want{at("2026-11-22T15:47:58.124Z"), "warn", "stamper", "slow write", "c9f0f895-fb98-4b91-9a4d-8b2e1d0f3a4b"}},
		{"numeric zap level", `{"level":-3,"ts":1795362479,"msg":"m"}`,
			want{1795362479000000000, "v=3", "", "m", ""}},
		{"nanoseconds", `{"time":1795362479000000001,"message":"m","level":"WARNING"}`,
			want{1795362479000000001, "warn", "", "m", ""}},
		{"microseconds and exponent", `{"ts":1.795362479000001e15,"msg":"m"}`,
			want{1795362479000001000, "", "", "m", ""}},
		{"escaped message", `{"ts":1795362479.5,"msg":"a\"b\u00e9","logger":"x"}`,
			want{1795362479500000000, "", "x", "a\"bé", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ingest.DecodeLog([]byte(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			got := want{r.TimeNS, r.Level, r.Component, r.Msg, r.CPID}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if c := compactOf([]byte(tc.line)); !bytes.Equal(r.Fields, c) {
				t.Errorf("Fields %s", r.Fields)
			}
			if sum := sha256.Sum256(r.Fields); !bytes.Equal(r.Hash[:], sum[:16]) {
				t.Error("Hash is not the SHA-256 of the compact line")
			}
		})
	}
}

func TestDecodeLogPretty(t *testing.T) {
	line := readLine(t, "logs/slog.jsonl")
	line = line[:bytes.IndexByte(line, '\n')]
	a, err := ingest.DecodeLog(line)
	if err != nil {
		t.Fatal(err)
	}
	pretty := bytes.ReplaceAll(line, []byte(`,"`), []byte(",\n  \""))
	b, err := ingest.DecodeLog(pretty)
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash != b.Hash || !bytes.Equal(a.Fields, b.Fields) {
		t.Error("pretty and compact forms differ")
	}
	// The record does not alias the line.
	for i := range line {
		line[i] = 'x'
	}
	if a.Msg != "reconciled" || a.Fields[0] != '{' {
		t.Error("record aliases the line")
	}
}

func TestDecodeLogErrors(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"no time", `{"msg":"m","level":"info"}`, "no time field"},
		{"no msg", `{"ts":1795362479.1}`, "no msg field"},
		{"msg not a string", `{"ts":1795362479.1,"msg":5}`, "msg: want string"},
		{"bad time text", `{"time":"yesterday","msg":"m"}`, `invalid time field "time"`},
		{"negative time", `{"ts":-5,"msg":"m"}`, `invalid time field "ts"`},
		{"time of another type", `{"ts":true,"msg":"m"}`, `invalid time field "ts"`},
		{"not JSON", `goroutine 1 [running]:`, "not a JSON object"},
		{"klog text", `E1122 15:47:58.192881   12345 replica_set.go:552] "Unhandled Error"`, "klog text format: a log line, not JSON"},
		{"array", `[1]`, "not a JSON object"},
		{"truncated", `{"ts":1795362479.1,"msg":"m`, "truncated JSON"},
		{"invalid UTF-8", "{\"ts\":1795362479.1,\"msg\":\"\xc3\x28\"}", "invalid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ingest.DecodeLog([]byte(tc.line))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDecodeLogReal decodes lines recorded from real components
// (fixtures/basic): klog JSON of kube-controller-manager and kube-scheduler,
// slog JSON of kwok.
func TestDecodeLogReal(t *testing.T) {
	tests := []struct {
		file   string
		levels []string
	}{
		{"real-kube-controller-manager.jsonl", []string{"v=2", "v=2", "v=2", "error", "error"}},
		{"real-kube-scheduler.jsonl", []string{"v=2", "v=2"}},
		{"real-kwok.jsonl", []string{"info", "info", "error"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			for i, l := range strings.Split(string(readLine(t, "logs/"+tc.file)), "\n") {
				r, err := ingest.DecodeLog([]byte(l))
				if err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				if i < len(tc.levels) && r.Level != tc.levels[i] {
					t.Errorf("line %d: level %q, want %q", i+1, r.Level, tc.levels[i])
				}
				if r.TimeNS < 1.7e18 || r.Msg == "" || r.Component == "" {
					t.Errorf("line %d: %+v", i+1, r)
				}
			}
		})
	}
}
