// Command tailbench measures the live tailer: its sustained throughput while
// a writer rotates the audit log as kube-apiserver does (lumberjack, gzip'd
// backups), and the lag from each event's stageTimestamp to the commit of
// its batch at fixed write rates. Events are templated from a real bundle.
// With -fleet N it measures a fleet as well: N clusters, each with its own
// writer and tailer, into one PostgreSQL database at once, beside one
// cluster into SQLite at the same total rate.
//
//	go run ./cmd/tailbench -rates 1000,10000 -duration 20s fixtures/basic/bundle
//	go run ./cmd/tailbench -fleet 4 -fleet-rates 1000,2500 fixtures/basic/bundle
//
// It prints Markdown sections for docs/BENCHMARKS.md. The PostgreSQL server
// is a throwaway one (postgres/pgtest) started with fsync on.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/postgres"
	"github.com/cpid-dev/cpid/postgres/pgtest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/sqlite"
)

// pgSettings make the benchmark's server durable like a production one;
// synchronous_commit=off matches SQLite's synchronous=NORMAL in WAL mode
// (a commit is not flushed before it returns; a crash loses the last
// commits, never consistency).
var pgSettings = []string{"fsync=on", "full_page_writes=on", "synchronous_commit=off"}

func main() {
	rates := flag.String("rates", "1000,10000", "write rates to measure the lag at, events/s")
	dur := flag.Duration("duration", 20*time.Second, "how long each rate is written")
	events := flag.Int("events", 200000, "events written as fast as possible for the throughput")
	maxSize := flag.Int("maxsize", 10, "lumberjack MaxSize in MB (kube-apiserver --audit-log-maxsize)")
	recon := flag.Duration("reconstruct-every", 10*time.Second, "the tailer's reconstruct interval (0: never), as `cpid-tui tail --reconstruct-every`")
	fleet := flag.Int("fleet", 0, "also measure this many clusters tailing into one PostgreSQL database (0: not)")
	fleetRates := flag.String("fleet-rates", "1000,2500", "with -fleet: write rates per cluster, events/s")
	fleetOnly := flag.Bool("fleet-only", false, "with -fleet: measure the PostgreSQL fleet alone (no single tailer, no SQLite rows beside the fleet's)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	pure := flag.Bool("pure", false, "open the SQLite databases with the pure-Go SQLite, as a cpid-tui built without cgo does, instead of SQLite in C (cpid.Native), as `cpid-tui tail` does where the build has cgo")
	batch := flag.Int("batch", 0, "the tailer's BatchSize, most records per transaction (0: its default), as `cpid-tui tail --batch`")
	batchBytes := flag.Int("batch-bytes", 0, "the tailer's BatchBytes, most bytes of lines per transaction (0: its default)")
	commitEvery := flag.Duration("commit-every", 0, "the tailer's CommitEvery (0: its default; negative: none), as `cpid-tui tail --commit-every`")
	trace := flag.String("trace", "", "write one line per commit and per reconstruct run to this file (time, what, records, duration, lag)")
	compress := flag.Bool("compress", true, "gzip the rotated backups (lumberjack Compress, kube-apiserver --audit-log-compress; kube-apiserver's default is off)")
	backlog := flag.Bool("backlog", true, "also measure the tailer alone: the events are written (and rotated) before the clock starts and the tailer catches up")
	child := flag.String("write-child", "", "internal: run as the writer process of a measurement, with this JSON job")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: tailbench [flags] BUNDLE_DIR\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *child != "" {
		os.Exit(writeChild(*child, flag.Args()))
	}
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	b := bench{bundle: flag.Arg(0), dur: *dur, events: *events, maxSize: *maxSize, recon: *recon, commitEvery: *commitEvery, batch: *batch, batchBytes: *batchBytes,
		compress: *compress, backlog: *backlog}
	if !*pure {
		sqliteOpts = append(sqliteOpts, cpid.Native())
	}
	if *trace != "" {
		f, err := os.Create(*trace)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tailbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		b.trace = &tracer{w: bufio.NewWriter(f)}
		defer b.trace.w.Flush()
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "tailbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	b.fleetOnly = *fleetOnly && *fleet > 0
	var err error
	if b.fleetOnly {
		b.ts, err = templates(b.bundle)
	} else {
		err = b.single(*rates)
	}
	if err == nil && *fleet > 0 {
		err = b.fleet(*fleet, *fleetRates)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tailbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// tracer writes the trace of -trace: a line per commit and per
// reconstruct run, with the time since the measurement began, to see
// where lag comes from (a reconstruct run that holds commits back, a
// batch that grew).
type tracer struct {
	mu    sync.Mutex
	w     *bufio.Writer
	start time.Time
}

// begin starts the trace of one measurement.
func (t *tracer) begin(label string, start time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = start
	fmt.Fprintf(t.w, "# %s\n", label)
}

// commit traces a commit of n records that took d, at most lag behind.
func (t *tracer) commit(at time.Time, n int, d, lag time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%9.3f commit %6d %8.1fms lag %8.1fms\n", at.Sub(t.start).Seconds(), n, ms(d), ms(lag))
}

// reconstructed traces a reconstruct run that began at from.
func (t *tracer) reconstructed(from time.Time, err error) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%9.3f reconstruct %8.1fms (from %.3f) %v\n", time.Since(t.start).Seconds(), ms(time.Since(from)),
		from.Sub(t.start).Seconds(), err)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// bench is what every measurement shares.
type bench struct {
	bundle  string
	dur     time.Duration
	events  int
	maxSize int
	recon   time.Duration
	// fleetOnly: -fleet-only, the fleet's PostgreSQL rows alone.
	fleetOnly bool
	ts        []template
	trace     *tracer // nil: no -trace

	commitEvery time.Duration
	batch       int
	batchBytes  int
	compress    bool // -compress: lumberjack gzips the rotated backups
	backlog     bool // -backlog: measure the tailer catching up with a log written before the start
}

// single measures one cluster into SQLite, as fast as possible and at each
// rate.
func (b *bench) single(rateList string) error {
	var err error
	if b.ts, err = templates(b.bundle); err != nil {
		return err
	}
	rates, err := parseRates(rateList)
	if err != nil {
		return err
	}
	title := "Live tail"
	if !b.compress {
		title += ", plain backups (kube-apiserver's default)"
	}
	fmt.Printf("## %s\n\n", title)
	fmt.Printf("`go run ./cmd/tailbench -rates '%s' -duration %s -events %d -maxsize %d -reconstruct-every %s -compress=%t %s`:\n",
		rateList, b.dur, b.events, b.maxSize, b.recon, b.compress, b.bundle)
	fmt.Printf("an in-process `ingest.Tailer` (as `cpid-tui tail` runs it, reconstructing every %s) follows an audit log that a\n", b.recon)
	fmt.Printf("lumberjack writer in a process of its own rotates every %d MB, %s; events are the real fixture's, with fresh\n", b.maxSize, b.rotated())
	fmt.Printf("auditIDs and a stageTimestamp set when written. Lag is from that timestamp to the commit of the\n")
	fmt.Printf("event's batch. Tailer CPU/event is the tailbench process's CPU time per event: reading, decoding, storing,\n")
	fmt.Printf("the reconstructions and the benchmark's bookkeeping of the lags. Writer CPU/event is the writer process's, from\n")
	fmt.Printf("its first line to the end of its last backup's compression: rendering the lines, writing them, rotating%s.\n", b.gzipping())
	fmt.Printf("In the backlog row, the writer writes every event (and rotates) before the clock starts and the tailer is\n")
	fmt.Printf("started; the row times the tailer catching up alone, so it has no lag. In the other rows writer and tailer\n")
	fmt.Printf("run at once and share the cores.\n")
	engine := "SQLite in C, as `cpid-tui tail` opens it"
	if len(sqliteOpts) == 0 {
		engine = "the pure-Go SQLite (-pure)"
	}
	fmt.Printf("The database is opened with %s; the tailer's batch is %s records or %s bytes of lines, its group commit %s.\n",
		engine, orDefault(b.batch, "the default"), orDefault(b.batchBytes, "the default"), orDefault(b.commitEvery, "the default"))
	fmt.Printf("GOMAXPROCS=%d.\n\n", runtime.GOMAXPROCS(0))
	fmt.Printf("Load average at the start: %s.\n\n", loadavg())
	defer func() {
		fmt.Printf("\nPeak RSS of the tailbench process (tailer, store, reconstruct runs; not the writers): %s.\n", peakRSS())
	}()
	fmt.Printf("| write rate | events | duration | committed/s | lag p50 | lag p99 | lag max | tailer CPU/event | writer CPU/event |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	if b.backlog {
		res, err := b.measure(sqliteTarget, 1, 0, b.events, true)
		if err != nil {
			return err
		}
		res.print("backlog (written before the start)")
	}
	res, err := b.measure(sqliteTarget, 1, 0, b.events, false)
	if err != nil {
		return err
	}
	res.print("as fast as possible")
	for _, rate := range rates {
		res, err := b.measure(sqliteTarget, 1, rate, int(b.dur.Seconds()*float64(rate)), false)
		if err != nil {
			return err
		}
		res.print(fmt.Sprintf("%d/s", rate))
	}
	return nil
}

// fleet measures n clusters into one PostgreSQL database beside one
// cluster into SQLite at the same total rate.
func (b *bench) fleet(n int, rateList string) error {
	rates, err := parseRates(rateList)
	if err != nil {
		return err
	}
	srv, err := pgtest.Start(pgSettings...)
	if err != nil {
		return err
	}
	defer srv.Stop()
	seq := 0
	pg := target{name: "PostgreSQL", serverCPU: srv.CPU, open: func(ctx context.Context, dir string) (*cpidStore, error) {
		seq++
		dsn, err := srv.CreateDatabase(ctx, fmt.Sprintf("fleet%d", seq))
		if err != nil {
			return nil, err
		}
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			return nil, err
		}
		return &cpidStore{view: func(c string) store { return st.InCluster(c) }, close: st.Close}, nil
	}}
	fmt.Printf("\n## A fleet into one PostgreSQL\n\n")
	only := ""
	if b.fleetOnly {
		only = " -fleet-only"
	}
	fmt.Printf("`go run ./cmd/tailbench -fleet %d%s -fleet-rates '%s' -duration %s -events %d -maxsize %d -reconstruct-every %s %s`:\n",
		n, only, rateList, b.dur, b.events, b.maxSize, b.recon, b.bundle)
	fmt.Printf("%d clusters, each with its own lumberjack writer process (%s) and its own in-process tailer (`cpid-tui tail --cluster`,\n", n, b.rotated())
	fmt.Printf("reconstructing every %s), all storing into one PostgreSQL %s database at once (a throwaway server\n", b.recon, srv.Version())
	beside := "; beside it, one cluster into SQLite at the same\ntotal rate"
	if b.fleetOnly {
		beside = ""
	}
	fmt.Printf("on this machine, on a unix socket, with %s)%s. The writers, the tailers and the server share the %d cores. Lag is from a line's write to its\n",
		strings.Join(pgSettings, ", "), beside, runtime.NumCPU())
	fmt.Printf("commit; the tailers' CPU is this process's (their stores' clients and reconstruct runs), the writers' their\n")
	fmt.Printf("processes', the server's its processes' (the postmaster and every backend, from /proc), each over the events\n")
	fmt.Printf("committed. Two cores give 2 s of CPU a second: the three columns' sum bounds what a fleet can store here.\n\n")
	fmt.Printf("| target | clusters | write rate | events | duration | committed/s | lag p50 | lag p99 | lag max | tailer CPU/event | writer CPU/event | server CPU/event |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(t target, clusters, rate, events int) error {
		res, err := b.measure(t, clusters, rate, events, false)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		label := "as fast as possible"
		if rate > 0 {
			label = fmt.Sprintf("%d/s", rate)
			if clusters > 1 {
				label = fmt.Sprintf("%d x %d/s", clusters, rate)
			}
		}
		fmt.Printf("| %s | %d | %s |", t.name, clusters, label)
		res.cells(true)
		return nil
	}
	if err := row(pg, n, 0, b.events/n); err != nil {
		return err
	}
	if !b.fleetOnly {
		if err := row(sqliteTarget, 1, 0, b.events); err != nil {
			return err
		}
	}
	for _, rate := range rates {
		if err := row(pg, n, rate, int(b.dur.Seconds()*float64(rate))); err != nil {
			return err
		}
		if b.fleetOnly {
			continue
		}
		if err := row(sqliteTarget, 1, n*rate, int(b.dur.Seconds()*float64(n*rate))); err != nil {
			return err
		}
	}
	return nil
}

// parseRates reads a list of rates; an empty one measures none.
// orDefault is v as text, or def when v is zero.
func orDefault[T comparable](v T, def string) string {
	var zero T
	if v == zero {
		return def
	}
	return fmt.Sprint(v)
}

// loadavg is /proc/loadavg's three load averages, "?" where there is none.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// peakRSS is the process's VmHWM, "?" where there is none.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			if kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB")); err == nil {
				return fmt.Sprintf("%d MiB", kb>>10)
			}
		}
	}
	return "?"
}

