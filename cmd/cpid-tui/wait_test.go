package main

import (
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// pollEvery is how often waitUntil looks again: a poll interval, which
// decides nothing.
const pollEvery = 10 * time.Millisecond

// waitUntil polls cond until it holds. It sets no deadline of its own, so
// that a loaded machine makes a test slower, never red: it gives up only
// when the test binary's -timeout is 30 s away, and then fails saying what
// it waited for and detail() (nil: nothing more), instead of the timeout's
// panic. Every minute it logs that it still waits. Where something says
// when cond may have changed, waitOn waits on that instead.
func waitUntil(t testing.TB, what string, cond func() bool, detail func() string) {
	t.Helper()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	waitOn(t, what, cond, func() <-chan time.Time { return tick.C }, detail)
}

// waitOn checks cond each time the channel wake returned says that
// something changed (a write on a helper process's stderr, a tailer of this
// process that caught up), until it holds: wake is called before each
// check, and its channel must be told of every change after that which can
// make cond hold. Like waitUntil, it has no deadline of its own.
func waitOn[T any](t testing.TB, what string, cond func() bool, wake func() <-chan T, detail func() string) {
	t.Helper()
	var near <-chan time.Time
	if end := nearTimeout(t); !end.IsZero() {
		tm := time.NewTimer(time.Until(end))
		defer tm.Stop()
		near = tm.C
	}
	start := time.Now()
	minute := time.NewTicker(time.Minute)
	defer minute.Stop()
	for {
		woken := wake()
		if cond() {
			return
		}
		select {
		case <-woken:
		case <-minute.C:
			t.Logf("still waiting for %s after %v", what, time.Since(start).Round(time.Minute))
		case <-near:
			more := ""
			if detail != nil {
				more = ": " + detail()
			}
			t.Fatalf("%s never happened (waited %v, until the test binary's -timeout was near)%s", what, time.Since(start).Round(time.Second), more)
		}
	}
}

// nearTimeout is when a test that waits with no deadline of its own gives
// up: 30 s before the test binary's -timeout, so that it fails saying what
// it waited for instead of the timeout's panic. The zero time (no deadline:
// net.Conn.SetReadDeadline's) when the binary has none.
func nearTimeout(t testing.TB) time.Time {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, bounded := d.Deadline(); bounded {
			return end.Add(-30 * time.Second)
		}
	}
	return time.Time{}
}

// dirChanges watches dir until the test ends and returns waitOn's wake for
// it: a channel told of every change in dir from now on (a file created,
// written, renamed or removed; a lost event, too).
func dirChanges(t *testing.T, dir string) func() <-chan struct{} {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case _, ok := <-w.Events:
				if !ok {
					return
				}
			case _, ok := <-w.Errors: // an overflow: look again
				if !ok {
					return
				}
			}
			select {
			case changed <- struct{}{}:
			default: // a wake-up is pending already
			}
		}
	}()
	return func() <-chan struct{} { return changed }
}
