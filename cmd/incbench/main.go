// Command incbench measures what an incremental reconstruct costs on a large
// database against the same events alone (issue 31: at most 2x). Each run
// is a new batch of synthetic events, the ones that follow those the
// database holds in fixtures/synth's sequence, ingested and then
// reconstructed; "alone" is the same batch ingested into an empty database
// and reconstructed there (a first run).
//
// Two ways of running it, both measured:
//
//   - process: `cpid-tui ingest`, then `cpid-tui reconstruct` as a process
//     of its own, timed with its CPU (user and system, from the kernel);
//     as someone runs it after an ingest.
//
//   - warm: one process opens the database once, as `cpid-tui tail` does,
//     and for each batch ingests it and runs reconstruct with the tailer's
//     options (reconstruct.LiveStepRows), timing the run's CPU (getrusage
//     of the process around the run: its SQLite threads and collector
//     included). The first batch warms the page cache and is not counted.
//
//     go build -o bin/cpid-tui ./cmd/cpid-tui && go build -o /tmp/synth ./fixtures/synth
//     go run ./cmd/incbench -synth /tmp/synth -skip 10000000 /tmp/10m.db
//
// It adds 2 x runs + 1 batches to the database (the process runs, then the
// warm ones and their warm-up), and prints a Markdown table for
// docs/BENCHMARKS.md. DB is a SQLite file or a postgres:// URL; for
// PostgreSQL the alone databases are created on the same server (the
// URL's user needs CREATEDB) and dropped after.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/postgres"
	"github.com/cpid-dev/cpid/postgres/pgtest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/sqlite"
)

type config struct {
	db, cpidTUI, synth, template, tmp, cluster string
	skip, events, runs                         int
	modes                                      []string
	// server is the CPU the PostgreSQL server has used so far (nil for
	// SQLite): a run's cost is cpid's CPU and the server's.
	server func() (time.Duration, error)
}

func main() {
	var c config
	var modes string
	flag.StringVar(&c.cpidTUI, "cpid", "bin/cpid-tui", "the cpid-tui binary the process runs use")
	flag.StringVar(&c.synth, "synth", "", "a fixtures/synth binary, which makes the batches (required)")
	flag.StringVar(&c.template, "template", "fixtures/basic/bundle", "the bundle fixtures/synth templates its events from (the database's bundle was made from it)")
	flag.IntVar(&c.skip, "skip", 0, "where the first batch starts in fixtures/synth's sequence: the events the database holds (-events of its bundle), or more when earlier batches were added to it (required)")
	flag.IntVar(&c.events, "events", 10000, "events a batch")
	flag.IntVar(&c.runs, "runs", 8, "batches measured each way")
	flag.StringVar(&modes, "modes", "process,warm", "the ways measured: process (cpid-tui reconstruct as a process of its own), warm (reconstruct in one process that stays open, as the tailer runs it)")
	flag.StringVar(&c.tmp, "tmp", "", "scratch directory for the batches and the alone databases (default a new one in the system's, removed at the end)")
	flag.StringVar(&c.cluster, "cluster", "default", "the database's cluster the batches go to")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: incbench -synth SYNTH -skip N [flags] DB\n\nAn incremental reconstruct of a batch on DB against the same batch alone.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || c.synth == "" || c.skip <= 0 || c.runs < 1 || c.events < 1 {
		flag.Usage()
		os.Exit(2)
	}
	c.db = flag.Arg(0)
	c.modes = strings.Split(modes, ",")
	for _, m := range c.modes {
		if m != "process" && m != "warm" {
			fmt.Fprintf(os.Stderr, "incbench: -modes: %q is neither process nor warm\n", m)
			os.Exit(2)
		}
	}
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "incbench:", err)
		os.Exit(1)
	}
}

// sample is one run's cost: CPU (user and system: cpid's process and,
// on PostgreSQL, the server's) and wall time.
type sample struct{ cpu, wall time.Duration }

