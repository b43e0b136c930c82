package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cpid-dev/cpid"
)

// Ingester reads inputs, decodes every line and stores the records through a
// Sink in batches. A bad line is counted and reported with its file:line and
// the run goes on; an input that cannot be read is reported and the run goes
// on with the next.
type Ingester struct {
	Sink   cpid.RecordWriter
	Walker Walker
	// Redaction removes credentials from audit bodies. Default
	// DefaultRedaction.
	Redaction *Redaction
	// BatchSize is the number of records per transaction. Default 5000.
	// A batch also ends at BatchBytes of bodies, messages and fields.
	BatchSize int
	// BatchBytes bounds the bytes a batch holds (bodies, log fields), so
	// that memory does not grow with the size of events. Default 4 MiB.
	BatchBytes int
	// Progress, when set, is called about every ProgressEvery with the
	// counts so far, from a goroutine of its own.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// KeepBad is how many bad lines the summary keeps with their reason.
	// Default 20; all are counted.
	KeepBad int
}

// Progress is a snapshot of a running ingest.
type Progress struct {
	Elapsed   time.Duration
	DiskBytes int64 // bytes read from files (compressed, as stored)
	Bytes     int64 // bytes decoded (after decompression)
	Records   int64 // audit events and log records decoded
	TotalDisk int64 // size on disk of all inputs, 0 when unknown (stdin)
	File      string
}

// Summary is what an ingest did.
type Summary struct {
	Files     []FileStats
	Bytes     int64
	DiskBytes int64
	Elapsed   time.Duration
	Events    map[StageLevel]int // decoded audit events
	// Bodies counts, per resource of cpid.BodiedResources, the completed
	// writes audited with bodies [0] and without (Metadata level) [1].
	Bodies map[string]*[2]int
	// Components counts the decoded log records by the program that
	// wrote them and their component within it.
	Components map[Origin]int
	Written    cpid.Written
	Redacted   int // events a credential was removed from
	Bad        int
	BadLines   []*LineError // the first KeepBad of them
	Notices    []Notice
	// ReadErrors are inputs that could not be read, or not to their end.
	ReadErrors []error
	// Empty are the inputs of which nothing was read, although nothing
	// failed (those are in ReadErrors), in the order given.
	Empty []Empty
}

// Origin is who wrote a log record: the program (LogRecord.Program, ""
// when unknown) and, within it, the component (the logger, or the
// caller's source file).
type Origin struct{ Program, Component string }

// Empty is an input (a path given to Run) of which nothing was read: none
// of its files held a record or a bad line, or it had no file to read.
type Empty struct {
	Input string
	// Files is how many files it had to read, all empty or blank;
	// Skipped how many it had that are not logs (Notice.NotLog).
	Files, Skipped int
}

// StageLevel keys the audit event counts.
type StageLevel struct{ Stage, Level string }

// FileStats counts one input file (a bundle counts its members together).
type FileStats struct {
	Name string
	// Input is the path given to Run that the file was found under.
	Input                    string
	Lines, Audits, Logs, Bad int
	// Format is what the file's lines were read as, or looked like when
	// bad (docs/INPUTS.md).
	Format Format
	// BadLines are the file's first bad lines (up to 3).
	BadLines []*LineError
}

// fileBadKept is how many bad lines FileStats keeps.
const fileBadKept = 3

