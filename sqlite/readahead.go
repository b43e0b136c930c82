package sqlite

import (
	"context"
	"sync"
)

// readBatchRows is how many rows one call to C reads at most.
const readBatchRows = 512

// readAhead calls read for batch after batch of ncol columns, until it
// says that it read the last, on a goroutine of its own, and fn with each
// batch on the caller's: the next batch is read in C while fn works on the
// one before (the scan of the writes was a read of 1.8 s and as much work
// on its rows, one after the other, in the way of the whole run). Batches
// take turns in readAheadBatches buffers, kept for the next read
// (readBufs: a run reads its evidence in dozens of windows); a batch's
// values stay valid until fn returns. An error of either ends both, and
// is returned.
func readAhead(ctx context.Context, ncol int, read func(out *rows) (last bool, err error), fn func(*rows) error) error {
	type batch struct {
		b    *rows
		last bool
		err  error
	}
	free, full := make(chan *rows, readAheadBatches), make(chan batch, readAheadBatches)
	var bufs [readAheadBatches]*rows
	for i := range bufs {
		b, _ := readBufs.Get().(*rows)
		if b == nil {
			b = &rows{arena: make([]byte, 0, 1<<20)}
		}
		b.ncol = ncol
		if cap(b.vals) < readBatchRows*ncol {
			b.vals = make([]cval, readBatchRows*ncol)
		}
		bufs[i] = b
		free <- b
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var b *rows
			select {
			case b = <-free:
			case <-stop:
				return
			}
			if err := ctx.Err(); err != nil {
				full <- batch{err: err}
				return
			}
			b.vals, b.arena = b.vals[:cap(b.vals)], b.arena[:0]
			last, err := read(b)
			full <- batch{b: b, last: last, err: err}
			if last || err != nil {
				return
			}
		}
	}()
	defer func() {
		close(stop)
		<-done // the statement is the reader's until it returns
		for _, b := range bufs {
			readBufs.Put(b)
		}
	}()
	for {
		x := <-full
		if x.err != nil {
			return x.err
		}
		if x.b.len() > 0 {
			if err := fn(x.b); err != nil {
				return err
			}
		}
		if x.last {
			return nil
		}
		free <- x.b
	}
}

// readBufs are the buffers of readAhead's batches between reads.
var readBufs sync.Pool

// readAheadBatches is how many batches readAhead has: one read while fn
// works on another, and one more between.
const readAheadBatches = 3
