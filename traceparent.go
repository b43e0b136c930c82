package cpid

import (
	"encoding/hex"
	"encoding/json"
	"errors"
)

// KeyTraceparent is the annotation that carries a W3C trace context across
// objects, as KEP-5915 ("async trace context propagation") proposes: the
// traceparent of the client or controller span that wrote the object. cpid
// reads it beside its own keys, so a change started by a traced client (a
// CI pipeline, a GitOps controller) keeps that client's trace id.
const KeyTraceparent = "tracing.k8s.io/traceparent"

// Traceparent is a W3C Trace Context traceparent
// (https://www.w3.org/TR/trace-context/#traceparent-header): a trace id, the
// id of the span that wrote it (the parent of what follows) and the trace
// flags. The zero Traceparent means none.
type Traceparent struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// ErrTraceparent is wrapped by every error of ParseTraceparent.
var ErrTraceparent = errors.New("not a W3C traceparent")

// ParseTraceparent reads a traceparent value as the W3C recommendation
// says: "00-<32 hex>-<16 hex>-<2 hex>" in lower case, neither id all zeros;
// a later version (01 to fe) may append "-..." fields, which are ignored;
// version ff is invalid.
func ParseTraceparent(s string) (Traceparent, error) {
	var tp Traceparent
	if len(s) < 55 || (len(s) > 55 && (s[:2] == "00" || s[55] != '-')) {
		return tp, errTP("wrong length")
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return tp, errTP("fields are not separated by '-'")
	}
	var ver [1]byte
	if !lowerHex(ver[:], s[0:2]) || ver[0] == 0xff {
		return tp, errTP("bad version")
	}
	if !lowerHex(tp.TraceID[:], s[3:35]) || tp.TraceID == [16]byte{} {
		return Traceparent{}, errTP("bad trace-id")
	}
	if !lowerHex(tp.SpanID[:], s[36:52]) || tp.SpanID == [8]byte{} {
		return Traceparent{}, errTP("bad parent-id")
	}
	var fl [1]byte
	if !lowerHex(fl[:], s[53:55]) {
		return Traceparent{}, errTP("bad trace-flags")
	}
	tp.Flags = fl[0]
	return tp, nil
}

func errTP(why string) error { return &traceparentError{why} }

type traceparentError struct{ why string }

func (e *traceparentError) Error() string { return ErrTraceparent.Error() + ": " + e.why }
func (e *traceparentError) Unwrap() error { return ErrTraceparent }

// lowerHex decodes s, which must be lower-case hex, into dst.
func lowerHex(dst []byte, s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// IsZero reports whether tp carries no trace context.
func (tp Traceparent) IsZero() bool { return tp.TraceID == [16]byte{} }

// Sampled reports the sampled trace flag.
func (tp Traceparent) Sampled() bool { return tp.Flags&1 != 0 }

// TraceIDString returns the trace id in 32 lower-case hex digits.
func (tp Traceparent) TraceIDString() string { return hex.EncodeToString(tp.TraceID[:]) }

// SpanIDString returns the parent span id in 16 lower-case hex digits.
func (tp Traceparent) SpanIDString() string { return hex.EncodeToString(tp.SpanID[:]) }

// String returns tp as a version 00 traceparent, "" for the zero value.
func (tp Traceparent) String() string {
	if tp.IsZero() {
		return ""
	}
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tp.TraceID[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, tp.SpanID[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{tp.Flags})
	return string(b)
}

// TraceparentOfBodies returns the canonical traceparent an audit event's
// objects carry, as ingest reads it: from the response object's
// annotations when it has any, else from the request object's; "" when the
// annotation is absent or not a traceparent. (Ingest reads it while it
// decodes the event; migrations read stored bodies with this.)
func TraceparentOfBodies(request, response []byte) string {
	for _, b := range [][]byte{response, request} {
		var obj struct {
			Metadata struct {
				Annotations map[string]any `json:"annotations"`
			} `json:"metadata"`
		}
		if len(b) == 0 || json.Unmarshal(b, &obj) != nil || obj.Metadata.Annotations == nil {
			continue
		}
		v, _ := obj.Metadata.Annotations[KeyTraceparent].(string)
		if tp, err := ParseTraceparent(v); err == nil {
			return tp.String()
		}
		return ""
	}
	return ""
}
