package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/cpid-dev/cpid/present"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/export"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "tail", use: "--audit-log PATH [--controller-log PATH_OR_GLOB]... | --status", group: "live",
		summary: "follow live audit and controller logs into the database (rotation-safe, resumable)", help: tailHelp, formats: dataFormats, setup: setupTail})
}

// paths is a repeatable flag.
type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }
func (p *paths) Type() string       { return "strings" }

// tailSink is what the tailer writes to: the store (a test seam, so that
// a test can make the real store report a full disk).
var tailSink = func(st store) cpid.RecordWriter { return st }

// tailRetryEvery is how often a full store, or one whose server went
// away, is tried again.
var tailRetryEvery = 5 * time.Second

// tailAccess is how tail opens a SQLite database: with SQLite in C where
// the build has cgo (cpid.Native), so that each batch goes to C in one
// call, as a bulk load's rows do (two to three times less CPU an event
// than the pure-Go SQLite row by row through database/sql), and the
// reconstruct runs read in C. Everything of the process opens the file
// through that store, the reconstruct runs and the OTLP pushes too: two
// SQLite libraries in one process do not see each other's POSIX locks.
// A build without cgo opens it with the pure-Go SQLite. Tests that run
// tail in their own process and read its database meanwhile with the
// pure-Go SQLite set readWrite (startTail).
var tailAccess = readWriteNative

// tailIdle is the tailer's Idle: nil, but in the tests' helper processes,
// which say on stderr when their tailer has caught up (a test seam, so
// that a test waits on that instead of polling the database).
var tailIdle func()

const tailHelp = `
Follows a live kube-apiserver audit log and controller JSON logs and stores
every complete line once, as 'cpid-tui ingest' would, while they are written.

It watches the logs' directories (fsnotify) and polls them (--poll). It
follows rotation by rename with asynchronous gzip and pruning of backups
(kube-apiserver's --audit-log-maxsize/--audit-log-compress, kubelet's
0.log.<time>[.gz]), copytruncate (detected; possible loss is counted), logs
that appear later, and backups rotated away before they were read (read
oldest first). A last line is stored only once its newline is written.
A log or pattern with no file yet is waited for (said once on stderr). A
full disk, and a PostgreSQL server that went away (a crash; a PANIC on a
full WAL disk), are waited out: the batch is tried again every 5s, with a
message, and nothing read is lost.

Where it stands in each log (the file, by a fingerprint of its content, and
the offset) is committed in the same transaction as the records read before
it: killed at any instant and restarted, it loses nothing and stores nothing
twice. Ctrl-C or SIGTERM stores what was read, then exits.

Every --reconstruct-every, it brings the derived tables up to date, so that
'cpid-tui browse' or 'query' on the same database sees fresh changes. With
--otlp-endpoint it then pushes the changes that settled (quiet for
--otlp-settle) as traces over OTLP/HTTP, as 'cpid-tui export' would, and
later writes of a change pushed as more spans of its trace; on Ctrl-C or
SIGTERM it brings the tables up to date and pushes what is left
(docs/EXPORT.md).

--status prints, from the database, where each followed log stands and its
counters (lines, records, duplicates, bad lines, possible losses, the lag of
the last commit), of every cluster unless --cluster names one; --metrics
serves the live counters and the lag histogram in the Prometheus text
format (-o: the format of --status). See docs/LIVE.md.

Examples:
  cpid-tui tail --db cpid.db --audit-log /var/log/kubernetes/audit/audit.log \
    --controller-log '/var/log/pods/kube-system_kube-controller-manager-*/*/*.log'
  cpid-tui tail --db cpid.db --status`