// Run ingests paths ("-" is standard input) and returns what it did. The
// error is non-nil only when the store failed or ctx ended; inputs that could
// not be read are in Summary.ReadErrors.
func (in *Ingester) Run(ctx context.Context, paths []string) (*Summary, error) {
	start := time.Now()
	sum := &Summary{Events: map[StageLevel]int{}, Components: map[Origin]int{}, Bodies: map[string]*[2]int{}}
	keep := in.KeepBad
	if keep == 0 {
		keep = 20
	}
	maxBytes := in.BatchBytes
	if maxBytes <= 0 {
		maxBytes = 4 << 20
	}
	size := in.BatchSize
	if size <= 0 {
		size = 5000
	}
	w := in.Walker
	var noticeMu sync.Mutex // files are read at once
	w.Notice = func(n Notice) { noticeMu.Lock(); sum.Notices = append(sum.Notices, n); noticeMu.Unlock() }
	var disk, decoded, records atomic.Int64
	var current atomic.Value
	current.Store("")
	w.Counted = func(r io.Reader) io.Reader { return &atomicCounter{r: r, n: &disk} }

	// Each path on its own, to know which input each file belongs to.
	var files []inputFile
	skipped := make([]int, len(paths))
	failed := map[string]bool{} // inputs that could not be read, or not all
	for i, p := range paths {
		before := len(sum.Notices)
		fs, err := w.Files([]string{p})
		if err != nil {
			sum.ReadErrors = append(sum.ReadErrors, err)
			failed[p] = true
		}
		for _, n := range sum.Notices[before:] {
			if n.NotLog {
				skipped[i]++
			}
		}
		for _, f := range fs {
			files = append(files, inputFile{name: f, input: p})
		}
	}
	walked := len(sum.Notices) // the notices after these are the readers'

	var total int64
	for _, f := range files {
		total += fileSize(f.name)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if in.Progress != nil {
		every := in.ProgressEvery
		if every <= 0 {
			every = time.Second
		}
		go func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					in.Progress(Progress{Elapsed: time.Since(start), DiskBytes: disk.Load(), Bytes: decoded.Load(),
						Records: records.Load(), TotalDisk: total, File: current.Load().(string)})
				}
			}
		}()
	}

	// The collector fills batches from the decoded chunks, in input
	// order; this goroutine writes them. Two batches circulate so decoding
	// and writing overlap.
	full := make(chan *batch, 1)
	free := make(chan *batch, 2)
	free <- &batch{}
	free <- &batch{}
	decErr := make(chan error, 1)
	jobs := in.startDecoding(ctx, w, files, &decoded)
	go func() {
		defer close(full)
		b := <-free
		var buf *chunkBuf // of the chunk being collected
		flush := func() bool {
			if b.Len() == 0 {
				return true
			}
			select {
			case full <- b:
			case <-ctx.Done():
				return false
			}
			select {
			case b = <-free:
				return true
			case <-ctx.Done():
				return false
			}
		}
		held := 0 // bytes of the records in b
		emit := func(a *cpid.Audit, l *cpid.Log) bool {
			records.Add(1)
			b.hold(buf)
			if a != nil {
				b.Audits = append(b.Audits, *a)
				held += len(a.RequestObject) + len(a.ResponseObject) + len(a.ResponseStatus) + len(a.RequestURI) + len(a.UserAgent)
			} else {
				b.Logs = append(b.Logs, *l)
				held += len(l.Fields) + len(l.Msg)
			}
			if b.Len() >= size || held >= maxBytes {
				held = 0
				return flush()
			}
			return true
		}
		for job := range jobs {
			current.Store(job.name)
			fs := FileStats{Name: job.name, Input: job.input}
			ok := true
			for c := range job.chunks {
				buf = newChunkBuf(c)
				if ok {
					<-c.done
					ok = in.collect(c, &fs, sum, keep, emit)
				}
				putChunk(c)
				buf.release()
			}
			fs.Lines = int(job.lines.Load())
			sum.Files = append(sum.Files, fs)
			if !ok || ctx.Err() != nil {
				decErr <- ctx.Err()
				return
			}
			if job.err != nil {
				sum.ReadErrors = append(sum.ReadErrors, fmt.Errorf("%s: %w", job.name, job.err))
				failed[job.input] = true
			}
		}
		flush()
		decErr <- nil
	}()

	var werr error
	for b := range full {
		if werr == nil {
			var n cpid.Written
			n, werr = in.Sink.Write(ctx, &b.Batch)
			sum.Written.Add(n)
			if werr != nil {
				cancel()
			}
		}
		b.reset()
		free <- b
	}
	derr := <-decErr
	sum.Elapsed = time.Since(start)
	sum.DiskBytes = disk.Load()
	sum.Bytes = decoded.Load()
	if werr != nil {
		return sum, fmt.Errorf("store: %w", werr)
	}
	if derr != nil && !errors.Is(derr, context.Canceled) {
		return sum, derr
	}
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	sum.Empty = emptyInputs(paths, skipped, failed, sum.Files, sum.Notices[walked:])
	return sum, nil
}

