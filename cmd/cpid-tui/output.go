package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/cpid-dev/cpid/cmd/cpid-tui/tui"
)

// output writes data as a table for people, JSON or CSV for scripts. rows
// are the cells of the table and CSV; v is what JSON encodes.
//
// The cells come from the logs, so they may hold terminal escape
// sequences: a table shows them tui.Printable (sequences and control
// characters removed); CSV writes control characters other than tab and
// newline escaped (csvText); JSON escapes them as encoding/json does
// (\u001b) and is the exact data (docs/SECURITY.md).
func output(w io.Writer, format string, header []string, rows [][]string, v any) error {
	switch format {
	case "", "table":
		tw := newTable(w)
		tableRow(tw, header)
		for _, r := range rows {
			tableRow(tw, r)
		}
		return tw.Flush()
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(header)
		for _, r := range rows {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = csvText(c)
			}
			cw.Write(cells)
		}
		cw.Flush()
		return cw.Error()
	}
	return fmt.Errorf("unknown --output %q (table, json, csv)", format)
}

// newTable is the aligned table of the table output format.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// tableRow writes one row of a table, each cell without control
// characters or escape sequences (tui.Printable).
func tableRow(tw io.Writer, cells []string) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(tw, "\t")
		}
		io.WriteString(tw, tui.Printable(c))
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

// clock formats a Unix-ns time for a table.
func clock(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000")
}

// dur formats a duration in ns for a table.
func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	}
	return d.Round(10 * time.Millisecond).String()
}

// object formats kind namespace/name.
func object(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}