// row is one way of running, measured: its incremental runs and the same
// batches alone.
type row struct {
	mode       string
	inc, alone []sample
	writes     []int
}

func run(ctx context.Context, c config) error {
	if c.tmp == "" {
		d, err := os.MkdirTemp("", "incbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		c.tmp = d
	} else if err := os.MkdirAll(c.tmp, 0o755); err != nil {
		return err
	}
	if isPostgres(c.db) {
		var err error
		if c.server, err = serverCPU(ctx, c.db); err != nil {
			return err
		}
	}
	load := loadavg()
	next := c.skip
	batch := func() (string, error) {
		dir := filepath.Join(c.tmp, fmt.Sprintf("batch-%d", next))
		out, err := exec.Command(c.synth, "-skip", fmt.Sprint(next), "-events", fmt.Sprint(c.events), "-out", dir, c.template).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s: %v\n%s", c.synth, err, out)
		}
		next += c.events
		files, err := filepath.Glob(filepath.Join(dir, "audit", "*"))
		if err != nil || len(files) == 0 {
			return "", fmt.Errorf("%s wrote no audit file in %s", c.synth, dir)
		}
		return filepath.Join(dir, "audit"), nil
	}
	// Each way removes a batch once measured (batch's directory is the
	// parent of what it returns).
	done := func(audit string) { os.RemoveAll(filepath.Dir(audit)) }
	var rows []row
	for _, m := range c.modes {
		var r row
		var err error
		if m == "process" {
			r, err = processRuns(ctx, c, batch, done)
		} else {
			r, err = warmRuns(ctx, c, batch, done)
		}
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	engine := "SQLite"
	if isPostgres(c.db) {
		engine = "PostgreSQL (CPU: cpid's and the server's, which /proc counts in ticks of 10 ms)"
	}
	fmt.Printf("%s, %d batches of %d events each way (fixtures/synth -skip from %d), load average %s at the start and %s at the end:\n\n",
		engine, c.runs, c.events, c.skip, load, loadavg())
	fmt.Println("| run | writes a batch | incremental, CPU | the same batch alone, CPU | ratio, medians (means) | incremental, wall (median) | alone, wall (median) |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		ic, ac := cpus(r.inc), cpus(r.alone)
		fmt.Printf("| %s | %d-%d | %s-%s s, median %s | %s-%s s, median %s | %.1fx (%.1fx) | %s s | %s s |\n", label(r.mode),
			slices.Min(r.writes), slices.Max(r.writes),
			secs(slices.Min(ic)), secs(slices.Max(ic)), secs(median(ic)),
			secs(slices.Min(ac)), secs(slices.Max(ac)), secs(median(ac)),
			float64(median(ic))/float64(median(ac)), float64(mean(ic))/float64(mean(ac)),
			secs(median(walls(r.inc))), secs(median(walls(r.alone))))
	}
	return nil
}

func label(mode string) string {
	if mode == "process" {
		return "`cpid-tui reconstruct`, a process of its own"
	}
	return "warm: one open database, the tailer's options"
}

// processRuns: for each batch, cpid-tui ingest then cpid-tui reconstruct on
// the database, then both on an empty one.
func processRuns(ctx context.Context, c config, batch func() (string, error), done func(string)) (row, error) {
	r := row{mode: "process"}
	for i := range c.runs {
		dir, err := batch()
		if err != nil {
			return r, err
		}
		s, a, writes, err := processRun(ctx, c, dir, i)
		done(dir)
		if err != nil {
			return r, err
		}
		r.inc, r.alone, r.writes = append(r.inc, s), append(r.alone, a), append(r.writes, writes)
		fmt.Fprintf(os.Stderr, "process %d/%d: incremental %s s CPU (%s wall), alone %s s (%s)\n", i+1, c.runs, secs(s.cpu), secs(s.wall), secs(a.cpu), secs(a.wall))
	}
	return r, nil
}

// processRun measures one batch, the audit files in dir, as processRuns says.
func processRun(ctx context.Context, c config, dir string, i int) (inc, alone sample, writes int, err error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if err := ingestAll(c, c.db, files); err != nil {
		return inc, alone, 0, err
	}
	inc, out, err := command(c, "reconstruct", "--db", c.db, "--cluster", c.cluster)
	if err != nil {
		return inc, alone, 0, err
	}
	if strings.Contains(out, "full rebuild") {
		return inc, alone, 0, fmt.Errorf("the run on %s was a full rebuild, not an incremental one (a batch older than what the database holds, or a state of another build's engine):\n%s", c.db, out)
	}
	db, drop, err := emptyDB(ctx, c, fmt.Sprintf("process%d", i))
	if err != nil {
		return inc, alone, 0, err
	}
	defer drop()
	if err := ingestAll(c, db, files); err != nil {
		return inc, alone, 0, err
	}
	alone, _, err = command(c, "reconstruct", "--db", db, "--cluster", c.cluster)
	return inc, alone, writesOf(out), err
}

// ingestAll runs cpid-tui ingest of files into db, and fails unless it
// stored every event of the batch: a batch that overlaps what db holds
// (a -skip short of the batches added before) would measure less than
// its events.
func ingestAll(c config, db string, files []string) error {
	cmd := exec.Command(c.cpidTUI, append([]string{"ingest", "--cluster", c.cluster, "--db", db}, files...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s ingest --db %s: %v\n%s", c.cpidTUI, db, err, out)
	}
	if n := newEvents(string(out)); n != c.events {
		return fmt.Errorf("%s ingest stored %d new audit events of the batch's %d into %s: the batch overlaps what the database holds (a -skip past the batches added before)?\n%s", c.cpidTUI, n, c.events, db, out)
	}
	return nil
}

// newEvents reads the new events an ingest stored from what it printed
// ("database PATH: N new audit events ..."); -1 when it printed none.
func newEvents(out string) int {
	f := strings.Fields(out)
	for i := 0; i+3 < len(f); i++ {
		if f[i+1] == "new" && f[i+2] == "audit" && f[i+3] == "events" {
			var n int
			if _, err := fmt.Sscan(f[i], &n); err == nil {
				return n
			}
		}
	}
	return -1
}

// command runs cpid-tui with args and returns its CPU (and the server's)
// and wall time and its standard output.
func command(c config, args ...string) (sample, string, error) {
	cmd := exec.Command(c.cpidTUI, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	s0, err := c.serverNow()
	if err != nil {
		return sample{}, "", err
	}
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, "", fmt.Errorf("%s %s: %v\n%s%s", c.cpidTUI, strings.Join(args[:min(len(args), 4)], " "), err, out.String(), errOut.String())
	}
	s1, err := c.serverNow()
	if err != nil {
		return sample{}, "", err
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{cpu: tv(ru.Utime) + tv(ru.Stime) + s1 - s0, wall: wall}, out.String(), nil
}

// serverNow is the server's CPU so far, 0 without a server.
func (c config) serverNow() (time.Duration, error) {
	if c.server == nil {
		return 0, nil
	}
	d, err := c.server()
	if err != nil {
		return 0, fmt.Errorf("the server's CPU: %w", err)
	}
	return d, nil
}

// serverCPU finds the PostgreSQL server of db on this machine (the parent
// of the backend serving a connection: the postmaster) and returns a
// reader of its CPU, its backends and workers included. It fails unless
// the backend's process here is PostgreSQL's: a server in another PID
// namespace (a container) or on another host has other processes' ids.
func serverCPU(ctx context.Context, db string) (func() (time.Duration, error), error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return nil, err
	}
	here := "incbench counts the CPU of a PostgreSQL server running on this machine, in its PID namespace"
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", backend))
	if err != nil || !strings.HasPrefix(string(cmdline), "postgres") {
		return nil, fmt.Errorf("the backend of %s, process %d, is not a PostgreSQL process of this machine (%q, %v): %s", db, backend, cmdline, err, here)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", backend))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, here)
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var postmaster int
	if len(f) < 2 {
		return nil, fmt.Errorf("/proc/%d/stat: no parent in %q", backend, b)
	}
	if _, err := fmt.Sscan(f[1], &postmaster); err != nil {
		return nil, fmt.Errorf("/proc/%d/stat: %w", backend, err)
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", postmaster)); err != nil || strings.TrimSpace(string(comm)) != "postgres" {
		return nil, fmt.Errorf("the parent of backend %d, process %d, is not PostgreSQL's postmaster (%q, %v): %s", backend, postmaster, comm, err, here)
	}
	read := func() (time.Duration, error) { return pgtest.TreeCPU(postmaster) }
	if _, err := read(); err != nil {
		return nil, err
	}
	return read, nil
}

// writesOf reads the writes a run explained from what cpid-tui reconstruct
// printed ("... 3246 writes in ...").
func writesOf(out string) int {
	f := strings.Fields(out)
	for i := 1; i < len(f); i++ {
		if f[i] == "writes" {
			var n int
			if _, err := fmt.Sscan(f[i-1], &n); err == nil {
				return n
			}
		}
	}
	return 0
}

// opened is a store open in this process.
type opened struct {
	view  cpid.DerivedStore
	sink  cpid.RecordWriter
	close func() error
}

func open(ctx context.Context, db, cluster string) (*opened, error) {
	if isPostgres(db) {
		st, err := postgres.Open(ctx, db)
		if err != nil {
			return nil, err
		}
		v := st.InCluster(cluster)
		return &opened{view: v, sink: v, close: st.Close}, nil
	}
	st, err := sqlite.Open(ctx, db, cpid.Native())
	if err != nil {
		return nil, err
	}
	v := st.InCluster(cluster)
	return &opened{view: v, sink: v, close: st.Close}, nil
}

// warmRuns: one process holds the database open; each batch is ingested and
// reconstructed in it, then the same in an empty database opened alike.
func warmRuns(ctx context.Context, c config, batch func() (string, error), done func(string)) (row, error) {
	r := row{mode: "warm"}
	st, err := open(ctx, c.db, c.cluster)
	if err != nil {
		return r, err
	}
	defer st.close()
	opt := reconstruct.Options{StepRows: reconstruct.LiveStepRows, Family: ingest.Family}
	for i := -1; i < c.runs; i++ {
		dir, err := batch()
		if err != nil {
			return r, err
		}
		s, a, writes, err := warmRun(ctx, c, st, dir, i, opt)
		done(dir)
		if err != nil {
			return r, err
		}
		if i < 0 {
			fmt.Fprintf(os.Stderr, "warm-up: incremental %s s CPU, alone %s s (not counted)\n", secs(s.cpu), secs(a.cpu))
			continue
		}
		r.inc, r.alone, r.writes = append(r.inc, s), append(r.alone, a), append(r.writes, writes)
		fmt.Fprintf(os.Stderr, "warm %d/%d: incremental %s s CPU (%s wall), alone %s s (%s)\n", i+1, c.runs, secs(s.cpu), secs(s.wall), secs(a.cpu), secs(a.wall))
	}
	return r, nil
}

// warmRun measures one batch, the audit files in dir, as warmRuns says.
func warmRun(ctx context.Context, c config, st *opened, dir string, i int, opt reconstruct.Options) (inc, alone sample, writes int, err error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if err := ingestIn(ctx, c, st, c.db, files); err != nil {
		return inc, alone, 0, err
	}
	inc, rep, err := timed(c, func() (reconstruct.Report, error) { return reconstruct.Run(ctx, st.view, opt) })
	if err != nil {
		return inc, alone, 0, fmt.Errorf("reconstruct %s: %w", c.db, err)
	}
	if rep.Full {
		return inc, alone, 0, fmt.Errorf("the run on %s was a full rebuild (%s), not an incremental one (a batch older than what the database holds, or a state of another build's engine)", c.db, rep.Why)
	}
	db, drop, err := emptyDB(ctx, c, fmt.Sprintf("warm%d", i+1))
	if err != nil {
		return inc, alone, 0, err
	}
	defer drop()
	alone, err = aloneWarm(ctx, c, db, files, opt)
	return inc, alone, rep.Writes, err
}

// ingestIn ingests files into the open store st (of db), and fails unless
// it stored every event of the batch (ingestAll).
func ingestIn(ctx context.Context, c config, st *opened, db string, files []string) error {
	sum, err := (&ingest.Ingester{Sink: st.sink}).Run(ctx, files)
	if err != nil {
		return fmt.Errorf("ingest into %s: %w", db, err)
	}
	if n := sum.Written.Audits; n != c.events {
		return fmt.Errorf("ingest stored %d new audit events of the batch's %d into %s: the batch overlaps what the database holds (a -skip past the batches added before)?", n, c.events, db)
	}
	return nil
}

// aloneWarm ingests files into the empty database db and times its first
// reconstruct run, in this process.
func aloneWarm(ctx context.Context, c config, db string, files []string, opt reconstruct.Options) (sample, error) {
	st, err := open(ctx, db, c.cluster)
	if err != nil {
		return sample{}, err
	}
	defer st.close()
	if err := ingestIn(ctx, c, st, db, files); err != nil {
		return sample{}, err
	}
	s, _, err := timed(c, func() (reconstruct.Report, error) { return reconstruct.Run(ctx, st.view, opt) })
	return s, err
}

// timed runs f and returns the process's CPU (and the server's) and the
// wall time it took.
func timed(c config, f func() (reconstruct.Report, error)) (sample, reconstruct.Report, error) {
	// The server's CPU is read from /proc outside the process's readings,
	// so that this process's reads of /proc are not counted in the run.
	s0, err := c.serverNow()
	if err != nil {
		return sample{}, reconstruct.Report{}, err
	}
	c0, start := processCPU(), time.Now()
	rep, err := f()
	cpu, wall := processCPU()-c0, time.Since(start)
	if err != nil {
		return sample{}, rep, err
	}
	s1, err := c.serverNow()
	return sample{cpu: cpu + s1 - s0, wall: wall}, rep, err
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return tv(ru.Utime) + tv(ru.Stime)
}

// emptyDB makes an empty database for a batch alone: a new SQLite file in
// the scratch directory, or a new database on DB's PostgreSQL server. drop
// removes it.
func emptyDB(ctx context.Context, c config, name string) (db string, drop func(), err error) {
	if !isPostgres(c.db) {
		path := filepath.Join(c.tmp, "alone-"+name+".db")
		drop := func() {
			for _, s := range []string{"", "-wal", "-shm"} {
				os.Remove(path + s)
			}
		}
		drop() // a file an earlier run left in the same -tmp
		return path, drop, nil
	}
	u, err := url.Parse(c.db)
	if err != nil {
		return "", nil, err
	}
	conn, err := pgx.Connect(ctx, c.db)
	if err != nil {
		return "", nil, err
	}
	dbName := fmt.Sprintf("incbench_%d_%s", os.Getpid(), name)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("create database %s for a batch alone (the user of %s needs CREATEDB): %w", dbName, u.Redacted(), err)
	}
	u.Path = "/" + dbName
	q := u.Query()
	q.Del("dbname") // it would name the database instead of the path
	u.RawQuery = q.Encode()
	return u.String(), func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), "DROP DATABASE "+dbName+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "incbench: drop database %s: %v\n", dbName, err)
		}
		conn.Close(context.WithoutCancel(ctx))
	}, nil
}

func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

func cpus(s []sample) []time.Duration {
	var d []time.Duration
	for _, x := range s {
		d = append(d, x.cpu)
	}
	return d
}

func walls(s []sample) []time.Duration {
	var d []time.Duration
	for _, x := range s {
		d = append(d, x.wall)
	}
	return d
}

// median is the middle value, the mean of the two middle ones for an even
// count.
func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	if n := len(d); n%2 == 0 {
		return (d[n/2-1] + d[n/2]) / 2
	}
	return d[len(d)/2]
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
