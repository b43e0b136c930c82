package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/export"
	"github.com/cpid-dev/cpid/present"
)

func init() {
	register(command{name: "export", use: "[ID...|--all|FILTERS] [--format otlp|jaeger|perfetto] [-o FILE] [--otlp-endpoint URL]", group: "read",
		summary: "write changes as traces: OTLP (or push to a collector, Tempo, Jaeger), Jaeger JSON, Perfetto", help: exportHelp, setup: setupExport})
}

const exportHelp = `Writes changes as traces that trace viewers open, one trace per change.
Every write of a change is a span, from the apiserver receiving the request
to its completion, in its writer's name (the service); a span's parent is
the write that caused it, and a write that merged CPIDs links to the writes
carrying the other sources of the merge: parents and links are the merge
DAG of 'cpid-tui query related'. Controller spans that instrumented
controllers logged are spans too. Attributes follow OpenTelemetry's semantic
conventions where one fits (k8s.namespace.name, k8s.pod.name,
http.response.status_code...) and say the rest as cpid.* (cpid.trigger,
cpid.explain, cpid.origin, cpid.confidence, cpid.hop_ns...). A change a
traced client started (tracing.k8s.io/traceparent) joins that client's
trace. docs/EXPORT.md maps every field.

Formats (--format):
  otlp      OpenTelemetry's OTLP file format: one TracesData JSON a line,
            a trace a line. Open it with otel-tui
            (otel-tui --from-json-file FILE), or feed it to a collector's
            otlpjsonfile receiver; Grafana Tempo and Jaeger take the same
            data pushed (--otlp-endpoint).
  jaeger    the Jaeger UI's JSON: Search, "Upload" (JSON File), pick it.
  perfetto  the Chrome JSON trace format: ui.perfetto.dev, "Open trace file"
            (or chrome://tracing). A process per change, a track per
            writer or controller, an async track per object, flow arrows
            from causes and merges.

Which changes: IDs (a unique prefix is enough), or --all, or the filters of
'query changes' (--filter TEXT, --since, --until, -n, --kind, --user,
--writer, --trigger, --min-duration), newest first, at most --limit.

--otlp-endpoint URL pushes the traces over OTLP/HTTP (protobuf, gzip) to a
collector, Tempo or Jaeger v2 (http://localhost:4318; a URL without a path
gets /v1/traces). Failed requests (429, 502, 503, 504, no answer) are sent
again with backoff, as the receiver's Retry-After asks, up to
--otlp-attempts times. Without -o it only pushes.

Here -o/--output is the file to write, not a listing's format (the
format is --format).

Examples:
  cpid-tui export --all --format perfetto -o changes.json
  cpid-tui export 4a01429c --format jaeger -o web.json
  cpid-tui export --filter default/web --otlp-endpoint http://localhost:4318
  cpid-tui export --since 1h --min-duration 10s --format perfetto -o slow.json
  cpid-tui export --all -o changes.jsonl && otel-tui --from-json-file changes.jsonl`

