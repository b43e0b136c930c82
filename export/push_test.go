package export

import (
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// receiver is a loopback OTLP/HTTP endpoint that answers each request
// with the next of its answers (the last one repeats) and keeps what it
// received, decoded.
type receiver struct {
	mu      sync.Mutex
	answers []answer
	got     []*tracepb.TracesData
	headers []http.Header
}

type answer struct {
	status int
	header map[string]string
	body   []byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.answers[min(len(r.got), len(r.answers)-1)]
	zr, err := gzip.NewReader(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b, err := io.ReadAll(zr)
	d := &tracepb.TracesData{}
	if err == nil {
		err = proto.Unmarshal(b, d)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.got = append(r.got, d)
	r.headers = append(r.headers, req.Header.Clone())
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(a.status)
	w.Write(a.body)
}

func (r *receiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// waits returns a Sleep that records its waits instead of waiting.
func waits() (*[]time.Duration, func(context.Context, time.Duration) error) {
	var ds []time.Duration
	return &ds, func(_ context.Context, d time.Duration) error { ds = append(ds, d); return nil }
}

// testTraces are n small traces of spans spans each.
func testTraces(n, spans int) []Trace {
	var out []Trace
	for i := range n {
		t := Trace{ID: TraceID{1, byte(i + 1)}}
		for j := range spans {
			t.Spans = append(t.Spans, Span{ID: WriteSpan(int64(100*i + j + 1)), Kind: KindWrite, Service: "kubelet", Name: "patch pods/status",
				StartNS: 1e18, EndNS: 1e18 + 1000})
		}
		out = append(out, t)
	}
	return out
}

// partial is an ExportTraceServiceResponse with a partial success.
func partial(rejected int64, msg string) []byte {
	var ps []byte
	ps = protowire.AppendTag(ps, 1, protowire.VarintType)
	ps = protowire.AppendVarint(ps, uint64(rejected))
	ps = protowire.AppendTag(ps, 2, protowire.BytesType)
	ps = protowire.AppendString(ps, msg)
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, ps)
}

func TestPushRetries(t *testing.T) {
	r := &receiver{answers: []answer{
		{status: 503, header: map[string]string{"Retry-After": "7"}},
		{status: 429},
		{status: 502, header: map[string]string{"Retry-After": "120"}},
		{status: 200, body: partial(2, "2 spans too old")},
	}}
	srv := httptest.NewServer(r)
	defer srv.Close()
	ds, sleep := waits()
	p := &Pusher{Endpoint: srv.URL + "/v1/traces", Header: http.Header{"X-Scope-Orgid": {"team"}}, Sleep: sleep, MaxBackoff: time.Minute}
	n, err := p.Push(context.Background(), testTraces(2, 3))
	if err != nil {
		t.Fatal(err)
	}
	// Retry-After where given (capped by MaxBackoff), else the backoff,
	// which doubles from 1 s after each attempt.
	if want := []time.Duration{7 * time.Second, 2 * time.Second, time.Minute}; !cmp.Equal(*ds, want) {
		t.Errorf("waits %v, want %v", *ds, want)
	}
	if want := (Pushed{Requests: 1, Traces: 2, Spans: 6, Rejected: 2, Message: "2 spans too old"}); n != want {
		t.Errorf("pushed %+v, want %+v", n, want)
	}
	if r.requests() != 4 {
		t.Fatalf("%d requests, want 4", r.requests())
	}
	if h := r.headers[3]; h.Get("Content-Type") != "application/x-protobuf" || h.Get("X-Scope-OrgID") != "team" {
		t.Errorf("headers %v", h)
	}
	// Every attempt sent the same traces, and they are what Proto makes.
	for i, d := range r.got {
		if !proto.Equal(d, Proto(testTraces(2, 3))) {
			t.Errorf("request %d differs from Proto's traces", i)
		}
	}
}

func TestPushGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		requests int
		want     string
	}{
		{"retried until the attempts run out", 503, 3, "otlp: push to %s: 503 Service Unavailable: busy (gave up after 3 attempts)"},
		{"not retried", 400, 1, "otlp: push to %s: 400 Bad Request: busy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &receiver{answers: []answer{{status: tc.status, body: []byte("busy")}}}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				// A plain-text answer, as a proxy in front of a receiver
				// gives.
				r.ServeHTTP(&textWriter{ResponseWriter: w}, req)
			}))
			defer srv.Close()
			ds, sleep := waits()
			p := &Pusher{Endpoint: srv.URL + "/v1/traces", Attempts: 3, Sleep: sleep}
			_, err := p.Push(context.Background(), testTraces(1, 1))
			if err == nil || !strings.Contains(err.Error(), strings.Replace(tc.want, "%s", p.Endpoint, 1)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if r.requests() != tc.requests || len(*ds) != tc.requests-1 {
				t.Errorf("%d requests, %d waits; want %d", r.requests(), len(*ds), tc.requests)
			}
		})
	}
}

