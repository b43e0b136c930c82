package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"sigs.k8s.io/yaml"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// The -o values of the listings: those with ids to print one a line, and
// those without.
var (
	listFormats = []string{"table", "wide", "json", "yaml", "csv", "name"}
	dataFormats = []string{"table", "wide", "json", "yaml", "csv"}
)

// minIDLength is the fewest characters of an id -o table shows (idLength
// shows more when the database needs them).
const minIDLength = present.MinIDLength

// listing is what a command prints, in every format: a table for people,
// the data for scripts, the ids.
//
// The cells come from the logs, so they may hold terminal escape
// sequences: a table shows them present.Printable (sequences and control
// characters removed); CSV writes control characters other than tab and
// newline escaped (csvText); JSON writes every control character (C0, DEL,
// C1) as a \u escape (\u001b, \u009b: cpid.EscapeJSON) and YAML
// double-quotes a string holding one, escaped (\e, \x9B): both are the
// exact data (docs/SECURITY.md).
type listing struct {
	// head and rows are the table, each cell in full (-o wide).
	head []string
	rows [][]string
	// short are the columns of ids that -o table cuts to their first
	// idLen characters (every command takes a unique prefix of an id).
	short []int
	// idLen is how much of an id the short columns show: the shortest
	// prefix unique in the database (idLength); 0 is minIDLength.
	idLen int
	// text are the columns of free text (details, causes): the only ones
	// whose long cells -o table cuts, in the middle (…), when the table is
	// wider than the terminal. Names, object keys, ids, triggers and
	// reasons are never cut.
	text []int
	// wideOnly are the columns only -o wide shows.
	wideOnly []int
	// data is what json and yaml print, and csv when rows is nil.
	data any
	// csv is the slice whose elements are the CSV rows, when not data
	// (a report whose rows are one member of it).
	csv any
	// names are what -o name prints, one a line.
	names []string
}

// layout is how a listing is laid out, past its format: with its header
// line or not, and the terminal's width that -o table fits in (0: no
// limit).
type layout struct {
	noHeaders bool
	width     int
}

// layout is the command's layout: --no-headers and the width of stdout
// (tableWidth).
func (e *env) layout() layout { return layout{noHeaders: e.noHeaders, width: e.tableWidth()} }

