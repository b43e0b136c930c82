package main

import (
	"testing"
)

// TestParseWhen: --since and --until take RFC 3339 times and durations
// back from the newest event.
func TestParseWhen(t *testing.T) {
	const newest = int64(1795364825563764000)
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"", 0, false},
		{"2026-11-22T16:26:50Z", 1795364810000000000, false},
		{"2026-11-22T17:26:50.5+01:00", 1795364810500000000, false},
		{"10s", newest - 10e9, false},
		{"1h30m", newest - 5400e9, false},
		{"-5m", 0, true},
		{"yesterday", 0, true},
		{"2026-11-22 16:26:50", 0, true},
	} {
		got, err := parseWhen("--since", tc.in, newest)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseWhen(%q) = %d, %v; want %d (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
	if _, err := parseWhen("--since", "10m", 0); err == nil {
		t.Error("a duration in a database without events: no error")
	}
}
