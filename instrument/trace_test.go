package instrument_test

import (
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// traced returns a W3C traceparent whose trace and span ids repeat b.
func traced(b byte) instrument.Traceparent {
	var tp instrument.Traceparent
	for i := range tp.TraceID {
		tp.TraceID[i] = b
	}
	for i := range tp.SpanID {
		tp.SpanID[i] = b + 1
	}
	tp.Flags = 1
	return tp
}

// TestTraceAnnotation: KEP-5915's tracing.k8s.io/traceparent is read beside
// the CPID, written back with it, never removed, and a malformed one is
// counted and treated as absent without losing the CPID.
func TestTraceAnnotation(t *testing.T) {
	tp := traced(0xab)
	a := id("a").String()
	c, err := instrument.ExtractAnnotations(map[string]string{instrument.KeyCPID: a, instrument.KeyTraceparent: tp.String()})
	if err != nil || c.CPID != id("a") || c.Trace != tp {
		t.Fatalf("Extract = %+v, %v", c, err)
	}
	// A traced client that knows nothing of CPIDs.
	c, err = instrument.ExtractAnnotations(map[string]string{instrument.KeyTraceparent: tp.String()})
	if err != nil || !c.IsZero() || c.Trace != tp {
		t.Fatalf("Extract without CPID = %+v, %v", c, err)
	}
	tr := instrument.New("test", nil)
	c = tr.ExtractAnnotations(map[string]string{instrument.KeyCPID: a, instrument.KeyTraceparent: "00-zz"})
	if c.CPID != id("a") || !c.Trace.IsZero() || tr.Stats().BadTrace != 1 || tr.Stats().BadCPID != 0 {
		t.Fatalf("malformed traceparent: %+v, stats %+v", c, tr.Stats())
	}
	if _, err := instrument.ExtractAnnotations(map[string]string{instrument.KeyTraceparent: "00-zz"}); err == nil {
		t.Fatal("malformed traceparent gave no error")
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{instrument.KeyTraceparent: tp.String()}}}
	instrument.Inject(cm, instrument.Context{CPID: id("b")})
	if got := cm.Annotations[instrument.KeyTraceparent]; got != tp.String() {
		t.Fatalf("Inject without Trace changed the client's traceparent to %q", got)
	}
	instrument.Inject(cm, instrument.Context{})
	if got := cm.Annotations[instrument.KeyTraceparent]; got != tp.String() || cm.Annotations[instrument.KeyCPID] != "" {
		t.Fatalf("Inject of the zero Context: %v", cm.Annotations)
	}
	other := traced(0x11)
	instrument.Inject(cm, instrument.Context{CPID: id("c"), Trace: other})
	back, err := instrument.Extract(cm)
	if err != nil || back.CPID != id("c") || back.Trace != other {
		t.Fatalf("Extract after Inject = %+v, %v", back, err)
	}
	var nilAnn corev1.ConfigMap
	instrument.Inject(&nilAnn, instrument.Context{Trace: other})
	if nilAnn.Annotations[instrument.KeyTraceparent] != other.String() || len(nilAnn.Annotations) != 1 {
		t.Fatalf("Inject of a Trace alone into nil annotations: %v", nilAnn.Annotations)
	}
}

// TestMergeTrace: the merged context carries the trace of the last context
// with a CPID and a trace (the object's own first, then its causes).
func TestMergeTrace(t *testing.T) {
	old, fresh := traced(0x01), traced(0x02)
	with := func(s string, tp instrument.Traceparent) instrument.Context {
		c := tc(s)
		c.Trace = tp
		return c
	}
	tests := []struct {
		name string
		in   []instrument.Context
		want instrument.Traceparent
	}{
		{name: "reused CPID keeps its trace", in: []instrument.Context{with("a", old)}, want: old},
		{name: "reused cause's trace wins over the own one it descends from",
			in: []instrument.Context{with("a", old), with("g:a", fresh)}, want: fresh},
		{name: "an untraced cause keeps the object's trace",
			in: []instrument.Context{with("a", old), tc("g:a")}, want: old},
		{name: "a traced cause that changed only the trace wins",
			in: []instrument.Context{with("g:a", old), with("a", fresh)}, want: fresh},
		{name: "a merge takes the last source with a trace",
			in: []instrument.Context{with("a", old), with("b", fresh)}, want: fresh},
		{name: "a merge with one traced source",
			in: []instrument.Context{with("a", old), tc("b")}, want: old},
		{name: "a trace without CPID is not a source",
			in: []instrument.Context{tc("a"), {Trace: fresh}}, want: instrument.Traceparent{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := instrument.New("test", nil, instrument.WithIDs(sequence("m")))
			got, _, _ := tr.Plan(instrument.ObjectRef{}, tt.in...)
			if got.Trace != tt.want {
				t.Fatalf("Trace = %v, want %v", got.Trace, tt.want)
			}
		})
	}
}
