package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid/instrument"
	"sigs.k8s.io/yaml"
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
		docs, isJSON, bad := parseManifests(data)
		if len(bad) > 0 {
			for _, b := range bad {
				fmt.Fprintf(e.stderr, "%s stamp: %s: %v\n", e.prog, name, b)
			}
			return fmt.Errorf("%s: %d bad document(s), nothing written", name, len(bad))
		}

		var objects []map[string]any
		for _, d := range docs {
			objects = append(objects, d.objects()...)
		}
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
			meta, _ := obj["metadata"].(map[string]any)
			ref := instrument.ObjectRef{
				APIVersion: stampStr(obj, "apiVersion"), Kind: stampStr(obj, "kind"),
				Namespace: stampStr(meta, "namespace"), Name: stampStr(meta, "name"),
			}
			c := tracer.Root(ref)
			ann, _ := meta["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
				meta["annotations"] = ann
			}
			if *merge {
				prev, _ := ann[instrument.KeyCPID].(string)
				anc, _ := ann[instrument.KeyAncestors].(string)
				if old, err := instrument.Parse(prev, anc); err == nil && !old.IsZero() {
					c = tracer.Merge(ref, c, old)
				}
			}
			cpid, ancestors := c.Format()
			ann[instrument.KeyCPID] = cpid
			if ancestors != "" {
				ann[instrument.KeyAncestors] = ancestors
			} else {
				delete(ann, instrument.KeyAncestors)
			}
			if !trace.IsZero() {
				ann[instrument.KeyTraceparent] = trace.String()
			} else {
				// The span that wrote the object last is not this change's
				// parent: a stale trace context goes as stale ancestors do.
				delete(ann, instrument.KeyTraceparent)
			}

			where := ref.Name
			if where == "" {
				where = stampStr(meta, "generateName") + "*"
			}
			if ref.Namespace != "" {
				where = ref.Namespace + "/" + where
			}
			fmt.Fprintf(e.notices(), "%s\t%s %s\n", cpid, ref.Kind, where)
		}
		if err := out.Flush(); err != nil {
			return fmt.Errorf("append mergelogs to %s: %w", *logPath, err)
		}

		var buf bytes.Buffer
		for i, d := range docs {
			if isJSON {
				b, err := json.MarshalIndent(d.obj, "", "  ")
				if err != nil {
					return fmt.Errorf("document %d: %w", d.index, err)
				}
				buf.Write(b)
				buf.WriteByte('\n')
				continue
			}
			b, err := yaml.Marshal(d.obj)
			if err != nil {
				return fmt.Errorf("document %d: %w", d.index, err)
			}
			if i > 0 {
				buf.WriteString("---\n")
			}
			buf.Write(b)
		}
		_, err = e.stdout.Write(buf.Bytes())
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

// manifest is one document of a manifest file.
type manifest struct {
	index int // 1-based, counting every document of the file
	line  int // where the document starts
	obj   map[string]any
}

// objects returns the objects of m: itself, or the items of a List.
func (m manifest) objects() []map[string]any {
	if items, ok := m.obj["items"].([]any); ok && strings.HasSuffix(stampStr(m.obj, "kind"), "List") {
		out := make([]map[string]any, 0, len(items))
		for _, it := range items {
			out = append(out, it.(map[string]any)) // checked by checkObject
		}
		return out
	}
	return []map[string]any{m.obj}
}

// manifestError is a bad document: its number and first line in the file.
type manifestError struct {
	index, line int
	err         error
}

func (e *manifestError) Error() string {
	return fmt.Sprintf("document %d (line %d): %v", e.index, e.line, e.err)
}

// parseManifests splits data into documents and checks each. Empty
// documents are skipped but counted, as a reader counting "---" expects.
func parseManifests(data []byte) (docs []manifest, isJSON bool, bad []error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return parseJSONManifests(data)
	}
	for i, d := range splitYAML(data) {
		m := manifest{index: i + 1, line: d.line}
		j, err := yaml.YAMLToJSON(d.text)
		if err == nil {
			m.obj, err = decodeObject(j)
		}
		if err != nil {
			bad = append(bad, &manifestError{m.index, m.line, absoluteYAMLLine(err, d.line)})
			continue
		}
		if m.obj != nil {
			docs = append(docs, m)
		}
	}
	return docs, false, bad
}

