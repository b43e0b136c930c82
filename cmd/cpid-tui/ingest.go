package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/present"
	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "ingest", use: "PATH... [flags]", summary: "store audit logs and controller logs in the database", group: "load",
		help: ingestHelp, setup: setupIngest})
}

// redactRules is the repeatable --redact flag.
type redactRules []ingest.Rule

func (r *redactRules) String() string { return fmt.Sprint([]ingest.Rule(*r)) }

func (r *redactRules) Type() string { return "rule" }

func (r *redactRules) Set(s string) error {
	rule, err := ingest.ParseRule(s)
	if err != nil {
		return err
	}
	*r = append(*r, rule)
	return nil
}

// redactFlag adds the --redact flag every command that stores audit events
// shares; the result is the redaction to use once flags are parsed.
func redactFlag(fs *pflag.FlagSet) func() *ingest.Redaction {
	var rules redactRules
	fs.Var(&rules, "redact", "also remove this member of a custom resource's bodies before storing: "+
		"NAME[.GROUP][/SUBRESOURCE]:PATH, e.g. sealedsecrets.bitnami.com:spec.encryptedData (repeatable; see docs/SECURITY.md)")
	return func() *ingest.Redaction { return ingest.NewRedaction(rules...) }
}

const ingestHelp = `
Reads kube-apiserver audit logs (audit.k8s.io/v1 JSON lines, EventList
documents; GKE, EKS and AKS exports of them) and controller logs (klog text
and JSON, zap or logr JSON, slog JSON), plain or in CRI container-log lines,
and stores them in the database. Formats are recognised by content, line by
line; the summary names each file's (docs/INPUTS.md).

A PATH is a file, a directory (read recursively; rotated backups such as
audit-2006-01-02T15-04-05.000.log.gz are read oldest first, the live file
last), a .gz file, a .tar.gz/.tgz bundle (read as a stream, never extracted),
or - for standard input. Compression and tar are recognised by content.
Notes, scripts and tables found in a directory or bundle (*.md, *.sh,
*.tsv..., or a first line of #!, # or tab-separated columns) are not logs:
they are skipped and listed as such; a file given as a PATH is always read.

Ingesting the same input twice changes nothing: exact duplicate events
collapse, distinct events sharing an auditID are all kept. Credentials are
never stored: Secret data and stringData, service-account tokens
(TokenRequest status.token), TokenReview spec.token, PEM private keys in any
body, and Secrets embedded in other objects and in last-applied-configuration
annotations are removed before anything is written (--redact adds custom
resources; docs/SECURITY.md). A bad line is reported with file:line and
skipped; the exit code is 0 when the rest was stored, 1 when an input could
not be read at all or none of its lines could be decoded (everything else is
still stored) or when nothing at all was read (an empty file or directory:
only a warning beside inputs that were read), and with --strict 3 when lines
were skipped (the rest stored). Without --strict bad lines do not change
the exit code: a log copied while it was written ends in a truncated line,
and a script that ingests it should go on. -q prints nothing but the bad
lines and errors.

klog text lines do not name their program: their records are attributed to
the container or file name of their log (kube-controller-manager.log,
/var/log/pods/.../kube-scheduler/0.log), or to --component for standard
input, which is then stored as the input stdin:COMPONENT, so that logs of
two programs piped in one after the other stay two logs. Their year, which klog does not write, is inferred from the time of
their CRI or --timestamps wrapper, klog's file header, or the file's
modification time (docs/INPUTS.md). The summary counts log records by
program (so named, else by the Go module or cmd/ directory of the caller's
path), each with the components (loggers, source files) that wrote most.

Lines are decoded on every core and stored by one writer, in input order.
Bodies are stored compressed (docs/SCHEMA.md; cpid-tui sql reads them). A
--db that does not exist yet is created by a bulk load: the records go to
DB.partial, the indexes are built at the end and the file is moved into
place, so a crash leaves no half database at --db (DB.partial is thrown
away by the next ingest); an interrupted run keeps what it stored, a run
that stored nothing (an input missing or empty) leaves no database. The
duplicates a new database finds were repeated in the input. Other
cpid-tui commands started meanwhile on the same --db (another ingest,
tail, serve, reconstruct, query) wait for the load, saying so, then
append to or read the database it made.

Examples:
  cpid-tui ingest --db incident.db /var/log/kubernetes/audit/
  cpid-tui ingest --db incident.db must-gather.tar.gz
  kubectl logs --timestamps -n kube-system kube-controller-manager-0 | cpid-tui ingest --component kube-controller-manager -`