func setupTail(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	var audit, controller paths
	fs.Var(&audit, "audit-log", "live audit log file (kube-apiserver --audit-log-path) or glob; repeatable")
	fs.Var(&controller, "controller-log", "live controller log file or glob (klog JSON or text, zap/logr or slog JSON; CRI-wrapped or not); repeatable")
	status := fs.Bool("status", false, "print where each followed log stands and its counters, then exit")
	poll := fs.Duration("poll", time.Second, "check every log this often, whatever fsnotify reports")
	batch := fs.Int("batch", 20000, "most records per transaction (a tailer that is behind fills it; one that keeps up commits what it read)")
	batchBytes := fs.Int("batch-bytes", 16<<20, "most bytes of log lines per transaction, so that memory does not grow with the size of events")
	commitEvery := fs.Duration("commit-every", 50*time.Millisecond, "least time between two transactions while no batch is full (group commit; 0: none)")
	every := fs.Duration("reconstruct-every", 10*time.Second, "bring the derived tables up to date this often (0: never)")
	metrics := fs.String("metrics", "", "serve /metrics (Prometheus text) on this address, e.g. 127.0.0.1:9464")
	maxLine := fs.Int("max-line", 16<<20, "longest line kept, in bytes; longer lines are reported and skipped")
	redaction := redactFlag(fs)
	newPusher := otlpFlags(fs)
	settle := fs.Duration("otlp-settle", 30*time.Second, "--otlp-endpoint: push a change once its last write is this much older than the settled data")
	return func(ctx context.Context, args []string) error {
		db, cluster := e.db, e.writeCluster()
		// say writes a notice; they come from the tailer, the reconstruct
		// loop and the pushes.
		var mu sync.Mutex
		say := func(format string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(e.stderr, "tail: "+format+"\n", a...)
		}
		pusher, err := newPusher(say)
		switch {
		case err != nil:
			return usagef("%v", err)
		case pusher != nil && (*every <= 0 || *status):
			return usagef("--otlp-endpoint pushes what reconstruct derives: it needs --reconstruct-every above 0, and no --status")
		case len(args) > 0:
			return usagef("unexpected arguments %q", args)
		case !*status && len(audit)+len(controller) == 0:
			return usagef("give --audit-log or --controller-log (or --status)")
		case !*status && e.output != "":
			return usagef("-o is the format of --status")
		}
		mode := tailAccess
		if *status {
			mode = e.readMode()
		}
		db0, err := openStore(ctx, e.stderr, db, mode)
		if err != nil {
			return err
		}
		defer db0.close()
		if *status {
			// Every cluster's logs unless --cluster names one, as the
			// other reading commands show.
			return tailStatus(ctx, e, c, db0.view(e.cluster))
		}
		st := db0.view(cluster)
		srcs, err := st.TailSources(ctx)
		if err != nil {
			return err
		}
		resume := make([]cpid.Checkpoint, len(srcs))
		for i, s := range srcs {
			resume[i] = s.Checkpoint
		}
		m := &ingest.Metrics{}
		t := &ingest.Tailer{
			Sink:       tailSink(st),
			Full:       db0.full,
			Down:       db0.down,
			RetryEvery: tailRetryEvery,
			Paths:      append(audit, controller...),
			Resume:     resume,
			Limits:     ingest.Limits{MaxLine: *maxLine},
			Redaction:  redaction(),
			Poll:       *poll,
			Metrics:    m,
			Notice:     func(n ingest.Notice) { say("%s", present.Printable(n.String())) },
			BatchSize:  *batch,
			BatchBytes: *batchBytes,
			Idle:       tailIdle,
		}
		if t.CommitEvery = *commitEvery; *commitEvery == 0 {
			t.CommitEvery = -1 // none
		}
		var stream *export.Stream
		if pusher != nil {
			stream = &export.Stream{Pusher: pusher, Settle: *settle}
		}
		// push sends what settled after a run; a failure is said, and what
		// was not sent is sent after the next run.
		push := func(ctx context.Context, final bool) {
			n, err := stream.Push(ctx, st, final)
			if err != nil {
				say("%s", present.Printable(err.Error()))
			} else if n.Rejected > 0 {
				say("otlp: the receiver rejected %d spans: %s", n.Rejected, present.Printable(n.Message))
			}
		}
		// derive brings the derived tables up to date, as every run of the
		// loop and the last one before a push on stop do.
		derive := func(ctx context.Context) error {
			_, err := reconstruct.Run(ctx, st, runOptions(false, reconstruct.LiveStepRows))
			return err
		}
		if *every > 0 {
			t.ReconstructEvery = *every
			t.Reconstruct = func(ctx context.Context) error {
				err := derive(ctx)
				if err == nil && stream != nil {
					// A push under way when the tailer stops is given 10 s
					// to finish: cut short, the receiver may have the
					// spans that the last push then sends again.
					pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
					defer cancel()
					defer context.AfterFunc(ctx, func() { time.AfterFunc(10*time.Second, cancel) })()
					push(pctx, false)
				}
				return err
			}
		}
		g, ctx := errgroup.WithContext(ctx)
		if *metrics != "" {
			mux := http.NewServeMux()
			mux.Handle("/metrics", metricsHandler(m, "cpid_tail"))
			if err := serveUntil(ctx, g, *metrics, mux, nil); err != nil {
				return err
			}
		}
		say("following %s into %s", strings.Join(t.Paths, " "), db)
		g.Go(func() error { return t.Run(ctx) })
		err = g.Wait()
		if stream != nil && err == nil {
			// What was read last is derived and pushed before exiting.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			if rerr := derive(fctx); rerr != nil {
				fmt.Fprintf(e.stderr, "tail: reconstruct: %s\n", present.Printable(rerr.Error()))
			}
			push(fctx, true)
			cancel()
		}
		fmt.Fprintf(e.stderr, "tail: stopped: %d lines read, %d audit events and %d log records stored, %d duplicates, %d bad lines, %d possible losses\n",
			m.Lines.Load(), m.Audits.Load(), m.Logs.Load(), m.Dups.Load(), m.Bad.Load(), m.PossibleLoss.Load())
		return err
	}
}

