// Package stamp gives the objects of Kubernetes manifests their root
// CPIDs before they are applied: the paper's "kubectl --trace", as
// cpid-tui stamp runs it (cpid-tui stamp -f app.yaml | kubectl apply -f -).
// It reads YAML (several documents) or JSON (a stream of documents), v1
// List objects too, and writes them back in the format they came in.
//
// It is a package of its own, beside instrument, because it reads YAML
// (sigs.k8s.io/yaml): instrument itself stays on the standard library and
// k8s.io/apimachinery.
package stamp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/cpid-dev/cpid/instrument"
)

// Manifests are the documents of a manifest file, parsed and checked.
type Manifests struct {
	docs []manifest
	// JSON says the file was JSON: Marshal writes JSON, else YAML.
	JSON bool
}

// Parse splits data into documents (YAML, or JSON when it starts with {
// or [) and checks that each is an object stamp can name. Every bad
// document is an error with its number and first line in the file; empty
// documents are skipped but counted, as a reader counting "---" expects.
func Parse(data []byte) (*Manifests, []error) {
	docs, isJSON, bad := parseManifests(data)
	return &Manifests{docs: docs, JSON: isJSON}, bad
}

// Objects returns the objects the documents hold: each document, or the
// items of a List, in order. Stamp changes them in place.
func (m *Manifests) Objects() []map[string]any {
	var out []map[string]any
	for _, d := range m.docs {
		out = append(out, d.objects()...)
	}
	return out
}

// Options say how Stamp stamps an object.
type Options struct {
	// Merge merges the fresh root with the trace context the object
	// already carries (an update of what kubectl get -o yaml printed), as
	// the paper's kubectl did for updates: the object's new CPID lists its
	// previous one among its ancestors.
	Merge bool
	// Traceparent is the W3C trace context of the client's span, written
	// in instrument.KeyTraceparent; without one, a traceparent the object
	// carries is removed: it belongs to the change that wrote it before.
	Traceparent instrument.Traceparent
}

// Stamped is one object stamped: its new CPID, its kind and where it is
// (namespace/name, or namespace/generateName* for a name to be generated).
type Stamped struct {
	CPID, Kind, Where string
}

// Stamp gives obj a fresh root CPID from t in its instrument.KeyCPID
// annotation (or, with Options.Merge, the merge of that root with the
// context obj carries), sets or removes its instrument.KeyAncestors and
// instrument.KeyTraceparent, and says what it stamped. t writes the root
// and merge mergelogs to its Emitter.
func Stamp(t *instrument.Tracer, obj map[string]any, opt Options) Stamped {
	meta, _ := obj["metadata"].(map[string]any)
	ref := instrument.ObjectRef{
		APIVersion: str(obj, "apiVersion"), Kind: str(obj, "kind"),
		Namespace: str(meta, "namespace"), Name: str(meta, "name"),
	}
	c := t.Root(ref)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	if opt.Merge {
		prev, _ := ann[instrument.KeyCPID].(string)
		anc, _ := ann[instrument.KeyAncestors].(string)
		if old, err := instrument.Parse(prev, anc); err == nil && !old.IsZero() {
			c = t.Merge(ref, c, old)
		}
	}
	id, ancestors := c.Format()
	ann[instrument.KeyCPID] = id
	if ancestors != "" {
		ann[instrument.KeyAncestors] = ancestors
	} else {
		delete(ann, instrument.KeyAncestors)
	}
	if !opt.Traceparent.IsZero() {
		ann[instrument.KeyTraceparent] = opt.Traceparent.String()
	} else {
		// The span that wrote the object last is not this change's
		// parent: a stale trace context goes as stale ancestors do.
		delete(ann, instrument.KeyTraceparent)
	}
	where := ref.Name
	if where == "" {
		where = str(meta, "generateName") + "*"
	}
	if ref.Namespace != "" {
		where = ref.Namespace + "/" + where
	}
	return Stamped{CPID: id, Kind: ref.Kind, Where: where}
}

// Marshal writes the documents back as they came: JSON documents indented
// one after the other, or YAML documents separated by "---" (comments are
// not kept, keys are sorted).
func (m *Manifests) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	for i, d := range m.docs {
		if m.JSON {
			b, err := json.MarshalIndent(d.obj, "", "  ")
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", d.index, err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
			continue
		}
		b, err := yaml.Marshal(d.obj)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", d.index, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// manifest is one document of a manifest file.
type manifest struct {
	index int // 1-based, counting every document of the file
	line  int // where the document starts
	obj   map[string]any
}

// objects returns the objects of m: itself, or the items of a List.
func (m manifest) objects() []map[string]any {
	if items, ok := m.obj["items"].([]any); ok && strings.HasSuffix(str(m.obj, "kind"), "List") {
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

// parseJSONManifests reads a stream of JSON documents.
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
	if items, ok := obj["items"].([]any); ok && strings.HasSuffix(str(obj, "kind"), "List") {
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
		if str(obj, k) == "" {
			return fmt.Errorf("no %s", k)
		}
	}
	if strings.HasSuffix(str(obj, "kind"), "List") {
		if _, ok := obj["items"].([]any); ok {
			return nil
		}
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return errors.New("no metadata")
	}
	if str(meta, "name") == "" && str(meta, "generateName") == "" {
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

// str is m[k] as a string, "" when it is none.
func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// yamlDoc is one document of a YAML stream and its first line.
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

// yamlLine finds the line number in a YAML error.
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