func setupIngest(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	maxLine := fs.Int("max-line", 16<<20, "longest line kept, in bytes; longer lines are reported and skipped")
	ratio := fs.Int64("max-inflate-ratio", 1000, fmt.Sprintf("refuse an input that inflates more than this many times its compressed size, "+
		"per gzip layer or in total, past %d MiB (a decompression bomb)", ingest.DefaultInflateFloor>>20))
	members := fs.Int("max-members", ingest.DefaultMaxMembers, "refuse the rest of a tar bundle past this many entries")
	batch := fs.Int("batch", 5000, "records per transaction (a batch also ends at 4 MiB of bodies)")
	redaction := redactFlag(fs)
	component := fs.String("component", "", "the program that wrote standard input (-), which names the records of its klog text lines")
	strict := fs.Bool("strict", false, "exit 3 when bad lines were skipped (the rest is stored all the same)")
	return func(ctx context.Context, paths []string) error {
		if len(paths) == 0 {
			return usagef("no PATH given")
		}
		tuneGC()
		db, cluster, quiet := e.db, e.writeCluster(), &e.quiet
		db0, err := openForLoad(ctx, e.notices(), db)
		if err != nil {
			return err
		}
		defer db0.close()
		st := db0.view(cluster)
		in := &ingest.Ingester{
			Sink: st,
			Walker: ingest.Walker{Limits: ingest.Limits{MaxLine: *maxLine, MaxInflateRatio: *ratio, MaxMembers: *members}, Stdin: e.stdin,
				Component: *component},
			BatchSize: *batch,
			Redaction: redaction(),
		}
		if !*quiet {
			in.ProgressEvery = 2 * time.Second
			in.Progress = func(p ingest.Progress) { printProgress(e.stderr, p) }
		}
		start := time.Now()
		sum, err := in.Run(ctx, paths)
		out := outcome{db: db}
		if db0.finish != nil {
			// A new database: what was stored is whole batches, kept even
			// when the run was interrupted; a store error throws it away,
			// and so does a run that stored nothing (a missing or empty
			// input leaves no file behind).
			if err != nil && !errors.Is(err, context.Canceled) {
				db0.abandon()
				return fmt.Errorf("%w (nothing was kept: %s did not exist before)", err, db)
			}
			if sum == nil || sum.Written.Audits+sum.Written.Logs == 0 {
				db0.abandon()
				out.notCreated = true
			} else {
				if !*quiet {
					fmt.Fprintf(e.stderr, "ingest: building the indexes of the new database\n")
				}
				dups, ferr := db0.finish(context.WithoutCancel(ctx))
				if ferr != nil {
					return ferr
				}
				// A new database held nothing before: every duplicate the
				// sort found was repeated in the input.
				out.created = true
				sum.Written.Add(dups)
				sum.Elapsed = time.Since(start)
			}
		}
		if sum != nil {
			if *quiet {
				printBadLines(e.stderr, sum)
			} else {
				printSummary(e.stdout, out, sum)
			}
		}
		if err != nil {
			return err
		}
		var errs []error
		if len(sum.ReadErrors) > 0 {
			errs = append(errs, fmt.Errorf("%s could not be read: %w", present.Plural(len(sum.ReadErrors), "input"), errors.Join(sum.ReadErrors...)))
		}
		errs = append(errs, unreadInputs(sum)...)
		if len(errs) == 0 && nothingRead(sum) {
			var what []string
			for _, em := range sum.Empty {
				what = append(what, present.Printable(em.Input)+" ("+emptyReason(em)+")")
			}
			err := fmt.Errorf("nothing was read: %s", strings.Join(what, ", "))
			if out.notCreated {
				err = fmt.Errorf("%w; %s was not created", err, db)
			}
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if *strict && sum.Bad > 0 {
			return markf(errBadLines, "%s skipped (--strict)", present.Plural(sum.Bad, "bad line"))
		}
		return nil
	}
}

// tuneGC sets the collector for ingest, unless GOGC or GOMEMLIMIT say
// otherwise: the decoders make short-lived garbage at a high rate, so it
// runs at 200% growth instead of 100%, within a soft limit of 130 MiB that
// keeps the whole process (SQLite's page cache and sorts beside the Go
// heap) under 200 MiB. Measured on a million synthetic events: about 10%
// less wall time than the defaults (docs/BENCHMARKS.md).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(130 << 20)
	}
}