// tailStatus prints the tail_checkpoints table of the view's cluster(s).
func tailStatus(ctx context.Context, e *env, c *cobra.Command, st cpid.ChangeReader) error {
	srcs, err := st.TailSources(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Cluster      string `json:"cluster"`
		Source       string `json:"source"`
		File         string `json:"file"`
		Line         int    `json:"line"`
		Offset       int64  `json:"offset"`
		Lines        int64  `json:"lines"`
		Records      int64  `json:"records"`
		Dups         int64  `json:"duplicates"`
		Bad          int64  `json:"bad_lines"`
		PossibleLoss int64  `json:"possible_loss"`
		CommittedNS  int64  `json:"committed_ns"`
		LagNS        int64  `json:"lag_ns"`
	}
	var rows []row
	var cells [][]string
	for _, s := range srcs {
		r := row{s.Cluster, s.Source, s.File, s.Line, s.Offset, s.Lines, s.Records, s.Dups, s.Bad, s.PossibleLoss, s.CommittedNS, 0}
		if s.NewestNS > 0 {
			r.LagNS = s.CommittedNS - s.NewestNS
		}
		rows = append(rows, r)
		lag := "-"
		if r.LagNS > 0 {
			lag = dur(r.LagNS)
		}
		cells = append(cells, []string{r.Source, fmt.Sprintf("%s:%d", r.File, r.Line), strconv.FormatInt(r.Lines, 10),
			strconv.FormatInt(r.Records, 10), strconv.FormatInt(r.Dups, 10), strconv.FormatInt(r.Bad, 10),
			strconv.FormatInt(r.PossibleLoss, 10), clock(r.CommittedNS), lag})
	}
	if rows == nil {
		rows = []row{}
	}
	l := listing{head: []string{"SOURCE", "AT", "LINES", "RECORDS", "DUPS", "BAD", "POSSIBLE_LOSS", "COMMITTED", "LAG"},
		rows: cells, data: rows}
	// The cluster is a column when the logs are of more than one, or of
	// one that --cluster did not name and is not the default.
	named := false
	for _, r := range rows {
		named = named || r.Cluster != rows[0].Cluster || r.Cluster != defaultCluster && e.cluster == ""
	}
	if named {
		l = l.prepend("CLUSTER", func(i int) string { return rows[i].Cluster })
	}
	return e.print(c, l)
}

// metricsHandler serves m in the Prometheus text format.
func metricsHandler(m *ingest.Metrics, prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.WriteText(w, prefix)
	})
}

// serveUntil listens on addr and serves h in g until ctx ends, then shuts
// the server down, letting requests in flight finish.
func serveUntil(ctx context.Context, g *errgroup.Group, addr string, h http.Handler, wrap func(net.Listener) net.Listener) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve %s: %w", addr, err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	return nil
}
