package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// receiverBin is where `make verify-export` (tools/receivers/build.sh)
// puts the receivers: $CPID_RECEIVERS, else its cache.
func receiverBin(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CPID_RECEIVERS")
	if dir == "" {
		t.Skip("CPID_RECEIVERS is not set: make verify-export builds an OpenTelemetry Collector and Jaeger v2 and runs this test")
	}
	for _, b := range []string{"cpid-otelcol", "jaeger"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Fatalf("%v (tools/receivers/build.sh builds it)", err)
		}
	}
	return dir
}

// startReceiver runs a receiver with a config of tools/receivers and env,
// until the test ends, and waits until addr accepts connections.
func startReceiver(t *testing.T, bin, config string, env []string, addr string) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), filepath.Base(bin)+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", filepath.Join("../../tools/receivers", config))
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		// What it received was read already: no need to wait for a
		// graceful shutdown.
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("%s log:\n%s", filepath.Base(bin), b)
		}
		log.Close()
	})
	eventually(t, filepath.Base(bin)+" listening on "+addr, func() bool {
		select {
		case err := <-done:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("%s exited: %v\n%s", bin, err, b)
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// otlpSpanView is a span as OTLP/JSON says it, with what is around it
// (its resource), for comparing span by span.
type otlpSpanView struct {
	Resource map[string]string
	Span     otlpSpan
	Attrs    map[string]string
	Links    []string
}

// otlpSpans reads OTLP/JSON lines (any number of traces a line), keyed by
// trace and span id.
func otlpSpans(t *testing.T, data []byte) map[spanRef]otlpSpanView {
	t.Helper()
	out := map[spanRef]otlpSpanView{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var d otlpTracesData
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		for _, rs := range d.ResourceSpans {
			res := otlpAttrs(rs.Resource.Attributes)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					v := otlpSpanView{Resource: res, Attrs: otlpAttrs(s.Attributes)}
					for _, l := range s.Links {
						v.Links = append(v.Links, fmt.Sprintf("%s/%s %v", l.TraceID, l.SpanID, otlpAttrs(l.Attributes)))
					}
					s.Attributes, s.Links = nil, nil
					v.Span = s
					k := spanRef{s.TraceID, s.SpanID}
					if _, dup := out[k]; dup {
						t.Fatalf("span %v twice", k)
					}
					out[k] = v
				}
			}
		}
	}
	return out
}

// TestExportReceivers pushes every real fixture's changes to a real
// OpenTelemetry Collector and a real Jaeger v2, both built from upstream
// modules (make verify-export): the collector writes what it received
// (file exporter) and that is, span by span, what export --format otlp
// writes, whether it was pushed as protobuf by --otlp-endpoint or posted
// as the OTLP/JSON lines of the file; Jaeger's query API returns every
// trace with its spans, parents (CHILD_OF) and links (FOLLOWS_FROM).
func TestExportReceivers(t *testing.T) {
	bin := receiverBin(t)
	bundles, _ := filepath.Glob("../../fixtures/*/bundle")
	for _, b := range bundles {
		fixture := filepath.Base(filepath.Dir(b))
		t.Run(fixture, func(t *testing.T) { checkReceivers(t, bin, b) })
	}
}

func checkReceivers(t *testing.T, bin, bundle string) {
	dir := t.TempDir()
	// Fresh receivers for each fixture: figure-5-text is figure-5's
	// audit log, so their traces have the same ids.
	coll, collFile := freeAddr(t), filepath.Join(dir, "collector.jsonl")
	startReceiver(t, filepath.Join(bin, "cpid-otelcol"), "collector.yaml", []string{"OTLP_HTTP_ENDPOINT=" + coll, "FILE_PATH=" + collFile}, coll)
	jOTLP, jQuery := freeAddr(t), freeAddr(t)
	startReceiver(t, filepath.Join(bin, "jaeger"), "jaeger.yaml", []string{"OTLP_HTTP_ENDPOINT=" + jOTLP, "QUERY_HTTP_ENDPOINT=" + jQuery,
		"QUERY_GRPC_ENDPOINT=" + freeAddr(t), "OTEL_TRACES_EXPORTER=none"}, jOTLP)

	dbPath := reconstructedFixture(t, bundle)
	file := filepath.Join(dir, "export.jsonl")
	if code, _, e := runCmd(t, nil, "export", "--db", dbPath, "--all", "-o", file); code != 0 {
		t.Fatalf("export: %d %s", code, e)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := otlpSpans(t, data)
	traces := map[string]bool{}
	parents, links := 0, 0
	for k, s := range want {
		traces[k.trace] = true
		if s.Span.ParentSpanID != "" {
			parents++
		}
		links += len(s.Links)
	}

	// The collector: pushed as protobuf, then posted as the file's JSON.
	for _, url := range []string{"http://" + coll, "http://" + jOTLP} {
		code, _, e := runCmd(t, nil, "export", "--db", dbPath, "--all", "--otlp-endpoint", url)
		if code != 0 || !strings.Contains(e, fmt.Sprintf("pushed %d traces, %d spans", len(traces), len(want))) {
			t.Fatalf("export --otlp-endpoint %s: %d %s", url, code, e)
		}
	}
	received := func() map[spanRef]otlpSpanView {
		b, _ := os.ReadFile(collFile)
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return otlpSpans(t, b[:i+1]) // complete lines only
		}
		return nil
	}
	eventually(t, "the collector writing every span", func() bool { return len(received()) >= len(want) })
	compareSpans(t, "collector (protobuf push)", received(), want)
	// A second collector for the JSON posts, writing a file of its own.
	coll2, collFile2 := freeAddr(t), filepath.Join(dir, "collector-json.jsonl")
	startReceiver(t, filepath.Join(bin, "cpid-otelcol"), "collector.yaml", []string{"OTLP_HTTP_ENDPOINT=" + coll2, "FILE_PATH=" + collFile2}, coll2)
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		resp, err := http.Post("http://"+coll2+"/v1/traces", "application/json", bytes.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("line %d posted as JSON: %s %s", i+1, resp.Status, body)
		}
	}
	collFile = collFile2
	eventually(t, "the collector writing every span posted as JSON", func() bool { return len(received()) >= len(want) })
	compareSpans(t, "collector (OTLP/JSON lines)", received(), want)

	// Jaeger: every trace, its spans, parents and links.
	got, services := map[spanRef]jaegerSpan{}, map[spanRef]string{}
	eventually(t, "Jaeger returning every trace", func() bool {
		n := 0
		for tr := range traces {
			resp, err := http.Get("http://" + jQuery + "/api/traces/" + tr)
			if err != nil {
				return false
			}
			var d jaegerData
			err = json.NewDecoder(resp.Body).Decode(&d)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || len(d.Data) != 1 {
				return false
			}
			for _, s := range d.Data[0].Spans {
				got[spanRef{s.TraceID, s.SpanID}] = s
				services[spanRef{s.TraceID, s.SpanID}] = d.Data[0].Processes[s.ProcessID].ServiceName
			}
			n += len(d.Data[0].Spans)
		}
		return n >= len(want)
	})
	if len(got) != len(want) {
		t.Errorf("Jaeger has %d spans, the export %d", len(got), len(want))
	}
	jParents, jLinks := 0, 0
	for k, w := range want {
		s, ok := got[k]
		if !ok {
			t.Errorf("Jaeger lacks span %v", k)
			continue
		}
		var parent string
		var follows []string
		for _, r := range s.References {
			switch r.RefType {
			case "CHILD_OF":
				if r.TraceID != k.trace || parent != "" {
					t.Errorf("span %v: CHILD_OF %v", k, r)
				}
				parent = r.SpanID
				jParents++
			case "FOLLOWS_FROM":
				follows = append(follows, r.TraceID+"/"+r.SpanID)
				jLinks++
			}
		}
		var wantLinks []string
		for _, l := range w.Links {
			wantLinks = append(wantLinks, strings.Fields(l)[0])
		}
		slices.Sort(follows)
		slices.Sort(wantLinks)
		if parent != w.Span.ParentSpanID || !slices.Equal(follows, wantLinks) || s.OperationName != w.Span.Name {
			t.Errorf("span %v in Jaeger: %q, parent %q, links %v; exported %q, %q, %v", k, s.OperationName, parent, follows,
				w.Span.Name, w.Span.ParentSpanID, wantLinks)
		}
	}
	// The Jaeger file holds what Jaeger's own model made of the push:
	// names, services, times in µs, references, tags (Jaeger adds some;
	// cpid.link.N.source are the file's own, references having none).
	jfile := filepath.Join(dir, "export.jaeger.json")
	if code, _, e := runCmd(t, nil, "export", "--db", dbPath, "--all", "--format", "jaeger", "-o", jfile); code != 0 {
		t.Fatalf("export --format jaeger: %d %s", code, e)
	}
	b, err := os.ReadFile(jfile)
	if err != nil {
		t.Fatal(err)
	}
	var jd jaegerData
	if err := json.Unmarshal(b, &jd); err != nil {
		t.Fatal(err)
	}
	refs := func(s jaegerSpan) []string {
		var out []string
		for _, r := range s.References {
			out = append(out, r.RefType+" "+r.TraceID+"/"+r.SpanID)
		}
		slices.Sort(out)
		return out
	}
	jSpans, bad := 0, 0
	for _, tr := range jd.Data {
		for _, s := range tr.Spans {
			jSpans++
			k := spanRef{s.TraceID, s.SpanID}
			j := got[k]
			tags, jtags := s.tags(), j.tags()
			var diff []string
			for key, v := range tags {
				if !strings.HasPrefix(key, "cpid.link.") && jtags[key] != v {
					diff = append(diff, fmt.Sprintf("%s=%s (Jaeger %s)", key, v, jtags[key]))
				}
			}
			if s.OperationName != j.OperationName || s.StartTime != j.StartTime || s.Duration != j.Duration ||
				tr.Processes[s.ProcessID].ServiceName != services[k] || !slices.Equal(refs(s), refs(j)) || len(diff) > 0 {
				if bad++; bad <= 3 {
					t.Errorf("span %v: file %q %q %d+%d %v; Jaeger %q %q %d+%d %v; tags %v", k, tr.Processes[s.ProcessID].ServiceName,
						s.OperationName, s.StartTime, s.Duration, refs(s), services[k], j.OperationName, j.StartTime, j.Duration, refs(j), diff)
				}
			}
		}
	}
	if jSpans != len(want) || bad > 0 {
		t.Errorf("the Jaeger file: %d spans, %d differ from Jaeger's", jSpans, bad)
	}
	t.Logf("%s: %d traces, %d spans, %d parents, %d links: the collector wrote %d spans pushed (protobuf) and %d posted (JSON) as exported; Jaeger returned %d traces, %d spans, %d parents, %d links as exported, and as the Jaeger file has them",
		filepath.Base(filepath.Dir(bundle)), len(traces), len(want), parents, links, len(want), len(received()), len(traces), len(got), jParents, jLinks)
}

// compareSpans reports the spans a receiver wrote that differ from those
// exported.
func compareSpans(t *testing.T, what string, got, want map[spanRef]otlpSpanView) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d spans, exported %d", what, len(got), len(want))
	}
	bad := 0
	for k, w := range want {
		if d := cmp.Diff(w, got[k]); d != "" {
			if bad++; bad <= 3 {
				t.Errorf("%s: span %v differs (-exported +received):\n%s", what, k, d)
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d spans differ in all", what, bad)
	}
}
