package present

import (
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestExtent: time zero is the first request received, or a span begun
// before it; a write without a received time counts by its completion;
// the end is after zero.
func TestExtent(t *testing.T) {
	t.Parallel()
	ts := []cpid.TimelineEntry{{ReceivedNS: 120, NS: 130}, {ReceivedNS: 100, NS: 150}, {NS: 140}}
	for _, c := range []struct {
		name       string
		ts         []cpid.TimelineEntry
		spans      []cpid.ChangeSpan
		zero, till int64
	}{
		{"writes", ts, nil, 100, 150},
		{"a span before and after", ts, []cpid.ChangeSpan{{StartNS: 90, EndNS: 200}}, 90, 200},
		{"a span within", ts, []cpid.ChangeSpan{{StartNS: 110, EndNS: 120}}, 100, 150},
		{"no received time", []cpid.TimelineEntry{{NS: 140}, {NS: 135}}, nil, 135, 140},
		{"one instant", []cpid.TimelineEntry{{ReceivedNS: 100, NS: 100}}, nil, 100, 101},
		{"nothing", nil, nil, 0, 1},
	} {
		if zero, end := Extent(c.ts, c.spans); zero != c.zero || end != c.till {
			t.Errorf("%s: Extent = %d, %d; want %d, %d", c.name, zero, end, c.zero, c.till)
		}
	}
}

func TestOffsetSignedClock(t *testing.T) {
	t.Parallel()
	const ns = int64(1795364819709985000) // 2026-11-22 16:26:59.709 UTC
	for _, c := range []struct{ got, want string }{
		{Offset(36_700_000), "+36.7ms"},
		{Offset(-2_000_000), "2.00ms before"},
		{Signed(3_200_000), "+3.20ms"},
		{Signed(-1_000_000), "-1.00ms"},
		{Signed(0), "+0s"},
		{Clock(ns), "16:26:59.709"},
		{Time(ns), "2026-11-22 16:26:59.709"},
		{Stamp(ns), "2026-11-22 16:26:59.709 UTC"},
		{Clock(0), "-"},
		{Precise(512_300), "512µs"},
		{Precise(9_349_000), "9.3ms"},
		{Precise(36_200_000_000), "36.2s"},
		{Precise(-1_500_000), "-1.5ms"},
		{Precise(0), "0"},
		{Precise(int64(3723e9)), "1h2m3s"},
		{ShortID("3dcf4d72-2da6-4643", 0), "3dcf4d72"},
		{ShortID("3dcf4d72-2da6-4643", 10), "3dcf4d72-2"},
		{ShortID("3dcf", 10), "3dcf"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
