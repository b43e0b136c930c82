package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// output writes data as a table for people, JSON or CSV for scripts. rows
// are the cells of the table and CSV; v is what JSON encodes.
func output(w io.Writer, format string, header []string, rows [][]string, v any) error {
	switch format {
	case "", "table":
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		return tw.Flush()
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(header)
		cw.WriteAll(rows)
		return cw.Error()
	}
	return fmt.Errorf("unknown --output %q (table, json, csv)", format)
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
