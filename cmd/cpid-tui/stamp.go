package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid/instrument"
	"github.com/cpid-dev/cpid/instrument/stamp"
)

func init() {
	register(command{name: "stamp", use: "-f FILE|- [--log FILE] [--service NAME] [--merge [--max-ancestors N]] [--traceparent TP]", group: "other",
		summary: "give each object of a manifest a root CPID, for kubectl apply", help: stampHelp, setup: setupStamp})
}

const stampHelp = `
Reads manifests (YAML or JSON, several documents, v1 List objects too), gives
each object a fresh root CPID in its v1.cpid.dev/cpid annotation (removing any
stale v1.cpid.dev/ancestors), prints the manifests to standard output and
"CPID<TAB>KIND NAMESPACE/NAME" for each object to standard error, and appends
the root mergelogs to the --log file. This is the paper's "kubectl --trace":

  cpid-tui stamp -f app.yaml --log cpid.log | kubectl apply -f -

With --merge, an object that already carries a trace context (an update of
what 'kubectl get -o yaml' printed) gets the merge of the fresh root with
that context instead, as the paper's kubectl did for updates: the object's
new CPID then lists its previous one among its ancestors (at most
--max-ancestors), so controllers can reuse it instead of merging again. The
root and the merge mergelogs both go to --log.

Run from a traced client (a CI job, a GitOps controller), stamp also writes
the client's W3C trace context into tracing.k8s.io/traceparent (the
annotation KEP-5915 proposes): --traceparent, or else the TRACEPARENT
environment variable as OpenTelemetry's environment carrier sets it. The
change then keeps that trace id: query changes shows it and exports put
the change's spans in that trace, under the client's span. Without one, a
traceparent the object already carries is removed: it belongs to the
change that wrote the object before.

  TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 \
    cpid-tui stamp -f app.yaml | kubectl apply -f -

YAML comes out as YAML (comments are not kept, keys are sorted), JSON as JSON.
If any document is bad, each bad one is reported with its number and line,
and nothing is written. -q leaves out the CPID lines.`

func setupStamp(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	file := fs.StringP("filename", "f", "", "manifest file, or - for standard input")
	logPath := fs.String("log", "", "append the root mergelogs to this file (JSON lines, created if missing)")
	service := fs.String("service", "cpid-tui", "service name written in the mergelogs")
	merge := fs.Bool("merge", false, "merge the fresh root with the context the object already carries")
	maxAnc := fs.Int("max-ancestors", instrument.DefaultMaxAncestors, "with --merge: N, the most ancestor CPIDs kept")
	traceFlag := fs.String("traceparent", "", "W3C traceparent of the client's span to write in "+instrument.KeyTraceparent+" (default $TRACEPARENT)")
	c.MarkFlagFilename("filename", "yaml", "yml", "json")
	return func(ctx context.Context, rest []string) error {
		if *file == "" || len(rest) > 0 {
			return usagef("want -f FILE or -f -, and no other argument")
		}
		trace, err := stampTrace(*traceFlag)
		if err != nil {
			return usagef("%v", err)
		}

		var data []byte
		if *file == "-" {
			data, err = io.ReadAll(e.stdin)
		} else {
			data, err = os.ReadFile(*file)
		}
		if err != nil {
			return fmt.Errorf("read manifests: %w", err)
		}
		name := *file
		if name == "-" {
			name = "<stdin>"
		}
		m, bad := stamp.Parse(data)
		if len(bad) > 0 {
			for _, b := range bad {
				fmt.Fprintf(e.stderr, "%s stamp: %s: %v\n", e.prog, name, b)
			}
			return fmt.Errorf("%s: %d bad document(s), nothing written", name, len(bad))
		}
		objects := m.Objects()
		if len(objects) == 0 {
			return fmt.Errorf("%s: no object to stamp", name)
		}
		var out *instrument.Emitter
		if *logPath != "" {
			f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				return fmt.Errorf("open mergelog file: %w", err)
			}
			defer f.Close()
			out = instrument.NewEmitter(f, 2*len(objects)+1)
		}
		tracer := instrument.New(*service, out, instrument.WithMaxAncestors(*maxAnc))
		for _, obj := range objects {
			s := stamp.Stamp(tracer, obj, stamp.Options{Merge: *merge, Traceparent: trace})
			fmt.Fprintf(e.notices(), "%s\t%s %s\n", s.CPID, s.Kind, s.Where)
		}
		if err := out.Flush(); err != nil {
			return fmt.Errorf("append mergelogs to %s: %w", *logPath, err)
		}
		b, err := m.Marshal()
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(b)
		return err
	}
}

// stampTrace returns the traceparent stamp writes: flag's, else the
// TRACEPARENT environment variable's, else none.
func stampTrace(flag string) (instrument.Traceparent, error) {
	v, from := flag, "--traceparent"
	if v == "" {
		v, from = os.Getenv("TRACEPARENT"), "TRACEPARENT"
	}
	if v == "" {
		return instrument.Traceparent{}, nil
	}
	tp, err := instrument.ParseTraceparent(strings.TrimSpace(v))
	if err != nil {
		return tp, fmt.Errorf("%s %q: %w", from, v, err)
	}
	return tp, nil
}
