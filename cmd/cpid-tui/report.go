package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid/cmd/cpid-tui/report"
	"github.com/cpid-dev/cpid/cmd/cpid-tui/tui"
)

func init() {
	register(command{name: "report", use: "ID [--format html|md] [-o FILE]", group: "read",
		summary: "a post-mortem page of one change (Markdown, or one self-contained HTML file)", help: reportHelp, setup: setupReport})
}

const reportHelp = `Writes a post-mortem of change ID (an id from cpid-tui query changes, or a
unique prefix of one) as a document to hand around:

  summary          what started it, who, when, how long until it settled,
                   writes, objects, writers, its CPIDs and the changes its
                   merges link it to
  timeline         an SVG chart: one lane per writer (controller), each
                   write a mark after a bar from when its cause became
                   visible (the hop), the critical path in red
  where the time   the critical path's waits added up by why they waited
  went             and by controller
  SLIs             as cpid-tui query sli --change ID
  anomalies and    what reconstruct flagged on its writes, and what the
  data warnings    data cannot tell: objects audited at Metadata level,
                   causes found by time alone, unexplained waits, guessed
                   log lines, writes still provisional
  revisions that   each write on the critical path with a diff against the
  mattered         object's previous revision (managedFields and
                   resourceVersion left out)
  every write      the timeline as cpid-tui query timeline shows it
  log lines        its controllers' log lines

--format html (the default, or when FILE ends in .html) is one file with
its styles and the chart inline: no script, no font, nothing fetched, so it
opens the same offline, in a mail attachment or a ticket. It reads well on a
phone: the chart scrolls sideways.

--format md (or FILE ending in .md) is Markdown with GitHub's tables; the
chart goes beside it as FILE's name with .timeline.svg (Markdown viewers
show an image file, not inline SVG); to stdout there is no chart.

Strings from the logs are shown without control characters or escape
sequences, escaped for HTML or Markdown. The database is opened read-only.
Here -o/--output is the file to write, not a listing's format.

Examples:
  cpid-tui report 4a01429c -o rollout.html
  cpid-tui report 4a01429c-6a4f-47dc-a93e-da38a9ba0d77 --format md -o rollout.md   # and rollout.timeline.svg
  cpid-tui report "$(cpid-tui query changes --sort duration --limit 1 --output json | jq -r '.[0].id')" -o slowest.html`

func setupReport(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	format := fs.String("format", "", "html or md (default: from FILE's extension, else html)")
	out := fs.StringP("output", "o", "-", "the file to write (- for stdout); with --format md the chart goes beside it")
	c.RegisterFlagCompletionFunc("format", fixed("html", "md"))
	c.ValidArgsFunction = argChanges(e, 1)
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 1 {
			return usagef("give one change id")
		}
		f := *format
		if f == "" {
			f = "html"
			if ext := strings.ToLower(filepath.Ext(*out)); ext == ".md" || ext == ".markdown" {
				f = "md"
			}
		}
		if f != "html" && f != "md" {
			return usagef("--format %q: give html or md", f)
		}
		db, err := openStore(ctx, e.notices(), e.db, readOnly)
		if err != nil {
			return err
		}
		defer db.close()
		st := db.view(e.cluster)
		id, err := resolveChange(ctx, st, pos[0])
		if err != nil {
			db.hintReconstruct(ctx, e, e.db, e.cluster)
			return err
		}
		r, err := report.Build(ctx, st, id)
		if err != nil {
			return err
		}
		var chart string
		if f == "md" && *out != "-" {
			chart = strings.TrimSuffix(*out, filepath.Ext(*out)) + ".timeline.svg"
			if err := writeFile(chart, func(w io.Writer) error { return r.SVG(w, report.Wide) }); err != nil {
				return err
			}
		}
		write := func(w io.Writer) error {
			if f == "md" {
				rel := ""
				if chart != "" {
					rel = filepath.Base(chart)
				}
				return r.Markdown(w, rel)
			}
			return r.HTML(w)
		}
		if *out == "-" {
			return write(e.stdout)
		}
		if err := writeFile(*out, write); err != nil {
			return err
		}
		also := ""
		if chart != "" {
			also = " and its chart " + chart
		}
		fmt.Fprintf(e.notices(), "%s report: wrote %s%s: change %s, %s by %s, %d on the critical path\n",
			e.prog, *out, also, id, tui.Plural(len(r.Writes), "write"), tui.Plural(len(r.Lanes), "writer"), len(r.Critical))
		return nil
	}
}

// writeFile writes path through fill, whole or not at all: into a
// temporary file beside it, renamed over it once complete.
func writeFile(path string, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := fill(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