// unreadInputs returns an error for each input (a PATH argument) of which
// no line could be decoded although some were bad: the wrong file, or a
// format cpid does not read. It names the format detected and the first bad
// lines.
func unreadInputs(s *ingest.Summary) []error {
	type input struct {
		records, bad, files int
		format              ingest.Format
		first               []*ingest.LineError
	}
	byInput := map[string]*input{}
	var order []string
	for _, f := range s.Files {
		in := byInput[f.Input]
		if in == nil {
			in = &input{}
			byInput[f.Input] = in
			order = append(order, f.Input)
		}
		in.files++
		in.records += f.Audits + f.Logs
		in.bad += f.Bad
		in.format |= f.Format
		for _, b := range f.BadLines {
			if len(in.first) < 3 {
				in.first = append(in.first, b)
			}
		}
	}
	var errs []error
	for _, name := range order {
		in := byInput[name]
		if in.records > 0 || in.bad == 0 {
			continue
		}
		var lines []string
		for _, b := range in.first {
			lines = append(lines, "  "+present.Printable(b.Error()))
		}
		bad := present.Plural(in.bad, "bad line")
		if in.files > 1 {
			bad += fmt.Sprintf(" in %d files", in.files)
		}
		errs = append(errs, fmt.Errorf("%s: no line could be decoded (%s, detected format: %s); first bad lines:\n%s",
			present.Printable(name), bad, in.format, strings.Join(lines, "\n")))
	}
	return errs
}

// printProgress prints what was read from disk (of how much) and what it
// decoded to, which a compressed input makes larger: "read 24.6 KiB of 24.6
// KiB (100%), 3.9 MiB decoded" says where a small input's time goes.
func printProgress(w io.Writer, p ingest.Progress) {
	secs := p.Elapsed.Seconds()
	of := ""
	if p.TotalDisk > 0 {
		of = fmt.Sprintf(" of %s (%.0f%%)", bytesize(p.TotalDisk), 100*float64(p.DiskBytes)/float64(p.TotalDisk))
	}
	fmt.Fprintf(w, "ingest: read %s%s, %s decoded, %.1f MB/s, %d records, %.0f records/s, %s\n",
		bytesize(p.DiskBytes), of, bytesize(p.Bytes), float64(p.Bytes)/1e6/secs, p.Records, float64(p.Records)/secs, present.Printable(p.File))
}

// bytesize formats a byte count for people, in the unit that shows it.
func bytesize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// outcome is what became of the database an ingest stored into.
type outcome struct {
	db string
	// created: the ingest made it (every duplicate was repeated in the
	// input); notCreated: it would have, but nothing was stored.
	created, notCreated bool
}