func setupExport(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	format := new(string)
	choiceVar(fs, format, "format", "otlp", "otlp, jaeger or perfetto", exportFormats...)
	out := fs.StringP("output", "o", "", "write to this file; - is standard output (the default unless --otlp-endpoint is given)")
	all := fs.Bool("all", false, "every change")
	filter := fs.String("filter", "", "the changes whose namespace, name, kind, user or id contains this, or with a write whose object name, writer or verb does or whose HTTP code it is (as query changes)")
	limit := fs.Int("limit", 0, "at most this many changes, newest first (0: all)")
	var f filters
	f.addTime(fs, "keep the changes started")
	f.addNamespace(fs, "keep the changes started on an object of this namespace")
	fs.StringVar(&f.kind, "kind", "", "keep the changes started on an object of this type (deploy, deployments.apps, pod)")
	f.addWho(fs, "keep the changes whose user name contains this (case-insensitive)",
		"keep the changes with a write by a writer whose name contains this (kube-scheduler)",
		"keep the changes started by")
	fs.DurationVar(&f.minDuration, "min-duration", 0, "keep the changes that took at least this long, started to last write")
	newPusher := otlpFlags(fs)
	f.complete(c, e)
	c.ValidArgsFunction = argChanges(e, -1)
	return func(ctx context.Context, ids []string) error {
		usage := func(msg string) error { return usagef("%s", msg) }
		filtered := *filter != "" || f != (filters{})
		switch {
		case len(ids) == 0 && !*all && !filtered:
			return usage("give change IDs, --all, or filters (--filter TEXT, --since...)")
		case len(ids) > 0 && (*all || filtered):
			return usage("give change IDs, or --all or filters, not both")
		case *limit < 0:
			return usage(fmt.Sprintf("--limit %d: give 0 (all) or more", *limit))
		}
		if err := fileNotFormat(*out, "--format otlp, jaeger or perfetto (each writes JSON)"); err != nil {
			return err
		}
		write := writers[*format] // one of exportFormats (a choice)
		pusher, err := newPusher(func(format string, a ...any) { fmt.Fprintf(e.stderr, format+"\n", a...) })
		if err != nil {
			return usage(err.Error())
		}
		if *out == "" && pusher == nil {
			*out = "-"
		}

		db, cluster := e.db, &e.cluster
		db0, err := e.openReader(ctx)
		if err != nil {
			return err
		}
		defer db0.close()
		st := db0.view(*cluster)
		if len(ids) > 0 {
			for i, id := range ids {
				if ids[i], err = resolveChange(ctx, st, id); err != nil {
					return err
				}
			}
		} else {
			q := cpid.ChangeQuery{Filter: *filter, Limit: *limit}
			if q.Limit == 0 {
				q.Limit = math.MaxInt // the engines take 0 for their default
			}
			if err := f.changeQuery(ctx, st, &q); err != nil {
				return usage(err.Error())
			}
			cs, err := st.Changes(ctx, q)
			if err != nil {
				return err
			}
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			if len(ids) == 0 {
				db0.hintReconstruct(ctx, e, db, *cluster)
				if filtered {
					return errors.New("no change matches the filters")
				}
				return errors.New("no changes in the database")
			}
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		set, err := export.Read(ctx, st, ids)
		if err != nil {
			return err
		}
		traces := export.Build(set)
		spans := 0
		for _, t := range traces {
			spans += len(t.Spans)
		}
		if *out != "" {
			if err := writeExport(e.stdout, *out, func(w io.Writer) error { return write(w, traces) }); err != nil {
				return err
			}
			if *out != "-" && !e.quiet {
				fmt.Fprintf(e.stderr, "export: %d changes, %d spans, %s to %s\n", len(traces), spans, *format, *out)
			}
		}
		if pusher != nil {
			n, err := pusher.Push(ctx, traces)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.notices(), "export: pushed %d traces, %d spans in %d requests to %s\n", n.Traces, n.Spans, n.Requests, pusher.Endpoint)
			if n.Rejected > 0 || n.Message != "" {
				return fmt.Errorf("the receiver rejected %d spans: %s", n.Rejected, present.Printable(n.Message))
			}
		}
		return nil
	}
}

// otlpFlags adds the flags of a push over OTLP/HTTP; the result makes the
// Pusher once the flags are parsed (nil without --otlp-endpoint), which
// tells say of each failed attempt it retries, or says what is wrong with
// them.
func otlpFlags(fs *pflag.FlagSet) func(say func(format string, a ...any)) (*export.Pusher, error) {
	endpoint := fs.String("otlp-endpoint", "", "push the traces to this OTLP/HTTP receiver (a collector, Tempo, Jaeger v2), e.g. http://localhost:4318")
	var headers paths
	fs.Var(&headers, "otlp-header", "a header of the pushes, KEY=VALUE (authentication, a tenant: X-Scope-OrgID=team); repeatable")
	attempts := fs.Int("otlp-attempts", 5, "send a failed push this many times at most")
	timeout := fs.Duration("otlp-timeout", 30*time.Second, "give up on one push request after this long")
	return func(say func(format string, a ...any)) (*export.Pusher, error) {
		if *endpoint == "" {
			if len(headers) > 0 {
				return nil, errors.New("--otlp-header needs --otlp-endpoint")
			}
			return nil, nil
		}
		if *attempts < 1 {
			return nil, fmt.Errorf("--otlp-attempts %d: give 1 or more", *attempts)
		}
		u, err := export.EndpointURL(*endpoint)
		if err != nil {
			return nil, err
		}
		h := http.Header{}
		for _, kv := range headers {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("--otlp-header %q: give KEY=VALUE", kv)
			}
			h.Add(strings.TrimSpace(k), v)
		}
		return &export.Pusher{Endpoint: u, Header: h, Attempts: *attempts, Timeout: *timeout,
			Retried: func(attempt int, wait time.Duration, err error) {
				say("otlp: attempt %d failed (%s); again in %s", attempt, present.Printable(err.Error()), wait)
			}}, nil
	}
}

// exportFormats are the values of --format, each a writer.
var exportFormats = []string{"otlp", "jaeger", "perfetto"}

// writers are the export formats.
var writers = map[string]func(io.Writer, []export.Trace) error{
	"otlp":     export.WriteOTLP,
	"jaeger":   export.WriteJaeger,
	"perfetto": export.WritePerfetto,
}

// writeExport writes to path ("-": stdout) through fn; a file is written
// whole or not at all (a temporary file renamed into place).
func writeExport(stdout io.Writer, path string, fn func(io.Writer) error) error {
	if path == "-" {
		return fn(stdout)
	}
	return writeFile(path, fn)
}
