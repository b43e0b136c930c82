package export

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cpid-dev/cpid"
)

// Scope is the instrumentation scope of the exported spans.
const Scope = "github.com/cpid-dev/cpid/export"

// Proto is the OTLP form of traces: one ResourceSpans per trace and
// service (service.name is the writer or controller; k8s.cluster.name the
// change's cluster), spans in the order of the trace. TracesData has the
// wire form of the collector's ExportTraceServiceRequest, so it is also
// the body of an OTLP/HTTP push.
func Proto(traces []Trace) *tracepb.TracesData {
	out := &tracepb.TracesData{}
	for _, t := range traces {
		byService := map[string]*tracepb.ScopeSpans{}
		for _, s := range t.Spans {
			ss, ok := byService[s.Service]
			if !ok {
				attrs := []*commonpb.KeyValue{kv("service.name", s.Service)}
				if t.Change.Cluster != "" {
					attrs = append(attrs, kv("k8s.cluster.name", t.Change.Cluster))
				}
				ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: Scope}}
				byService[s.Service] = ss
				out.ResourceSpans = append(out.ResourceSpans, &tracepb.ResourceSpans{
					Resource: &resourcepb.Resource{Attributes: attrs}, ScopeSpans: []*tracepb.ScopeSpans{ss}})
			}
			ss.Spans = append(ss.Spans, protoSpan(t.ID, s))
		}
	}
	return out
}

func protoSpan(trace TraceID, s Span) *tracepb.Span {
	p := &tracepb.Span{TraceId: bytes.Clone(trace[:]), SpanId: bytes.Clone(s.ID[:]), Name: s.Name,
		StartTimeUnixNano: uint64(s.StartNS), EndTimeUnixNano: uint64(s.EndNS), Kind: tracepb.Span_SPAN_KIND_INTERNAL}
	if !s.Parent.IsZero() {
		p.ParentSpanId = bytes.Clone(s.Parent[:])
		// The flags say whether the parent is remote (bits 8 and 9).
		p.Flags = uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
		if s.ParentRemote {
			p.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
	}
	if s.Kind == KindWrite {
		p.Kind = tracepb.Span_SPAN_KIND_CLIENT
	}
	if s.Error != "" {
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: s.Error}
	}
	for _, a := range s.Attrs {
		p.Attributes = append(p.Attributes, kv(a.Key, a.Value))
	}
	for _, l := range s.Links {
		p.Links = append(p.Links, &tracepb.Span_Link{TraceId: bytes.Clone(l.Trace[:]), SpanId: bytes.Clone(l.Span[:]),
			Attributes: []*commonpb.KeyValue{kv("cpid.source", l.Source), kv("cpid.merge.origin", l.Origin)}})
	}
	return p
}

// kv is an attribute of a string, int64, bool or []string value.
func kv(k string, v any) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: anyValue(v)}
}

func anyValue(v any) *commonpb.AnyValue {
	switch x := v.(type) {
	case string:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
	case int64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: x}}
	case bool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
	case []string:
		vs := make([]*commonpb.AnyValue, len(x))
		for i, s := range x {
			vs[i] = anyValue(s)
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: fmt.Sprint(v)}}
}

// WriteOTLP writes traces in the OTLP file format: one TracesData a line,
// one trace a line, in OTLP/JSON (lowerCamelCase names, trace and span ids
// in hex, 64-bit integers and times in ns as strings, enums as numbers).
// The collector's otlpjsonfile receiver, otel-tui and Grafana read it.
func WriteOTLP(w io.Writer, traces []Trace) error {
	bw := bufio.NewWriter(w)
	for i := range traces {
		line, err := OTLPJSON(Proto(traces[i : i+1]))
		if err != nil {
			return err
		}
		bw.Write(line)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// OTLPJSON is d in OTLP/JSON on one line. protojson writes bytes in base64,
// as proto3's JSON mapping says; OTLP/JSON wants trace and span ids in hex,
// so they are rewritten (every other bytes field of OTLP is an attribute's
// bytesValue, which stays base64). Keys come out sorted, so the same traces
// give the same bytes. Control characters in strings are escaped
// (cpid.EscapeJSON): protojson writes DEL and C1 raw.
func OTLPJSON(d *tracepb.TracesData) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("otlp json: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("otlp json: %w", err)
	}
	if err := hexIDs(v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return cpid.EscapeJSON(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// hexIDs rewrites the traceId, spanId and parentSpanId members of spans
// and links from base64 to hex.
func hexIDs(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "traceId", "spanId", "parentSpanId":
				s, ok := e.(string)
				if !ok {
					return fmt.Errorf("otlp json: %s is not a string", k)
				}
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return fmt.Errorf("otlp json: %s: %w", k, err)
				}
				x[k] = hex.EncodeToString(b)
			case "attributes":
				// Attribute values are data, not ids: left as they are.
			default:
				if err := hexIDs(e); err != nil {
					return err
				}
			}
		}
	case []any:
		for _, e := range x {
			if err := hexIDs(e); err != nil {
				return err
			}
		}
	}
	return nil
}
