package present

import "time"

// Clock formats a Unix-ns time of day, UTC, to the millisecond
// (15:04:05.000): the time of a write in a view or a table whose rows are
// of one change, its date said above them. "-" for no time.
func Clock(ns int64) string { return format(ns, "15:04:05.000") }

// Time formats a Unix-ns time with its date, UTC, to the millisecond
// (2006-01-02 15:04:05.000): a table's cell, its zone in the header's
// words. "-" for no time.
func Time(ns int64) string { return format(ns, "2006-01-02 15:04:05.000") }

// Stamp formats a Unix-ns time with its date and zone, to the millisecond
// (2006-01-02 15:04:05.000 UTC): a time said alone, in a sentence. "-" for
// no time.
func Stamp(ns int64) string { return format(ns, "2006-01-02 15:04:05.000 UTC") }

// format formats a Unix-ns time in UTC by layout, "-" for 0.
func format(ns int64, layout string) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format(layout)
}