func parseJSONManifests(data []byte) (docs []manifest, isJSON bool, bad []error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for i := 1; ; i++ {
		start := int(dec.InputOffset())
		for start < len(data) && strings.IndexByte(" \t\r\n", data[start]) >= 0 {
			start++
		}
		m := manifest{index: i, line: 1 + bytes.Count(data[:start], []byte("\n"))}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return docs, true, bad
		} else if err != nil {
			// The rest of the stream cannot be framed: stop here.
			return docs, true, append(bad, &manifestError{m.index, m.line, err})
		}
		obj, err := decodeObject(raw)
		if err == nil && obj == nil {
			err = errors.New("null is not an object")
		}
		if err != nil {
			bad = append(bad, &manifestError{m.index, m.line, err})
			continue
		}
		m.obj = obj
		docs = append(docs, m)
	}
}

// decodeObject decodes one document's JSON, keeping numbers exact, and
// checks it is an object stamp can name. A null document gives nil.
func decodeObject(j []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s, not an object", jsonKind(v))
	}
	if err := checkObject(obj); err != nil {
		return nil, err
	}
	if items, ok := obj["items"].([]any); ok && strings.HasSuffix(stampStr(obj, "kind"), "List") {
		for i, it := range items {
			o, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("items[%d]: not an object", i)
			}
			if err := checkObject(o); err != nil {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
		}
	}
	return obj, nil
}

// checkObject checks that obj has what a write needs and stamp uses.
func checkObject(obj map[string]any) error {
	for _, k := range []string{"apiVersion", "kind"} {
		if stampStr(obj, k) == "" {
			return fmt.Errorf("no %s", k)
		}
	}
	if strings.HasSuffix(stampStr(obj, "kind"), "List") {
		if _, ok := obj["items"].([]any); ok {
			return nil
		}
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return errors.New("no metadata")
	}
	if stampStr(meta, "name") == "" && stampStr(meta, "generateName") == "" {
		return errors.New("no metadata.name")
	}
	if a, ok := meta["annotations"]; ok && a != nil {
		if _, ok := a.(map[string]any); !ok {
			return errors.New("metadata.annotations is not a map")
		}
	}
	return nil
}

// jsonKind names the JSON type of a decoded value that is not an object.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("a %T", v)
}

func stampStr(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

type yamlDoc struct {
	line int
	text []byte
}

// yamlSeparator matches a document marker line: "---" (maybe followed by
// a comment or content) or the end marker "...".
var yamlSeparator = regexp.MustCompile(`^(---([ \t].*)?|\.\.\.[ \t]*)$`)

// splitYAML splits a YAML stream into documents, each with its first line.
func splitYAML(data []byte) []yamlDoc {
	var docs []yamlDoc
	cur := yamlDoc{line: 1}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, l := range lines {
		if yamlSeparator.Match(bytes.TrimRight(l, "\r\n")) {
			if i > 0 || len(cur.text) > 0 {
				docs = append(docs, cur)
			}
			cur = yamlDoc{line: i + 2}
			continue
		}
		cur.text = append(cur.text, l...)
	}
	if len(bytes.TrimSpace(cur.text)) > 0 || len(docs) == 0 {
		docs = append(docs, cur)
	}
	return docs
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// absoluteYAMLLine rewrites the "line N" of a YAML error, counted from the
// start of the document, into a line of the file.
func absoluteYAMLLine(err error, start int) error {
	msg := yamlLine.ReplaceAllStringFunc(err.Error(), func(s string) string {
		n, _ := strconv.Atoi(s[len("line "):])
		return "line " + strconv.Itoa(n+start-1)
	})
	return errors.New(msg)
}