func parseRates(list string) ([]int, error) {
	var out []int
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	for _, r := range strings.Split(list, ",") {
		rate, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || rate <= 0 {
			return nil, fmt.Errorf("rate %q: a positive number of events/s", r)
		}
		out = append(out, rate)
	}
	return out, nil
}

// store is what a tailer uses of an engine.
type store interface {
	cpid.RecordWriter
	cpid.DerivedStore
}

// cpidStore is an open database of either engine.
type cpidStore struct {
	view  func(cluster string) store
	close func() error
}

// target opens a new, empty database in dir.
type target struct {
	name string
	open func(ctx context.Context, dir string) (*cpidStore, error)
	// serverCPU, when not nil, is the CPU time a server of the target
	// (PostgreSQL) has used so far.
	serverCPU func() (time.Duration, error)
}

// sqliteOpts are the options of the SQLite databases' opens: cpid.Native
// unless -pure. A build without cgo opens them with the pure-Go SQLite
// either way.
var sqliteOpts []cpid.OpenOption

var sqliteTarget = target{name: "SQLite", open: func(ctx context.Context, dir string) (*cpidStore, error) {
	st, err := sqlite.Open(ctx, filepath.Join(dir, "cpid.db"), sqliteOpts...)
	if err != nil {
		return nil, err
	}
	return &cpidStore{view: func(c string) store { return st.InCluster(c) }, close: st.Close}, nil
}}

