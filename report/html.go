package report

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/cpid-dev/cpid"
)

//go:embed page.html.tmpl timeline.svg.tmpl
var templates embed.FS

// funcs are what the templates format with; every string they return is
// text, escaped by html/template like any other.
func (r *Report) funcs() template.FuncMap {
	return template.FuncMap{
		"dur":           dur,
		"short":         short,
		"explainOf":     explain,
		"offset":        func(ns int64) string { return "+" + dur(ns-r.OriginNS) },
		"changeLine":    func(c cpid.ChangeRow) string { return changeLine(c, text, text) },
		"anomalyObject": anomalyObject,
		"diffClass": func(l string) string {
			switch {
			case strings.HasPrefix(l, "+"):
				return "add"
			case strings.HasPrefix(l, "-"):
				return "del"
			case l == "@@":
				return "gap"
			}
			return "ctx"
		},
		"diffText": func(l string) string {
			if l == "@@" {
				return "⋯"
			}
			return l
		},
		"glyph": Write.glyph,
		"glyphClass": func(w Write) string {
			switch {
			case w.Attempt:
				return "failed"
			case w.Critical:
				return "crit"
			}
			return "write"
		},
		"logLine": r.logLine,
	}
}

// SVG writes the timeline chart in layout l as a standalone SVG document.
func (r *Report) SVG(w io.Writer, l Layout) error {
	t, err := template.New("timeline.svg.tmpl").Funcs(r.funcs()).ParseFS(templates, "timeline.svg.tmpl")
	if err != nil {
		return err
	}
	return t.Execute(w, r.Chart(l))
}

// HTML writes the report as one HTML file: styles inline, the chart an
// inline SVG (Wide, and Narrow for phones), no script, nothing fetched.
func (r *Report) HTML(w io.Writer) error {
	// Both charts are in the page; the styles show the one that fits.
	var svg bytes.Buffer
	for _, l := range []Layout{Wide, Narrow} {
		if err := r.SVG(&svg, l); err != nil {
			return err
		}
	}
	t, err := template.New("page.html.tmpl").Funcs(r.funcs()).ParseFS(templates, "page.html.tmpl")
	if err != nil {
		return err
	}
	c := r.Change
	data := struct {
		R                                                      *Report
		Started, Settled, Origin, CriticalWait, Slowest, Agent string
		MergeText                                              string
		// SVG is the chart, from html/template itself (above).
		SVG template.HTML
	}{R: r, Started: stamp(c.StartedNS), Settled: dur(c.SettledNS - c.StartedNS), Origin: stamp(r.OriginNS),
		CriticalWait: dur(r.CriticalNS), Slowest: dur(c.SlowestHopNS), Agent: r.agent(), MergeText: r.mergeText(),
		SVG: template.HTML(svg.String())}
	return t.Execute(w, data)
}

// mergeText says how the change's CPIDs were merged: "3 inferred, 1 log".
func (r *Report) mergeText() string {
	m := r.Merges()
	var parts []string
	for _, o := range []string{string(cpid.OriginLog), string(cpid.OriginAnnotation), string(cpid.OriginInferred)} {
		if m[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[o], o))
		}
	}
	if len(parts) == 0 {
		return "no merge"
	}
	return "merges: " + strings.Join(parts, ", ")
}
