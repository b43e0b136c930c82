package tui

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/postgres"
	"github.com/cpid-dev/cpid/sqlite"
)

// BenchmarkBrowse measures how long the UI takes to answer, on the database
// named by CPID_BROWSE_DB, a SQLite file or a postgres:// URL (make one
// with fixtures/synth, cpid-tui ingest and cpid-tui reconstruct;
// docs/BENCHMARKS.md has the figures for a million and ten million events). Each key is timed from the key press to the screen drawn with
// the data its queries brought, queries included; max-ms is the slowest.
func BenchmarkBrowse(b *testing.B) {
	path := os.Getenv("CPID_BROWSE_DB")
	if path == "" {
		b.Skip("set CPID_BROWSE_DB to a database to measure")
	}
	b.Run("first-screen", func(b *testing.B) {
		var worst time.Duration
		for b.Loop() {
			start := time.Now()
			m := openBench(b, path)
			m.Render()
			worst = max(worst, time.Since(start))
		}
		b.ReportMetric(float64(worst)/1e6, "max-ms")
	})
	for _, c := range []struct {
		name  string
		setup []string   // keys before the loop
		keys  [][]string // each step timed alone, the steps cycle
	}{
		{"move", nil, [][]string{{"j"}, {"k"}}},
		{"page-end-and-back", nil, [][]string{{"G"}, {"g"}}},
		{"sort", nil, [][]string{{"s"}}},
		{"filter-typing", []string{"/"}, [][]string{{"n"}, {"s"}, {"backspace"}, {"backspace"}}},
		// Words that the writes hold and the changes' own rows do not:
		// a verb, a code, a writer (each typed, then erased).
		{"filter-words", []string{"/"}, [][]string{{"u"}, {"p"}, {"d"}, {"backspace"}, {"backspace"}, {"backspace"},
			{"4"}, {"0"}, {"9"}, {"backspace"}, {"backspace"}, {"backspace"},
			{"s"}, {"c"}, {"h"}, {"e"}, {"d"}, {"backspace"}, {"backspace"}, {"backspace"}, {"backspace"}, {"backspace"}}},
		{"open-change-and-back", nil, [][]string{{"enter"}, {"esc"}}},
		{"timeline", []string{"enter"}, [][]string{{"2"}, {"1"}}},
		{"timeline-zoom-move", []string{"enter", "2"}, [][]string{{"+"}, {"j"}, {"-"}}},
		{"logs", []string{"enter", "2", "j"}, [][]string{{"3"}, {"2"}}},
		{"revisions", []string{"enter"}, [][]string{{"4"}, {"j"}, {"1"}}},
		{"dag-origins", []string{"enter", "j", "j", "j", "j", "j"}, [][]string{{"o"}, {"esc"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := openBench(b, path)
			press(b, m, c.setup...)
			var times []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				press(b, m, c.keys[i%len(c.keys)]...)
				m.Render()
				times = append(times, time.Since(start))
				i++
			}
			b.ReportMetric(float64(slices.Max(times))/1e6, "max-ms")
		})
	}
	b.Run("refresh-check", func(b *testing.B) {
		m := openBench(b, path)
		for b.Loop() {
			drive(b, m, tickMsg{})
		}
	})
}

// openBench opens the UI at 100x30 on the database at path, SQLite or
// PostgreSQL; a SQLite file as cpid-tui browse opens it (read only, SQLite
// in C where the build has cgo; CPID_BROWSE_PURE=1: the pure-Go SQLite, as
// the release binaries, built without cgo, read).
func openBench(b *testing.B, path string) *Model {
	b.Helper()
	var st interface {
		cpid.ChangeReader
		Close() error
	}
	var err error
	if strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://") {
		st, err = postgres.Open(context.Background(), path)
	} else {
		opts := []cpid.OpenOption{cpid.ReadOnly(), cpid.Native()}
		if os.Getenv("CPID_BROWSE_PURE") != "" {
			opts = opts[:1] // the pure-Go SQLite, as a build without cgo reads
		}
		st, err = sqlite.Open(context.Background(), path, opts...)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	m := New(context.Background(), st, Options{Now: fixedNow})
	drive(b, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	run(b, m, m.Init())
	return m
}