type result struct {
	events  int
	elapsed time.Duration
	lags    []time.Duration
	noLag   bool          // a backlog: the events were written before the start
	cpu     time.Duration // of this process: the tailers, their stores and reconstruct runs
	wcpu    time.Duration // of the writer processes: rendering, writing, rotating, gzip
	scpu    time.Duration // of the target's server (PostgreSQL), -1 when none or not known
}

// cpuTime is the CPU time the process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r result) print(label string) {
	fmt.Printf("| %s |", label)
	r.cells(false)
}

// cells prints events, duration, committed/s, the lag quantiles and the
// CPU an event (withServer: the server's too, "-" for a target without
// one).
func (r result) cells(withServer bool) {
	slices.Sort(r.lags)
	q := func(p float64) string {
		if len(r.lags) == 0 {
			return "-"
		}
		return r.lags[min(len(r.lags)-1, int(p*float64(len(r.lags))))].Round(100 * time.Microsecond).String()
	}
	if r.noLag {
		q = func(float64) string { return "-" }
	}
	perEvent := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(r.events) }
	fmt.Printf(" %d | %.1fs | %.0f | %s | %s | %s | %.0f µs | %.0f µs |", r.events, r.elapsed.Seconds(),
		float64(r.events)/r.elapsed.Seconds(), q(0.50), q(0.99), q(1), perEvent(r.cpu), perEvent(r.wcpu))
	if withServer {
		if r.scpu < 0 {
			fmt.Printf(" - |")
		} else {
			fmt.Printf(" %.0f µs |", perEvent(r.scpu))
		}
	}
	fmt.Println()
}

