package ingest_test

import (
	"testing"
	"time"
)

// pollEvery is how often waitUntil looks again: a poll interval, which
// decides nothing.
const pollEvery = 10 * time.Millisecond

// waitUntil polls cond until it holds. It sets no deadline of its own, so
// that a loaded machine makes a test slower, never red: it gives up only
// when the test binary's -timeout is 30 s away, and then fails saying what
// it waited for and detail() (nil: nothing more), instead of the timeout's
// panic. Every minute it logs that it still waits.
func waitUntil(t testing.TB, what string, cond func() bool, detail func() string) {
	t.Helper()
	end, bounded := time.Time{}, false
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, bounded = d.Deadline(); bounded {
			end = end.Add(-30 * time.Second)
		}
	}
	start, next := time.Now(), time.Minute
	for !cond() {
		if bounded && time.Now().After(end) {
			more := ""
			if detail != nil {
				more = ": " + detail()
			}
			t.Fatalf("%s never happened (waited %v, until the test binary's -timeout was near)%s", what, time.Since(start).Round(time.Second), more)
		}
		if time.Since(start) > next {
			t.Logf("still waiting for %s after %v", what, next)
			next += time.Minute
		}
		time.Sleep(pollEvery)
	}
}