// textWriter answers text/plain whatever the handler set.
type textWriter struct{ http.ResponseWriter }

func (w *textWriter) WriteHeader(code int) {
	w.Header().Set("Content-Type", "text/plain")
	w.ResponseWriter.WriteHeader(code)
}

// TestPushNoAnswer: a receiver that is not listening is tried again, then
// reported.
func TestPushNoAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ds, sleep := waits()
	p := &Pusher{Endpoint: "http://" + addr + "/v1/traces", Attempts: 4, Sleep: sleep}
	_, err = p.Push(context.Background(), testTraces(1, 1))
	if err == nil || !strings.Contains(err.Error(), "(gave up after 4 attempts)") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v", err)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !cmp.Equal(*ds, want) {
		t.Errorf("waits %v, want %v", *ds, want)
	}
}

// TestPushBatches: requests hold whole traces, up to MaxSpans spans.
func TestPushBatches(t *testing.T) {
	r := &receiver{answers: []answer{{status: 200}}}
	srv := httptest.NewServer(r)
	defer srv.Close()
	p := &Pusher{Endpoint: srv.URL + "/v1/traces", MaxSpans: 7}
	n, err := p.Push(context.Background(), testTraces(5, 3))
	if err != nil {
		t.Fatal(err)
	}
	if n.Requests != 3 || n.Traces != 5 || n.Spans != 15 {
		t.Errorf("pushed %+v", n)
	}
	var sizes []int
	for _, d := range r.got {
		spans := 0
		for _, rs := range d.ResourceSpans {
			spans += len(rs.ScopeSpans[0].Spans)
		}
		sizes = append(sizes, spans)
	}
	if !cmp.Equal(sizes, []int{6, 6, 3}) {
		t.Errorf("spans per request %v, want [6 6 3]", sizes)
	}
}

func TestEndpointURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:4318":                    "http://localhost:4318/v1/traces",
		"http://localhost:4318/":                   "http://localhost:4318/v1/traces",
		"https://tempo.example:443/otlp/v1/traces": "https://tempo.example:443/otlp/v1/traces",
		"localhost:4318":                           "",
		"grpc://localhost:4317":                    "",
	} {
		got, err := EndpointURL(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("EndpointURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"Tue, 24 Nov 2026 10:00:30 GMT": 30 * time.Second,
		"Tue, 24 Nov 2026 09:00:00 GMT": 0,
		"soon":                          0,
	} {
		if got := retryAfter(h, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", h, got, want)
		}
	}
}

func TestPartialSuccess(t *testing.T) {
	if n, msg := partialSuccess(partial(5, "dropped")); n != 5 || msg != "dropped" {
		t.Errorf("partialSuccess = %d, %q", n, msg)
	}
	for _, b := range [][]byte{nil, {}, []byte("not protobuf at all")} {
		if n, msg := partialSuccess(b); n != 0 || msg != "" {
			t.Errorf("partialSuccess(%q) = %d, %q", b, n, msg)
		}
	}
}

// FuzzPartialSuccess: a receiver's answer, whatever it holds, is read
// without a panic, and a well-formed one as it was written.
func FuzzPartialSuccess(f *testing.F) {
	f.Add(partial(3, "too old"))
	f.Add([]byte("<html>bad gateway</html>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		partialSuccess(b)
		if n, msg := partialSuccess(partial(int64(len(b)), string(b))); n != int64(len(b)) || msg != string(b) {
			t.Errorf("partialSuccess(partial(%d, %q)) = %d, %q", len(b), b, n, msg)
		}
	})
}
