package reconstruct

import (
	"sync"

	"github.com/cpid-dev/cpid"
)

// aheadReader reads the evidence of consecutive windows of time, the next
// one in the background while the engine works: the engine asks for
// (afterNS, atNS] and then for (atNS, later], so that, as soon as it has
// one window, the next of the same width is read on another goroutine.
// Late writes come by the thousand in a busy bundle, and their evidence
// (the initial lists of every program, 180,000 among a million synthetic
// events) was read on the engine's goroutine, in its way: 0.9 of its 3
// seconds of CPU.
//
// What it returns for a window is what read returns for it: the evidence
// of each kind is selected by the time it returns (AtNS), so a window
// read in two parts holds the same evidence as read at once. A window
// that does not begin where the last one ended (the engine started again
// from further back) is read as asked, and what was read ahead is
// dropped.
type aheadReader struct {
	read func(afterNS, atNS int64) ([]cpid.Evidence, error)

	// buf is the evidence read of (lo, hi] and not returned yet.
	buf    []cpid.Evidence
	lo, hi int64
	// next is the read running in the background, of (hi, nextHi].
	next   chan aheadResult
	nextHi int64
	wg     sync.WaitGroup
}

type aheadResult struct {
	evs []cpid.Evidence
	err error
}

func newAheadReader(read func(afterNS, atNS int64) ([]cpid.Evidence, error)) *aheadReader {
	return &aheadReader{read: read}
}

// get returns the evidence of (afterNS, atNS], then starts reading the
// window after it.
func (a *aheadReader) get(afterNS, atNS int64) ([]cpid.Evidence, error) {
	if a.next != nil {
		r := <-a.next
		a.next = nil
		if r.err != nil {
			return nil, r.err
		}
		a.buf = append(a.buf, r.evs...)
		a.hi = a.nextHi
	}
	if afterNS != a.lo {
		a.buf, a.lo, a.hi = a.buf[:0], afterNS, afterNS
	}
	if a.hi < atNS {
		evs, err := a.read(a.hi, atNS)
		if err != nil {
			return nil, err
		}
		a.buf = append(a.buf, evs...)
		a.hi = atNS
	}
	n := 0
	for n < len(a.buf) && a.buf[n].AtNS <= atNS {
		n++
	}
	out := make([]cpid.Evidence, n)
	copy(out, a.buf[:n])
	a.buf = append(a.buf[:0], a.buf[n:]...)
	a.lo = atNS
	if w := atNS - afterNS; w > 0 {
		a.start(a.hi, a.hi+w)
	}
	return out, nil
}

// start reads (lo, hi] in the background.
func (a *aheadReader) start(lo, hi int64) {
	ch := make(chan aheadResult, 1)
	a.next, a.nextHi = ch, hi
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		evs, err := a.read(lo, hi)
		ch <- aheadResult{evs, err}
	}()
}

// wait returns once no read runs in the background (the run's end: its
// store may close after).
func (a *aheadReader) wait() { a.wg.Wait() }
