package tui

import (
	"os"
	"slices"
	"testing"
	"time"
)

// BenchmarkBrowse measures how long the UI takes to answer, on the database
// named by CPID_BROWSE_DB (make one with fixtures/synth, cpid-tui ingest
// and cpid-tui reconstruct; docs/TUI.md has the figures for a million
// events). Each key is timed from the key press to the screen drawn with
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
			m := newTestAt(b, path, 100, 30, Options{})
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
		{"open-change-and-back", nil, [][]string{{"enter"}, {"esc"}}},
		{"timeline", []string{"enter"}, [][]string{{"2"}, {"1"}}},
		{"timeline-zoom-move", []string{"enter", "2"}, [][]string{{"+"}, {"j"}, {"-"}}},
		{"logs", []string{"enter", "2", "j"}, [][]string{{"3"}, {"2"}}},
		{"revisions", []string{"enter"}, [][]string{{"4"}, {"j"}, {"1"}}},
		{"dag-origins", []string{"enter", "j", "j", "j", "j", "j"}, [][]string{{"o"}, {"esc"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := newTestAt(b, path, 100, 30, Options{})
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
		m := newTestAt(b, path, 100, 30, Options{})
		for b.Loop() {
			drive(b, m, tickMsg{})
		}
	})
}