func printSummary(w io.Writer, out outcome, s *ingest.Summary) {
	var lines, audits, logs int
	for _, f := range s.Files {
		lines += f.Lines
		audits += f.Audits
		logs += f.Logs
	}
	secs := s.Elapsed.Seconds()
	fmt.Fprintf(w, "ingested %s, %s, %s (%s decoded) in %.2fs: %.0f records/s, %.1f MB/s\n",
		present.Plural(len(s.Files), "file"), present.Plural(lines, "line"), bytesize(s.DiskBytes), bytesize(s.Bytes), secs, float64(audits+logs)/secs, float64(s.Bytes)/1e6/secs)
	n := s.Written
	switch {
	case out.notCreated:
		fmt.Fprintf(w, "database %s: not created, nothing to store\n", out.db)
	case out.created:
		fmt.Fprintf(w, "database %s (new): %d new audit events (%d repeated in the input), %d new log records (%d repeated in the input)\n",
			out.db, n.Audits, n.AuditDups, n.Logs, n.LogDups)
	default:
		// A duplicate may have been stored before, or earlier in this
		// input: the store does not tell them apart.
		fmt.Fprintf(w, "database %s: %d new audit events (%d already stored or repeated in the input), %d new log records (%d already stored or repeated in the input)\n",
			out.db, n.Audits, n.AuditDups, n.Logs, n.LogDups)
	}
	if audits > 0 {
		fmt.Fprintf(w, "audit events by stage and level:\n")
		keys := make([]ingest.StageLevel, 0, len(s.Events))
		for k := range s.Events {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].Stage != keys[j].Stage {
				return keys[i].Stage < keys[j].Stage
			}
			return keys[i].Level < keys[j].Level
		})
		for _, k := range keys {
			fmt.Fprintf(w, "  %-18s %-16s %d\n", k.Stage, k.Level, s.Events[k])
		}
	}
	for _, r := range slices.Sorted(maps.Keys(s.Bodies)) {
		if n := s.Bodies[r]; n[1] > 0 && n[0] == 0 {
			fmt.Fprintf(w, "warning: %s: every write is audited at Metadata level: %s (docs/CAUSALITY.md)\n", r, reconstruct.BlindReason(r))
		}
	}
	if logs > 0 {
		printPrograms(w, s.Components)
	}
	printFiles(w, s)
	if s.Redacted > 0 {
		fmt.Fprintf(w, "redacted: credentials (Secret data, tokens, private keys) removed from %d event(s) before storing\n", s.Redacted)
	}
	printNotices(w, s.Notices)
	for _, em := range s.Empty {
		fmt.Fprintf(w, "warning: %s: nothing read (%s)\n", present.Printable(em.Input), emptyReason(em))
	}
	printBadLines(w, s)
	for _, err := range s.ReadErrors {
		fmt.Fprintf(w, "unreadable: %s\n", present.Printable(err.Error()))
	}
}

// printPrograms counts the log records by the program that wrote them,
// most first, each with its components that wrote most (a logger, or the
// caller's source file).
func printPrograms(w io.Writer, by map[ingest.Origin]int) {
	type program struct {
		name  string
		n     int
		comps map[string]int
	}
	progs := map[string]*program{}
	for o, n := range by {
		p := progs[o.Program]
		if p == nil {
			p = &program{name: o.Program, comps: map[string]int{}}
			progs[o.Program] = p
		}
		p.n += n
		p.comps[sourceFile(o.Component)] += n
	}
	list := slices.SortedFunc(maps.Values(progs), func(a, b *program) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.name, b.name)
	})
	fmt.Fprintf(w, "log records by program (and the components most came from):\n")
	const top, detail = 15, 3
	for i, p := range list {
		if i == top {
			fmt.Fprintf(w, "  ... and %d more programs\n", len(list)-top)
			break
		}
		comps := slices.SortedFunc(maps.Keys(p.comps), func(a, b string) int {
			if p.comps[a] != p.comps[b] {
				return p.comps[b] - p.comps[a]
			}
			return strings.Compare(a, b)
		})
		var parts []string
		for j, c := range comps {
			if j == detail {
				parts = append(parts, fmt.Sprintf("%d more", len(comps)-detail))
				break
			}
			parts = append(parts, fmt.Sprintf("%s %d", present.Printable(c), p.comps[c]))
		}
		name := p.name
		if name == "" {
			name = "(program unknown)"
		}
		fmt.Fprintf(w, "  %-28s %7d  %s\n", present.Printable(name), p.n, strings.Join(parts, ", "))
	}
}

