package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/cmd/cpid-tui/tui"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "tail", summary: "follow live audit and controller logs into the database (rotation-safe, resumable)", run: runTail})
}

// paths is a repeatable flag.
type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

// tailSink is what the tailer writes to: the store (a test seam, so that
// a test can make the real store report a full disk).
var tailSink = func(st store) cpid.RecordWriter { return st }

// tailRetryEvery is how often a full store is tried again.
var tailRetryEvery = 5 * time.Second

func runTail(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "tail", "[--db cpid.db] --audit-log PATH [--controller-log PATH_OR_GLOB]... | --status", strings.TrimSpace(`
Follows a live kube-apiserver audit log and controller JSON logs and stores
every complete line once, as 'cpid-tui ingest' would, while they are written.

It watches the logs' directories (fsnotify) and polls them (--poll). It
follows rotation by rename with asynchronous gzip and pruning of backups
(kube-apiserver's --audit-log-maxsize/--audit-log-compress, kubelet's
0.log.<time>[.gz]), copytruncate (detected; possible loss is counted), logs
that appear later, and backups rotated away before they were read (read
oldest first). A last line is stored only once its newline is written.
A log or pattern with no file yet is waited for (said once on stderr). A
full disk is waited out: the batch is tried again every 5s, with a
message, and nothing read is lost.

Where it stands in each log (the file, by a fingerprint of its content, and
the offset) is committed in the same transaction as the records read before
it: killed at any instant and restarted, it loses nothing and stores nothing
twice. Ctrl-C or SIGTERM stores what was read, then exits.

Every --reconstruct-every, it brings the derived tables up to date, so that
'cpid-tui browse' or 'query' on the same database sees fresh changes.

--status prints, from the database, where each followed log stands and its
counters (lines, records, duplicates, bad lines, possible losses, the lag of
the last commit); --metrics serves the live counters and the lag histogram
in the Prometheus text format. See docs/LIVE.md.

Examples:
  cpid-tui tail --db cpid.db --audit-log /var/log/kubernetes/audit/audit.log \
    --controller-log '/var/log/pods/kube-system_kube-controller-manager-*/*/*.log'
  cpid-tui tail --db cpid.db --status`))
	var db string
	dbFlag(fs, &db)
	var audit, controller paths
	fs.Var(&audit, "audit-log", "live audit log file (kube-apiserver --audit-log-path) or glob; repeatable")
	fs.Var(&controller, "controller-log", "live controller log file or glob (klog JSON or text, zap/logr or slog JSON; CRI-wrapped or not); repeatable")
	status := fs.Bool("status", false, "print where each followed log stands and its counters, then exit")
	out := fs.String("output", "table", "--status output: table, json or csv")
	poll := fs.Duration("poll", time.Second, "check every log this often, whatever fsnotify reports")
	batch := fs.Int("batch", 5000, "most records per transaction")
	every := fs.Duration("reconstruct-every", 10*time.Second, "bring the derived tables up to date this often (0: never)")
	metrics := fs.String("metrics", "", "serve /metrics (Prometheus text) on this address, e.g. 127.0.0.1:9464")
	maxLine := fs.Int("max-line", 16<<20, "longest line kept, in bytes; longer lines are reported and skipped")
	redaction := redactFlag(fs)
	cluster := clusterFlag(fs, defaultCluster)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || (!*status && len(audit)+len(controller) == 0) {
		if fs.NArg() == 0 {
			fmt.Fprintln(e.stderr, "cpid-tui tail: give --audit-log or --controller-log (or --status)")
		}
		fs.Usage()
		return errUsage
	}
	mode := readWrite
	if *status {
		mode = readOnly
	}
	db0, err := openStore(ctx, e.stderr, db, mode)
	if err != nil {
		return err
	}
	defer db0.close()
	st := db0.view(*cluster)
	if *status {
		return tailStatus(ctx, e.stdout, st, *out)
	}
	srcs, err := st.TailSources(ctx)
	if err != nil {
		return err
	}
	resume := make([]cpid.Checkpoint, len(srcs))
	for i, s := range srcs {
		resume[i] = s.Checkpoint
	}
	m := &ingest.Metrics{}
	var mu sync.Mutex // notices come from the tailer and the reconstruct loop
	t := &ingest.Tailer{
		Sink:       tailSink(st),
		Full:       db0.full,
		RetryEvery: tailRetryEvery,
		Paths:      append(audit, controller...),
		Resume:     resume,
		Limits:     ingest.Limits{MaxLine: *maxLine},
		Redaction:  redaction(),
		Poll:       *poll,
		Metrics:    m,
		Notice: func(n ingest.Notice) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(e.stderr, "tail: %s\n", tui.Printable(n.String()))
		},
		BatchSize: *batch,
	}
	if *every > 0 {
		t.ReconstructEvery = *every
		t.Reconstruct = func(ctx context.Context) error {
			_, err := reconstruct.Run(ctx, st, runOptions(false, reconstruct.LiveStepRows))
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
	mu.Lock()
	fmt.Fprintf(e.stderr, "tail: following %s into %s\n", strings.Join(t.Paths, " "), db)
	mu.Unlock()
	g.Go(func() error { return t.Run(ctx) })
	err = g.Wait()
	fmt.Fprintf(e.stderr, "tail: stopped: %d lines read, %d audit events and %d log records stored, %d duplicates, %d bad lines, %d possible losses\n",
		m.Lines.Load(), m.Audits.Load(), m.Logs.Load(), m.Dups.Load(), m.Bad.Load(), m.PossibleLoss.Load())
	return err
}

// tailStatus prints the tail_checkpoints table.
func tailStatus(ctx context.Context, w io.Writer, st cpid.ChangeReader, format string) error {
	srcs, err := st.TailSources(ctx)
	if err != nil {
		return err
	}
	type row struct {
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
		r := row{s.Source, s.File, s.Line, s.Offset, s.Lines, s.Records, s.Dups, s.Bad, s.PossibleLoss, s.CommittedNS, 0}
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
	return output(w, format, []string{"SOURCE", "AT", "LINES", "RECORDS", "DUPS", "BAD", "POSSIBLE_LOSS", "COMMITTED", "LAG"}, cells, rows)
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
