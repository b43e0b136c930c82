package present

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{999, "999ns"},
		{time.Microsecond, "1.00µs"},
		{12400, "12.4µs"},
		{512 * time.Microsecond, "512µs"},
		{999600, "1.00ms"},
		{9300 * time.Microsecond, "9.30ms"},
		{9996 * time.Microsecond, "10.0ms"},
		{36200 * time.Microsecond, "36.2ms"},
		{99960 * time.Microsecond, "100ms"},
		{140300 * time.Microsecond, "140ms"},
		{999600 * time.Microsecond, "1.00s"},
		{1051400 * time.Microsecond, "1.05s"},
		{59940 * time.Millisecond, "59.9s"},
		{59960 * time.Millisecond, "1m00s"},
		{105 * time.Second, "1m45s"},
		{time.Hour - time.Second, "59m59s"},
		{time.Hour - 100*time.Millisecond, "1h00m"},
		{2*time.Hour + 5*time.Minute + 20*time.Second, "2h05m"},
		{-36200 * time.Microsecond, "-36.2ms"},
	} {
		if got := Duration(int64(c.d)); got != c.want {
			t.Errorf("Duration(%d) = %q, want %q", int64(c.d), got, c.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 writes", 1: "1 write", 2: "2 writes"} {
		if got := Plural(n, "write"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}
