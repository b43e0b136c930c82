package present

import (
	"fmt"
	"strconv"
	"time"
)

// Duration formats a duration in ns the one way cpid shows durations to
// people, in the terminal UI and the command-line tables alike: three
// significant digits in the largest unit that keeps it at least 1 (µs, ms,
// s: 512µs, 9.30ms, 36.2ms, 140ms, 1.05s, 59.9s), minutes and seconds from
// a minute (1m45s), hours and minutes from an hour (2h05m); ns below a
// microsecond; 0s for nothing. Scripts get the nanoseconds (JSON, CSV).
func Duration(ns int64) string {
	if ns < 0 {
		return "-" + Duration(-ns)
	}
	d := time.Duration(ns)
	switch {
	case d == 0:
		return "0s"
	case d < time.Microsecond:
		return strconv.FormatInt(ns, 10) + "ns"
	case d < time.Millisecond:
		return sig3(float64(d)/1e3, "µs", "ms")
	case d < time.Second:
		return sig3(float64(d)/1e6, "ms", "s")
	case d < time.Minute-50*time.Millisecond:
		// 59.95s and more would round to "60.0s".
		return sig3(d.Seconds(), "s", "")
	case d < time.Hour-500*time.Millisecond:
		s := int64(d.Round(time.Second) / time.Second)
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	m := int64(d.Round(time.Minute) / time.Minute)
	return fmt.Sprintf("%dh%02dm", m/60, m%60)
}

// sig3 writes v (1 <= v < 1000) with three significant digits and unit;
// a v that rounds to 1000 is written as 1.00 of the next unit.
func sig3(v float64, unit, next string) string {
	var s string
	switch {
	case v < 9.995:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	case v < 99.95:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case v < 999.5 || next == "":
		s = strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return "1.00" + next
	}
	return s + unit
}

// Plural says "1 write", "2 writes", "0 writes": the one way counts are
// written in sentences, in the terminal UI and on the command line.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Precise formats a duration in ns as the report says it, finer than
// Duration where a chart's marks are compared: whole µs below a
// millisecond, ms with one decimal below 10 s, s with one decimal below an
// hour, then hours, minutes and seconds (1h2m3s); 0 for nothing.
func Precise(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d < 0:
		return "-" + Precise(-ns)
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	case d < time.Hour:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