// tableWidth is how many columns -o table fits in, as kubectl: the
// terminal's width when stdout is a terminal (else $COLUMNS, when the
// terminal's size cannot be read), 0 (no limit) when stdout is a file or a
// pipe, so that what scripts read is never cut.
func (e *env) tableWidth() int {
	if e.columns != 0 {
		return e.columns
	}
	f, ok := e.stdout.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
		return w
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// print writes l in the command's -o format.
func (e *env) print(c *cobra.Command, l listing) error {
	return l.write(e.stdout, e.format(c), e.layout())
}

func (l listing) write(w io.Writer, format string, lay layout) error {
	switch format {
	case "", "table", "wide":
		return writeTable(w, l, format == "wide", lay)
	case "json":
		b, err := jsonOut(l.data)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "yaml":
		b, err := jsonOut(l.data)
		if err != nil {
			return err
		}
		y, err := yaml.JSONToYAML(b)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	case "csv":
		rows := l.csv
		if rows == nil {
			rows = l.data
		}
		return writeCSV(w, rows, lay.noHeaders)
	case "name":
		for _, n := range l.names {
			fmt.Fprintln(w, present.Printable(n))
		}
		return nil
	}
	return fmt.Errorf("unknown output format %q", format)
}

// writeTable writes the table: -o table fitted to lay.width, cutting
// only its free text, and its ids cut to a unique prefix; -o wide every
// column in full. The header line is all --no-headers changes.
func writeTable(w io.Writer, l listing, wide bool, lay layout) error {
	var cols []int // the columns shown
	for j := range l.head {
		if wide || !slices.Contains(l.wideOnly, j) {
			cols = append(cols, j)
		}
	}
	idLen := l.idLen
	if idLen == 0 {
		idLen = minIDLength
	}
	cell := func(r []string, j int) string {
		if j >= len(r) {
			return ""
		}
		c := present.Printable(r[j])
		if !wide && slices.Contains(l.short, j) && utf8.RuneCountInString(c) > idLen {
			c = string([]rune(c)[:idLen])
		}
		return c
	}
	head := make([]string, len(cols))
	var text []int
	for i, j := range cols {
		head[i] = present.Printable(l.head[j])
		if slices.Contains(l.text, j) {
			text = append(text, i)
		}
	}
	cells := make([][]string, len(l.rows))
	for k, r := range l.rows {
		cells[k] = make([]string, len(cols))
		for i, j := range cols {
			cells[k][i] = cell(r, j)
		}
	}
	if !wide && lay.width > 0 {
		fitColumns(head, cells, text, lay.width)
	}
	// The header is laid out with the rows, printed or not, so that
	// --no-headers changes nothing else.
	var b bytes.Buffer
	tw := newTable(&b)
	tableRow(tw, head)
	for _, r := range cells {
		tableRow(tw, r)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	out := b.Bytes()
	if lay.noHeaders {
		_, out, _ = bytes.Cut(out, []byte("\n"))
	}
	_, err := w.Write(out)
	return err
}

// fitColumns cuts the cells of the text columns in the middle until the
// table, its header included whether it is printed or not (columns two
// spaces apart), fits in width: widest column first, none narrower than
// its title or 12. A table that would not fit even then is left whole, to
// wrap as kubectl's do: cutting would lose text and save no line.
func fitColumns(head []string, cells [][]string, text []int, width int) {
	if len(text) == 0 {
		return
	}
	widths := make([]int, len(head))
	for j, c := range head {
		widths[j] = utf8.RuneCountInString(c)
	}
	for _, r := range cells {
		for j, c := range r {
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	total := 2 * (len(head) - 1)
	for _, x := range widths {
		total += x
	}
	floor := func(j int) int { return max(12, utf8.RuneCountInString(head[j])) }
	least := total
	for _, j := range text {
		least -= widths[j] - min(widths[j], floor(j))
	}
	if least > width {
		return
	}
	for total > width {
		best := -1
		for _, j := range text {
			if widths[j] > floor(j) && (best < 0 || widths[j] > widths[best]) {
				best = j
			}
		}
		if best < 0 {
			break
		}
		widths[best]--
		total--
	}
	for _, r := range cells {
		for _, j := range text {
			r[j] = elideMiddle(r[j], widths[j])
		}
	}
}

// elideMiddle cuts s to w runes by replacing its middle with "…".
func elideMiddle(s string, w int) string {
	rs := []rune(s)
	if len(rs) <= w || w < 3 {
		return s
	}
	head := (w - 1 + 1) / 2
	tail := w - 1 - head
	return string(rs[:head]) + "…" + string(rs[len(rs)-tail:])
}

// prepend adds a first column to the table (the indexes of the others
// move by one).
func (l listing) prepend(title string, cell func(row int) string) listing {
	l.head = append([]string{title}, l.head...)
	rows := make([][]string, len(l.rows))
	for i, r := range l.rows {
		rows[i] = append([]string{cell(i)}, r...)
	}
	l.rows = rows
	for _, p := range []*[]int{&l.short, &l.text, &l.wideOnly} {
		moved := make([]int, len(*p))
		for i, j := range *p {
			moved[i] = j + 1
		}
		*p = moved
	}
	return l
}

// timeKeys are the JSON members that hold a point in time in Unix ns,
// each with the member json and yaml add beside it as RFC 3339 (UTC,
// null for 0). Durations (hop_ns, p50_ns...) are not times.
var timeKeys = map[string]string{
	"ns":           "time",
	"at_ns":        "at_time",
	"cause_ns":     "cause_time",
	"committed_ns": "committed_time",
	"end_ns":       "end_time",
	"first_ns":     "first_time",
	"last_ns":      "last_time",
	"received_ns":  "received_time",
	"settled_ns":   "settled_time",
	"start_ns":     "start_time",
	"started_ns":   "started_time",
}

// rfc3339 is a Unix-ns time as json, yaml and csv write it.
func rfc3339(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// jsonOut is v as indented JSON with a *_time member after each time
// member (timeKeys), the order of the members kept, control characters
// escaped (cpid.EscapeJSON). yaml is made from it: its parser refuses DEL
// and C1 raw, and its writer escapes what it reads escaped.
func jsonOut(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := withTimes(dec, &out); err != nil {
		return nil, err
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, out.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	ind.WriteByte('\n')
	return cpid.EscapeJSON(ind.Bytes()), nil
}

// withTimes copies one JSON value from dec to out, adding the time
// members.
func withTimes(dec *json.Decoder, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := withTimes(dec, out); err != nil {
					return err
				}
			}
			out.WriteByte(']')
			_, err := dec.Token()
			return err
		}
		out.WriteByte('{')
		for i := 0; dec.More(); i++ {
			if i > 0 {
				out.WriteByte(',')
			}
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			writeJSON(out, key)
			out.WriteByte(':')
			tk, isTime := timeKeys[key]
			if !isTime {
				if err := withTimes(dec, out); err != nil {
					return err
				}
				continue
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			out.Write(raw)
			out.WriteByte(',')
			writeJSON(out, tk)
			out.WriteByte(':')
			if ns, err := strconv.ParseInt(string(raw), 10, 64); err == nil && ns != 0 {
				writeJSON(out, rfc3339(ns))
			} else {
				out.WriteString("null")
			}
		}
		out.WriteByte('}')
		_, err := dec.Token()
		return err
	case string:
		writeJSON(out, t)
	case json.Number:
		out.WriteString(t.String())
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func writeJSON(out *bytes.Buffer, v any) {
	b, _ := json.Marshal(v)
	out.Write(b)
}

// writeCSV writes rows (a slice of structs) as RFC 4180 CSV: a column per
// JSON member of the element type, in its order, with the *_time columns
// of json beside the times, whatever the rows hold, so the columns of a
// listing never change; raw values (ns, counts, ids in full); a member
// that is an object or a list is written as its JSON.
func writeCSV(w io.Writer, rows any, noHeaders bool) error {
	v := reflect.ValueOf(rows)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Slice {
		return fmt.Errorf("csv: not a list: %T", rows)
	}
	cols := jsonColumns(v.Type().Elem())
	var all []string
	for _, c := range cols {
		all = append(all, c)
		if tk, ok := timeKeys[c]; ok {
			all = append(all, tk)
		}
	}
	cw := csv.NewWriter(w)
	if !noHeaders {
		cw.Write(all)
	}
	for i := 0; i < v.Len(); i++ {
		b, err := json.Marshal(v.Index(i).Interface())
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return err
		}
		cells := make([]string, 0, len(all))
		for _, c := range cols {
			cells = append(cells, csvCell(m[c]))
			if _, ok := timeKeys[c]; ok {
				t := ""
				if n, ok := m[c].(json.Number); ok {
					if ns, err := n.Int64(); err == nil && ns != 0 {
						t = rfc3339(ns)
					}
				}
				cells = append(cells, t)
			}
		}
		if err := cw.Write(cells); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvCell is one JSON value as a CSV cell.
func csvCell(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return csvText(v)
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	b, _ := json.Marshal(v)
	return csvText(string(b))
}

// jsonColumns are the JSON member names of a struct type, in order, those
// of embedded structs in their place.
func jsonColumns(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var cols []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			cols = append(cols, jsonColumns(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		cols = append(cols, name)
	}
	return cols
}

// newTable is the aligned table of the table output format.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// tableRow writes one row of a table, each cell without control
// characters or escape sequences (present.Printable).
func tableRow(tw io.Writer, cells []string) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(tw, "\t")
		}
		io.WriteString(tw, present.Printable(c))
	}
	io.WriteString(tw, "\n")
}

// csvText is a CSV cell: the value as it is (RFC 4180 quoting does the
// rest), except that control characters other than tab and newline are
// written as Go escapes, \x1b for ESC, \u009b for C1 CSI, and so are bytes
// that are not UTF-8: CSV lands on terminals too, and a spreadsheet has no
// use for them. A backslash is kept as it is, so the escape is not
// reversible; JSON is the exact data.
func csvText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clock formats a Unix-ns time for a table (present.Time).
func clock(ns int64) string { return present.Time(ns) }

// timeOfDay formats a Unix-ns time of day for a table whose rows are of
// one change, its date in the line above the table (present.Clock).
func timeOfDay(ns int64) string { return present.Clock(ns) }

// dur formats a duration in ns for a table, as the terminal UI does.
func dur(ns int64) string { return present.Duration(ns) }

// object formats kind namespace/name.
func object(kind, ns, name string) string { return cpid.ObjectName(kind, ns, name) }

// fileNotFormat refuses the -o of a command whose -o is a file (report,
// export) when it is a listing's format (-o json everywhere else): a file
// named json written in silence is not what the habit meant. A path with
// a directory (./json) is a file of that name.
func fileNotFormat(out, formatHint string) error {
	if slices.Contains(listFormats, strings.ToLower(out)) {
		return usagef("-o %s: -o is the file to write here, not a format; give %s (or ./%s to write a file of that name)", out, formatHint, out)
	}
	return nil
}
