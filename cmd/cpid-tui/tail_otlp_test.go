package main

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSink is a loopback OTLP/HTTP receiver: it decodes each request with
// the OTLP protobuf types and keeps every span, counting those received
// twice. pushed, when set (with room for one), is told of each request.
type otlpSink struct {
	mu       sync.Mutex
	spans    map[spanRef]string // the span's parent and links
	requests int
	dups     int
	pushed   chan struct{}
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	d := &tracepb.TracesData{}
	if err == nil {
		err = proto.Unmarshal(b, d)
	}
	if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, fmt.Sprint("not OTLP protobuf: ", err), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.pushed != nil {
		defer func() {
			select {
			case s.pushed <- struct{}{}:
			default: // a wake-up is pending already
			}
		}()
	}
	for _, rs := range d.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				k := spanRef{hex.EncodeToString(sp.TraceId), hex.EncodeToString(sp.SpanId)}
				if _, ok := s.spans[k]; ok {
					s.dups++
				}
				var links []string
				for _, l := range sp.Links {
					links = append(links, hex.EncodeToString(l.TraceId)+"/"+hex.EncodeToString(l.SpanId))
				}
				slices.Sort(links)
				s.spans[k] = hex.EncodeToString(sp.ParentSpanId) + " " + strings.Join(links, ",")
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (s *otlpSink) counts() (requests, spans, dups int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, len(s.spans), s.dups
}

// TestTailOTLP follows a fixture's logs with tail --otlp-endpoint: changes
// are pushed as reconstruct settles them, the rest when the tailer stops,
// and in the end the receiver holds every span export --all writes of the
// same database, with the same parents and links, each received once.
func TestTailOTLP(t *testing.T) {
	sink := &otlpSink{spans: map[spanRef]string{}, pushed: make(chan struct{}, 1)}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	bundle := "../../fixtures/basic/bundle"
	db := filepath.Join(t.TempDir(), "cpid.db")
	var stderr lockedBuffer
	stop := startTail(t, &stderr, "--db", db, "--reconstruct-every", "20ms", "--otlp-endpoint", srv.URL, "--otlp-settle", "1ns",
		"--audit-log", filepath.Join(bundle, "audit/audit.log"), "--controller-log", filepath.Join(bundle, "logs/*.log"))
	// Pushed while tailing: the changes settled before the last write's
	// cutoff.
	waitOn(t, "a push while tailing", func() bool { r, _, _ := sink.counts(); return r > 0 },
		func() <-chan struct{} { return sink.pushed }, nil)
	if code := stop(); code != 0 {
		t.Fatalf("tail: exit %d\n%s", code, stderr.String())
	}
	file := filepath.Join(t.TempDir(), "export.jsonl")
	if code, _, e := runCmd(t, nil, "export", "--db", db, "--all", "-o", file); code != 0 {
		t.Fatalf("export: %d %s", code, e)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := otlpSpans(t, data)
	requests, n, dups := sink.counts()
	if n != len(want) || dups != 0 {
		t.Errorf("the receiver got %d spans in %d requests, %d twice; export --all writes %d\n%s", n, requests, dups, len(want), stderr.String())
	}
	for k, w := range want {
		var links []string
		for _, l := range w.Links {
			links = append(links, strings.Fields(l)[0])
		}
		slices.Sort(links)
		if got, ok := sink.spans[k]; !ok || got != w.Span.ParentSpanID+" "+strings.Join(links, ",") {
			t.Errorf("span %v: received %q (%v), exported parent %s links %v", k, got, ok, w.Span.ParentSpanID, links)
		}
	}
	if strings.Contains(stderr.String(), "otlp:") {
		t.Errorf("tail said:\n%s", stderr.String())
	}
}
