package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid"
	"sigs.k8s.io/yaml"
)

func init() {
	register(command{name: "sql", use: "STATEMENT...|-", group: "read", summary: "run your own SQL on the database, bodies included (table, json, yaml, csv)",
		help: sqlHelp, formats: dataFormats, setup: setupSQL})
}

const sqlHelp = `Runs one SQL statement on the database, read-only, and prints its rows.
The schema is docs/SCHEMA.md; the same text works on both engines where
their dialects agree (docs/SCHEMA.md shows where they differ).

Bodies are stored compressed in blocks; the view audit_bodies reads them
as JSON text (request_object, response_object, response_status). In
SQLite it decodes them with the function cpid_body, which only cpid-tui
has: the sqlite3 shell reads every other table, but not audit_bodies. Here
it works, with SQLite's JSON functions (json_extract, ->>, json_each...).
In PostgreSQL audit_bodies is a plain view and psql reads it too.

One statement, that reads: it starts with SELECT, WITH, VALUES, TABLE,
EXPLAIN, SHOW (PostgreSQL) or PRAGMA (SQLite, the pragmas that report). A
second statement after a semicolon, transaction control (BEGIN, COMMIT,
SET), COPY, ATTACH, VACUUM and PostgreSQL's server-side functions
(pg_read_file, lo_export, set_config, dblink...) are refused before
anything runs (exit 2). The statement then runs on a connection that
cannot write: in SQLite a query-only connection whose authorizer compiles
reads only; in PostgreSQL a connection of its own with
default_transaction_read_only, in a READ ONLY transaction that is rolled
back. For a PostgreSQL database shared by many, give sql a role that may
only SELECT (docs/SECURITY.md). Give the statement as arguments (joined by
spaces) or as - to read it from standard input.

Values: NULL is printed NULL in a table and CSV and null in JSON; a BLOB as
x'hex' in a table (the first 32 bytes; -o wide: all) and CSV, base64 in
JSON. The columns are the statement's: no *_time columns are added. Tables show
strings without control characters or escape sequences; --output csv writes
them escaped, --output json exactly (docs/SECURITY.md).

Examples:
  cpid-tui sql --db cpid.db "select verb, resource, count(*) from audit_events group by 1, 2 order by 3 desc"
  cpid-tui sql --db cpid.db "select e.name, b.response_object ->> '$.spec.replicas'
      from audit_events e join audit_bodies b on b.event_id = e.id
      where e.resource = 'deployments' and e.stage = 'ResponseComplete'"
  echo "select * from changes" | cpid-tui sql --db cpid.db --output json -`

func setupSQL(c *cobra.Command, e *env) runFunc {
	return func(ctx context.Context, pos []string) error {
		if len(pos) == 0 {
			return usagef("give a statement, or - to read it from standard input")
		}
		query := strings.Join(pos, " ")
		if len(pos) == 1 && pos[0] == "-" {
			b, err := io.ReadAll(e.stdin)
			if err != nil {
				return fmt.Errorf("read the statement from standard input: %w", err)
			}
			query = string(b)
		}
		if strings.TrimSpace(query) == "" {
			return usagef("the statement is empty")
		}
		if _, err := cpid.ReadStatement(query); err != nil {
			return usagef("%v", err)
		}
		db0, err := openStore(ctx, e.notices(), e.db, readOnlyPure)
		if err != nil {
			return err
		}
		defer db0.close()
		w := bufio.NewWriter(e.stdout)
		defer w.Flush()
		format := e.format(c)
		var js bytes.Buffer
		p := newRowPrinter(w, format, e.noHeaders)
		if format == "yaml" {
			p = newRowPrinter(&js, "json", false)
		}
		if err := db0.view("").QuerySQL(ctx, query, p.row); err != nil {
			if errors.Is(err, cpid.ErrStatement) {
				return usagef("%v", err)
			}
			return err
		}
		if err := p.end(); err != nil || format != "yaml" {
			return err
		}
		y, err := yaml.JSONToYAML(js.Bytes())
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
}

// rowPrinter prints the rows of a statement as they come (a table is
// aligned at the end).
type rowPrinter struct {
	w         io.Writer
	format    string
	noHeaders bool
	cols      []string
	n         int
	tw        *tabwriter.Writer
	cw        *csv.Writer
	wide      bool // BLOBs in full
}

func newRowPrinter(w io.Writer, format string, noHeaders bool) *rowPrinter {
	if format == "wide" {
		return &rowPrinter{w: w, format: "table", noHeaders: noHeaders, wide: true}
	}
	return &rowPrinter{w: w, format: format, noHeaders: noHeaders}
}

func (p *rowPrinter) header(cols []string) {
	p.cols = cols
	switch p.format {
	case "table":
		p.tw = newTable(p.w)
		if !p.noHeaders {
			tableRow(p.tw, cols)
		}
	case "csv":
		p.cw = csv.NewWriter(p.w)
		if !p.noHeaders {
			p.cw.Write(cols)
		}
	case "json":
		io.WriteString(p.w, "[")
	}
}

func (p *rowPrinter) row(cols []string, vals []any) error {
	if p.cols == nil {
		p.header(cols)
	}
	p.n++
	switch p.format {
	case "table":
		cells := make([]string, len(vals))
		limit := 32
		if p.wide {
			limit = -1
		}
		for i, v := range vals {
			cells[i] = sqlText(v, limit)
		}
		tableRow(p.tw, cells)
	case "csv":
		cells := make([]string, len(vals))
		for i, v := range vals {
			cells[i] = csvText(sqlText(v, -1))
		}
		return p.cw.Write(cells)
	case "json":
		if p.n > 1 {
			io.WriteString(p.w, ",")
		}
		io.WriteString(p.w, "\n  {")
		for i, v := range vals {
			if i > 0 {
				io.WriteString(p.w, ", ")
			}
			k, _ := json.Marshal(cols[i])
			b, err := json.Marshal(jsonValue(v))
			if err != nil {
				return err
			}
			p.w.Write(cpid.EscapeJSON(k))
			io.WriteString(p.w, ": ")
			p.w.Write(cpid.EscapeJSON(b))
		}
		io.WriteString(p.w, "}")
	}
	return nil
}

// end finishes the output; a statement with no row prints its header when
// the engine gave no columns either, nothing.
func (p *rowPrinter) end() error {
	switch p.format {
	case "table":
		if p.tw != nil {
			return p.tw.Flush()
		}
	case "csv":
		if p.cw != nil {
			p.cw.Flush()
			return p.cw.Error()
		}
	case "json":
		if p.cols == nil {
			io.WriteString(p.w, "[")
		}
		if p.n > 0 {
			io.WriteString(p.w, "\n")
		}
		io.WriteString(p.w, "]\n")
	}
	return nil
}

// sqlText is a value as a cell: NULL, a number, the text, x'hex' for bytes
// that are not UTF-8 text (the first max bytes when max >= 0).
func sqlText(v any, max int) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return v
	case []byte:
		if utf8.Valid(v) && !strings.ContainsRune(string(v), 0) {
			return string(v)
		}
		if max >= 0 && len(v) > max {
			return "x'" + hex.EncodeToString(v[:max]) + "'... (" + strconv.Itoa(len(v)) + " bytes)"
		}
		return "x'" + hex.EncodeToString(v) + "'"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(v)
}

// jsonValue is a value as JSON encodes it: bytes that are UTF-8 text as a
// string (SQLite returns TEXT so from some expressions), others base64.
func jsonValue(v any) any {
	if b, ok := v.([]byte); ok && utf8.Valid(b) && !strings.ContainsRune(string(b), 0) {
		return string(b)
	}
	return v
}
