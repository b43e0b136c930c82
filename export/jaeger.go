package export

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/cpid-dev/cpid"
)

// The Jaeger UI's JSON format: what its query service answers on
// /api/traces/{id}, and what "Search > Upload" (JSON File) opens.

// JaegerFile is a Jaeger JSON file: {"data": [trace...]}.
type JaegerFile struct {
	Data []JaegerTrace `json:"data"`
}

// JaegerTrace is one trace with its processes (services).
type JaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []JaegerSpan             `json:"spans"`
	Processes map[string]JaegerProcess `json:"processes"`
	Warnings  []string                 `json:"warnings"`
}

// JaegerSpan is one span. Times are in µs, as Jaeger keeps them.
type JaegerSpan struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	Flags         int         `json:"flags"`
	OperationName string      `json:"operationName"`
	References    []JaegerRef `json:"references"`
	StartTime     int64       `json:"startTime"`
	Duration      int64       `json:"duration"`
	Tags          []JaegerTag `json:"tags"`
	Logs          []any       `json:"logs"`
	ProcessID     string      `json:"processID"`
	Warnings      []string    `json:"warnings"`
}

// JaegerRef is a reference: CHILD_OF the parent, FOLLOWS_FROM a link.
type JaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// JaegerTag is a key, a type (string, int64, bool) and a value.
type JaegerTag struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// JaegerProcess is a service.
type JaegerProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        []JaegerTag `json:"tags"`
}

// Jaeger is traces in Jaeger's model: the parent a CHILD_OF reference,
// each link a FOLLOWS_FROM one (as Jaeger converts OTLP links), the span
// kind and status as the tags Jaeger gives them (span.kind, error,
// otel.status_description), a link's source CPID a tag
// cpid.link.N.source (references have no attributes).
func Jaeger(traces []Trace) JaegerFile {
	f := JaegerFile{Data: []JaegerTrace{}}
	for _, t := range traces {
		jt := JaegerTrace{TraceID: t.ID.String(), Spans: []JaegerSpan{}, Processes: map[string]JaegerProcess{}}
		pids := map[string]string{}
		for _, s := range t.Spans {
			pid, ok := pids[s.Service]
			if !ok {
				pid = "p" + strconv.Itoa(len(pids)+1)
				pids[s.Service] = pid
				p := JaegerProcess{ServiceName: s.Service, Tags: []JaegerTag{}}
				if t.Change.Cluster != "" {
					p.Tags = append(p.Tags, jaegerTag("k8s.cluster.name", t.Change.Cluster))
				}
				jt.Processes[pid] = p
			}
			js := JaegerSpan{TraceID: jt.TraceID, SpanID: s.ID.String(), Flags: 1, OperationName: s.Name,
				References: []JaegerRef{}, StartTime: s.StartNS / 1000, Duration: (s.EndNS - s.StartNS) / 1000,
				Tags: []JaegerTag{}, Logs: []any{}, ProcessID: pid}
			if !s.Parent.IsZero() {
				js.References = append(js.References, JaegerRef{"CHILD_OF", jt.TraceID, s.Parent.String()})
			}
			for i, l := range s.Links {
				js.References = append(js.References, JaegerRef{"FOLLOWS_FROM", l.Trace.String(), l.Span.String()})
				js.Tags = append(js.Tags, jaegerTag("cpid.link."+strconv.Itoa(i)+".source", l.Source))
			}
			for _, a := range s.Attrs {
				js.Tags = append(js.Tags, jaegerTag(a.Key, a.Value))
			}
			kind := "internal"
			if s.Kind == KindWrite {
				kind = "client"
			}
			js.Tags = append(js.Tags, JaegerTag{"span.kind", "string", kind})
			if s.Error != "" {
				js.Tags = append(js.Tags, JaegerTag{"error", "bool", true}, JaegerTag{"otel.status_code", "string", "ERROR"},
					JaegerTag{"otel.status_description", "string", s.Error})
			}
			jt.Spans = append(jt.Spans, js)
		}
		f.Data = append(f.Data, jt)
	}
	return f
}

// jaegerTag is an attribute as a Jaeger tag: a list becomes a JSON string,
// as Jaeger's OTLP translator does.
func jaegerTag(k string, v any) JaegerTag {
	switch x := v.(type) {
	case string:
		return JaegerTag{k, "string", x}
	case int64:
		return JaegerTag{k, "int64", x}
	case bool:
		return JaegerTag{k, "bool", x}
	}
	b, _ := json.Marshal(v)
	return JaegerTag{k, "string", string(b)}
}

// WriteJaeger writes traces as a Jaeger JSON file, control characters in
// strings escaped (cpid.EscapeJSON).
func WriteJaeger(w io.Writer, traces []Trace) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Jaeger(traces)); err != nil {
		return err
	}
	_, err := w.Write(cpid.EscapeJSON(b.Bytes()))
	return err
}