// lagSink stores batches and records each event's lag at commit; one sink
// counts for every cluster of a measurement.
type lagSink struct {
	mu   sync.Mutex
	lags []time.Duration
	n    int
	done chan struct{}
	want int
}

// writer is the sink of one cluster's tailer.
type writer struct {
	st    store
	sink  *lagSink
	trace *tracer
}

func (w writer) Write(ctx context.Context, b *cpid.Batch) (cpid.Written, error) {
	began := time.Now()
	var res cpid.Written
	var err error
	pprof.Do(ctx, pprof.Labels("part", "store"), func(ctx context.Context) { res, err = w.st.Write(ctx, b) })
	if err != nil {
		return res, err
	}
	at := time.Now()
	now := at.UnixNano()
	s := w.sink
	s.mu.Lock()
	defer s.mu.Unlock()
	var worst time.Duration
	for i := range b.Audits {
		lag := time.Duration(now - b.Audits[i].StageNS)
		worst = max(worst, lag)
		s.lags = append(s.lags, lag)
	}
	w.trace.commit(at, b.Len(), at.Sub(began), worst)
	s.n += res.Audits
	if s.n >= s.want && s.done != nil {
		close(s.done)
		s.done = nil
	}
	return res, nil
}

// measure writes n events per cluster at rate per second each (0: as fast
// as possible) into a new database of t and returns when the tailers have
// committed them all. With backlog, the events are all written before the
// clock starts and the tailers are started.
func (b *bench) measure(t target, clusters, rate, n int, backlog bool) (result, error) {
	dir, err := os.MkdirTemp("", "cpid-tailbench")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := t.open(ctx, dir)
	if err != nil {
		return result{}, err
	}
	defer db.close()
	sink := &lagSink{done: make(chan struct{}), want: n * clusters}
	done := sink.done
	logs := make([]string, clusters)
	for c := range clusters {
		cdir := filepath.Join(dir, fmt.Sprintf("c%d", c))
		if err := os.Mkdir(cdir, 0o755); err != nil {
			return result{}, err
		}
		logs[c] = filepath.Join(cdir, "audit.log")
	}
	// The writers start (and read their templates) before the clock.
	ws := make([]*writerProc, clusters)
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.kill()
			}
		}
	}()
	for c := range clusters {
		if ws[c], err = b.startWriter(writeJob{Path: logs[c], First: c * n, Rate: rate, N: n, MaxSize: b.maxSize, Compress: b.compress}); err != nil {
			return result{}, err
		}
	}
	var wcpu time.Duration
	if backlog {
		for c, w := range ws {
			if err := w.begin(time.Now()); err != nil {
				return result{}, err
			}
			d, err := w.wait()
			if err != nil {
				return result{}, err
			}
			wcpu += d
			ws[c] = nil
		}
	}
	tailErr := make(chan error, clusters)
	for c := range clusters {
		st := db.view(fmt.Sprintf("c%d", c))
		tl := &ingest.Tailer{Sink: writer{st: st, sink: sink, trace: b.trace}, Paths: []string{logs[c]},
			CommitEvery: b.commitEvery, BatchSize: b.batch, BatchBytes: b.batchBytes}
		if b.recon > 0 {
			tl.ReconstructEvery = b.recon
			tl.Reconstruct = func(ctx context.Context) (err error) {
				from := time.Now()
				pprof.Do(ctx, pprof.Labels("part", "reconstruct"), func(ctx context.Context) {
					_, err = reconstruct.Run(ctx, st, reconstruct.Options{StepRows: reconstruct.LiveStepRows, Family: ingest.Family})
				})
				b.trace.reconstructed(from, err)
				return err
			}
		}
		// Labels for -cpuprofile: the tailer's goroutines are "tailer",
		// its commits "store", its reconstruct runs "reconstruct".
		go pprof.Do(ctx, pprof.Labels("part", "tailer"), func(ctx context.Context) { tailErr <- tl.Run(ctx) })
	}
	scpu := func() time.Duration {
		if t.serverCPU == nil {
			return -1
		}
		d, err := t.serverCPU()
		if err != nil {
			return -1
		}
		return d
	}
	start, cpu0, scpu0 := time.Now(), cpuTime(), scpu()
	label := fmt.Sprintf("%s, %d cluster(s), %d events each at %d/s", t.name, clusters, n, rate)
	if backlog {
		label = fmt.Sprintf("%s, %d cluster(s), a backlog of %d events each", t.name, clusters, n)
	}
	b.trace.begin(label, start)
	for _, w := range ws {
		if w != nil {
			if err := w.begin(start); err != nil {
				return result{}, err
			}
		}
	}
	select {
	case <-done:
	case err := <-tailErr:
		return result{}, fmt.Errorf("tailer stopped: %v", err)
	case <-time.After(5*time.Minute + 2*b.dur):
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return result{}, fmt.Errorf("only %d of %d events committed", sink.n, n*clusters)
	}
	elapsed, cpu, scpu1 := time.Since(start), cpuTime()-cpu0, scpu()
	server := time.Duration(-1)
	if scpu0 >= 0 && scpu1 >= 0 {
		server = scpu1 - scpu0
	}
	cancel()
	for range clusters {
		if err := <-tailErr; err != nil {
			return result{}, err
		}
	}
	for c, w := range ws {
		if w == nil {
			continue
		}
		d, err := w.wait()
		if err != nil {
			return result{}, err
		}
		wcpu += d
		ws[c] = nil
	}
	return result{events: n * clusters, elapsed: elapsed, lags: sink.lags, noLag: backlog, cpu: cpu, wcpu: wcpu, scpu: server}, nil
}