// sourceFile shortens a component that is a source file's whole path
// (slog's source.file: /root/go/pkg/mod/sigs.k8s.io/kwok@v0.8.0/pkg/kwok/
// controllers/pod_controller.go) to its directory and name, as klog's
// caller has it (controllers/pod_controller.go); a logger's name is kept.
func sourceFile(c string) string {
	if strings.Count(c, "/") < 2 || !strings.HasSuffix(c, ".go") {
		return c
	}
	dir, file := path.Split(c)
	return path.Base(dir) + "/" + file
}

// printNotices lists what was skipped, up to a screenful.
func printNotices(w io.Writer, ns []ingest.Notice) {
	const top = 20
	notLogs := 0
	for i, n := range ns {
		if n.NotLog {
			notLogs++
		}
		if i < top {
			fmt.Fprintf(w, "skipped: %s\n", present.Printable(n.String()))
		}
	}
	if len(ns) > top {
		fmt.Fprintf(w, "skipped: ... and %d more\n", len(ns)-top)
	}
	if notLogs > 0 {
		what := "1 file found beside the logs is not a log"
		if notLogs > 1 {
			what = fmt.Sprintf("%d files found beside the logs are not logs", notLogs)
		}
		fmt.Fprintf(w, "skipped: %s (a file given as a PATH is read whatever it holds)\n", what)
	}
}

// nothingRead reports a run of which no input held a record or a bad line.
func nothingRead(s *ingest.Summary) bool {
	for _, f := range s.Files {
		if f.Audits+f.Logs+f.Bad > 0 {
			return false
		}
	}
	return true
}

// emptyReason says why nothing was read of an input.
func emptyReason(em ingest.Empty) string {
	switch {
	case em.Skipped > 0 && em.Files > 0:
		return present.Plural(em.Skipped, "file") + " skipped, not logs; the rest empty"
	case em.Skipped > 0:
		return present.Plural(em.Skipped, "file") + " skipped, not logs"
	case em.Files == 0:
		return "an empty directory"
	case em.Files == 1:
		return "empty"
	}
	return present.Plural(em.Files, "file") + ", all empty"
}

// printBadLines reports the bad lines (skipped): with the summary, or
// alone with --quiet, since a bad line never disappears silently.
func printBadLines(w io.Writer, s *ingest.Summary) {
	if s.Bad == 0 {
		return
	}
	if n := s.Written; n.Audits+n.AuditDups+n.Logs+n.LogDups > 0 {
		fmt.Fprintf(w, "bad lines: %d (skipped, the rest was stored)\n", s.Bad)
	} else {
		fmt.Fprintf(w, "bad lines: %d (skipped; no other record was read)\n", s.Bad)
	}
	for _, b := range s.BadLines {
		fmt.Fprintf(w, "  %s\n", present.Printable(b.Error()))
	}
	shown := 0
	for _, b := range s.BadLines {
		shown += max(b.Count, 1)
	}
	if s.Bad > shown {
		fmt.Fprintf(w, "  ... and %d more\n", s.Bad-shown)
	}
}

// printFiles lists each file's formats and counts, then the data-quality
// warnings of the formats found.
func printFiles(w io.Writer, s *ingest.Summary) {
	if len(s.Files) == 0 {
		return
	}
	const top = 30
	fmt.Fprintf(w, "files (format, lines, records, bad):\n")
	var all ingest.Format
	for i, f := range s.Files {
		all |= f.Format
		if i == top {
			fmt.Fprintf(w, "  ... and %d more files\n", len(s.Files)-top)
		}
		if i >= top {
			continue
		}
		fmt.Fprintf(w, "  %-40s %7d %7d %5d  %s\n", f.Format, f.Lines, f.Audits+f.Logs, f.Bad, present.Printable(f.Name))
	}
	for _, l := range all.Losses() {
		fmt.Fprintf(w, "warning: %s\n", l)
	}
}