// emptyInputs returns the inputs of which nothing was read, and none
// failed: an empty file or directory, a directory of notes, blank lines.
// skipped counts the files each path had that are not logs, found by
// walking it; those of a bundle are among notices, named FILE!MEMBER.
func emptyInputs(paths []string, skipped []int, failed map[string]bool, files []FileStats, notices []Notice) []Empty {
	read := map[string]bool{}
	count := map[string]int{}
	inputOf := map[string]string{}
	for _, f := range files {
		count[f.Input]++
		inputOf[f.Name] = f.Input
		if f.Audits+f.Logs+f.Bad > 0 {
			read[f.Input] = true
		}
	}
	members := map[string]int{}
	for _, n := range notices {
		if !n.NotLog {
			continue
		}
		for i := range len(n.Name) {
			if n.Name[i] != '!' {
				continue
			}
			if in, ok := inputOf[n.Name[:i]]; ok {
				members[in]++
				break
			}
		}
	}
	var out []Empty
	for i, p := range paths {
		if !read[p] && !failed[p] {
			out = append(out, Empty{Input: p, Files: count[p], Skipped: skipped[i] + members[p]})
		}
	}
	return out
}

// inputFile is a file to read and the path given to Run it was found under.
type inputFile struct{ name, input string }

// startDecoding starts the readers and the workers of the pipeline
// (pipeline.go) and returns the files in input order, each with its chunks
// in order.
func (in *Ingester) startDecoding(ctx context.Context, w Walker, files []inputFile, decoded *atomic.Int64) <-chan *fileJob {
	lim := in.Walker.Limits.withDefaults()
	red := orDefault(in.Redaction)
	procs := runtime.GOMAXPROCS(0)
	work := make(chan *chunk, 2*procs)
	for range procs {
		go func() {
			for c := range work {
				c.decode(red)
			}
		}()
	}
	jobs := make(chan *fileJob, procs)
	go func() {
		defer close(jobs)
		var readers sync.WaitGroup
		defer func() { readers.Wait(); close(work) }()
		sem := make(chan struct{}, procs) // files read at once
		for _, f := range files {
			job := &fileJob{name: f.name, input: f.input, chunks: make(chan *chunk, chunkQueue)}
			select {
			case jobs <- job:
			case <-ctx.Done():
				return
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				job.err = ctx.Err()
				close(job.chunks)
				return
			}
			readers.Add(1)
			go func() {
				defer readers.Done()
				job.err = w.Read(ctx, f.name, func(s Stream) error { return splitStream(ctx, s, lim, job, work, decoded) })
				close(job.chunks)
				<-sem
			}()
		}
	}()
	return jobs
}

// collect counts a decoded chunk into the summary and hands its records to
// emit, which returns false to stop.
func (in *Ingester) collect(c *chunk, fs *FileStats, sum *Summary, keep int, emit func(*cpid.Audit, *cpid.Log) bool) bool {
	fs.Format |= c.format
	for _, b := range c.bad {
		n := max(b.count, 1)
		fs.Bad += n
		sum.Bad += n
		le := &LineError{Pos: cpid.Pos{File: c.stream, Line: b.line}, Reason: b.reason, Count: b.count}
		if len(sum.BadLines) < keep {
			sum.BadLines = append(sum.BadLines, le)
		}
		if len(fs.BadLines) < fileBadKept {
			fs.BadLines = append(fs.BadLines, le)
		}
	}
	for i := range c.audits {
		a := &c.audits[i]
		fs.Audits++
		sum.Events[StageLevel{a.Stage, a.Level}]++
		if cpid.BodiedResources[a.Resource] && a.Stage == "ResponseComplete" && (a.Subresource == "" || a.Subresource == "status") &&
			(a.Verb == "create" || a.Verb == "update" || a.Verb == "patch") {
			n := sum.Bodies[a.Resource]
			if n == nil {
				n = &[2]int{}
				sum.Bodies[a.Resource] = n
			}
			if a.Level == "Metadata" || a.Level == "None" {
				n[1]++
			} else {
				n[0]++
			}
		}
		if a.Redacted {
			sum.Redacted++
		}
		if !emit(a, nil) {
			return false
		}
	}
	for i := range c.logs {
		l := &c.logs[i]
		fs.Logs++
		sum.Components[Origin{l.Program, l.Component}]++
		if !emit(nil, l) {
			return false
		}
	}
	return true
}

// errBinary is the reason given for a line holding a NUL byte: not text.
// It is found per line, so that the valid lines of a file are kept.
const errBinary = "binary content (a NUL byte): skipped"

type atomicCounter struct {
	r io.Reader
	n *atomic.Int64
}

func (c *atomicCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