// rotated says what happens to the rotated backups.
func (b *bench) rotated() string {
	if b.compress {
		return "gzip'ing its backups (-compress, kube-apiserver --audit-log-compress)"
	}
	return "leaving its backups plain (-compress=false: kube-apiserver's default)"
}

// gzipping names the gzip of the backups in the writer's CPU, if any.
func (b *bench) gzipping() string {
	if b.compress {
		return " and gzip'ing the backups"
	}
	return ""
}

var (
	auditIDRe = regexp.MustCompile(`"auditID":"[^"]*"`)
	stageRe   = regexp.MustCompile(`"stageTimestamp":"[^"]*"`)
)

// template is an audit line cut where its auditID and its stageTimestamp
// go: the writer appends the parts and the two values, so that writing
// costs the benchmark little of the processor it shares with the tailer
// (a regexp replacement per line cost 13 µs of CPU an event).
type template struct {
	parts [3][]byte
	// idFirst: the auditID comes before the stageTimestamp.
	idFirst bool
}

// newTemplate cuts line; a line without both fields is not a template.
func newTemplate(line []byte) (template, bool) {
	id, st := auditIDRe.FindIndex(line), stageRe.FindIndex(line)
	if id == nil || st == nil {
		return template{}, false
	}
	t := template{idFirst: id[0] < st[0]}
	a, b := id, st
	if !t.idFirst {
		a, b = st, id
	}
	t.parts = [3][]byte{line[:a[0]], line[a[1]:b[0]], line[b[1]:]}
	return t, true
}

