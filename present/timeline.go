package present

import "github.com/cpid-dev/cpid"

// Extent is the time a change's timeline covers, the one time zero of the
// command line, the terminal UI and the report: zero is when the
// apiserver received the change's first request (its start,
// changes.started_ns, so that the last write's offset is how long the
// change took to settle), or the start of a span that began before it
// (a client's or a controller's: a timeline draws it whole); end is the
// last write's completion or span's end, after zero. A write without a
// received time counts by its completion. With no writes and no spans,
// 0 and 1.
func Extent(ts []cpid.TimelineEntry, spans []cpid.ChangeSpan) (zero, end int64) {
	for _, t := range ts {
		at := t.ReceivedNS
		if at == 0 {
			at = t.NS
		}
		if zero == 0 || at < zero {
			zero = at
		}
		end = max(end, t.NS)
	}
	for _, s := range spans {
		if zero == 0 || s.StartNS < zero {
			zero = s.StartNS
		}
		end = max(end, s.EndNS)
	}
	if end <= zero {
		end = zero + 1
	}
	return zero, end
}

// Offset formats a time since a timeline's zero (Extent): +36.7ms. A time
// before it (a client logging before its request reached the apiserver)
// is said as such, never as "+-".
func Offset(ns int64) string {
	if ns < 0 {
		return Duration(-ns) + " before"
	}
	return "+" + Duration(ns)
}
