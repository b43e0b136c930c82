package cpid

import (
	"errors"
	"testing"
)

func TestParseTraceparent(t *testing.T) {
	const ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tp, err := ParseTraceparent(ok)
	if err != nil {
		t.Fatal(err)
	}
	if tp.TraceIDString() != "4bf92f3577b34da6a3ce929d0e0e4736" || tp.SpanIDString() != "00f067aa0ba902b7" || !tp.Sampled() {
		t.Fatalf("parsed %+v", tp)
	}
	if tp.String() != ok {
		t.Fatalf("String() = %q", tp.String())
	}
	// A later version may carry more fields; we read the four we know.
	if tp2, err := ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra"); err != nil || tp2.Sampled() || tp2.TraceID != tp.TraceID {
		t.Fatalf("future version: %+v %v", tp2, err)
	}
	for _, bad := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",      // version 00 has no more fields
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",       // upper case
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",       // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",       // zero span id
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       // version ff
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       // separator
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",       // flags
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",      // later version, no '-'
		"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",       // misplaced '-'
		" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"[:55], // leading space
	} {
		if tp, err := ParseTraceparent(bad); err == nil || !errors.Is(err, ErrTraceparent) || !tp.IsZero() {
			t.Errorf("ParseTraceparent(%q) = %+v, %v; want ErrTraceparent", bad, tp, err)
		}
	}
	if (Traceparent{}).String() != "" {
		t.Fatal("zero Traceparent formats as non-empty")
	}
}