// render appends the template with auditID i and a stageTimestamp of at,
// and a newline, to b.
func (t template) render(b []byte, i int, at time.Time) []byte {
	id := func(b []byte) []byte { return fmt.Appendf(b, `"auditID":"00000000-0000-4000-8000-%012d"`, i) }
	stage := func(b []byte) []byte {
		return at.UTC().AppendFormat(append(b, `"stageTimestamp":"`...), "2006-01-02T15:04:05.000000Z") // closed below
	}
	b = append(b, t.parts[0]...)
	if t.idFirst {
		b = id(b)
	} else {
		b = append(stage(b), '"')
	}
	b = append(b, t.parts[1]...)
	if t.idFirst {
		b = append(stage(b), '"')
	} else {
		b = id(b)
	}
	b = append(b, t.parts[2]...)
	return append(b, '\n')
}

// templates reads every audit line of the bundle's audit/ directory.
func templates(bundle string) ([]template, error) {
	files, err := filepath.Glob(filepath.Join(bundle, "audit", "*"))
	if err != nil {
		return nil, err
	}
	var out []template
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		var r io.Reader = fh
		if strings.HasSuffix(f, ".gz") {
			if r, err = gzip.NewReader(fh); err != nil {
				fh.Close()
				return nil, err
			}
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if t, ok := newTemplate(bytes.Clone(bytes.TrimSpace(sc.Bytes()))); ok {
				out = append(out, t)
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no audit lines under %s/audit", bundle)
	}
	return out, nil
}
