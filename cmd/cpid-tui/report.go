package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid/present"
	"github.com/cpid-dev/cpid/report"
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

--format html (the default, or FILE ending in .html or .htm) is one file
with its styles and the chart inline: no script, no font, nothing fetched,
so it opens the same offline, in a mail attachment or a ticket. It reads
well on a phone: the chart scrolls sideways.

--format md (or FILE ending in .md or .markdown) is Markdown with GitHub's
tables; the chart goes beside it as FILE's name with .timeline.svg
(Markdown viewers show an image file, not inline SVG); to stdout there is
no chart. Without --format, a FILE with any other extension (report.pdf)
is a usage error rather than HTML under a name that says otherwise; with
it, any name is written.

Strings from the logs are shown without control characters or escape
sequences, escaped for HTML or Markdown. The database is opened read-only.
Here -o/--output is the file to write, not a listing's format.

Examples:
  cpid-tui report 4a01429c -o rollout.html
  cpid-tui report 4a01429c-6a4f-47dc-a93e-da38a9ba0d77 --format md -o rollout.md   # and rollout.timeline.svg
  cpid-tui report "$(cpid-tui query changes --sort duration --limit 1 --output json | jq -r '.[0].id')" -o slowest.html`

func setupReport(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	format := new(string)
	choiceVar(fs, format, "format", "", "html or md (default: from FILE's extension, "+strings.Join(reportExts, ", ")+", else html)", "html", "md")
	out := fs.StringP("output", "o", "-", "the file to write (- for stdout); unless --format is given its extension is the format ("+strings.Join(reportExts, ", ")+"; none: HTML), another is refused; with --format md the chart goes beside it")
	c.ValidArgsFunction = argChanges(e, 1)
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 1 {
			return usagef("give one change id")
		}
		if !c.Flags().Changed("format") {
			if err := fileNotFormat(*out, "--format html or md"); err != nil {
				return err
			}
		}
		f, err := reportFormat(*format, *out)
		if err != nil {
			return err
		}
		db, err := e.openReader(ctx)
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
		switch {
		case f != "md" || *out == "-":
		case !plainTarget(*out):
			fmt.Fprintf(e.notices(), "%s report: no chart: -o %s is not a file to put one beside\n", e.prog, *out)
		default:
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
			e.prog, *out, also, id, present.Plural(len(r.Writes), "write"), present.Plural(len(r.Lanes), "writer"), len(r.Critical))
		return nil
	}
}

// reportExts are the extensions of the files report writes without
// --format: HTML, then Markdown.
var reportExts = []string{".html", ".htm", ".md", ".markdown"}

// reportFormat is the format of the report written to out: --format,
// else out's extension (HTML without one); another extension is a usage
// error, not an HTML page in a file named .pdf.
func reportFormat(format, out string) (string, error) {
	ext := filepath.Ext(out)
	if format != "" || out == "-" || ext == "" {
		return cmp.Or(format, "html"), nil
	}
	ext, err := oneOf(fmt.Sprintf("-o %s: extension", out), ext, reportExts)
	if err != nil {
		return "", usagef("%v (or give --format html or md to write FILE whatever its name)", err)
	}
	if ext == ".md" || ext == ".markdown" {
		return "md", nil
	}
	return "html", nil
}

// writeFile writes path through fill. A file (or a path with nothing at
// it) is written whole or not at all: into a temporary file beside it,
// renamed over it once complete, with the mode of the file it replaces
// (0644 for a new one). Anything else is written through, as a shell's >
// would: a device or a pipe (/dev/null, /dev/stdout) must stay what it
// is, where a rename would put a file in its place for every program
// after (as root, /dev/null itself), and a symbolic link is followed by
// the open, so that the kernel's rules for links in shared directories
// (fs.protected_symlinks) apply, as they would not to a rename over the
// file the link names.
func writeFile(path string, fill func(io.Writer) error) error {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("write %s: it is a directory", path)
	case err == nil && !fi.Mode().IsRegular():
		return writeThrough(path, fill)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("write %s: %w", path, err)
	}
	mode := os.FileMode(0o644)
	if err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if di, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) || (err == nil && !di.IsDir()) {
		return fmt.Errorf("write %s: no directory %s", path, dir)
	} else if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := fill(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
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

// writeThrough writes path opened as it is: through a link, to a device
// or a pipe. Only a regular file at the end is truncated: /dev/stdout
// appended to a log (>>) must not cut the log. A pipe nobody reads is an
// error, not a wait that nothing interrupts (a blocked open ignores the
// context).
func writeThrough(path string, fill func(io.Writer) error) error {
	flags := os.O_WRONLY | os.O_CREATE
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.Mode().IsRegular():
		flags |= os.O_TRUNC
	case err == nil && fi.IsDir():
		return fmt.Errorf("write %s: it is a directory", path)
	case err == nil && fi.Mode()&os.ModeNamedPipe != 0:
		flags |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, syscall.ENXIO) {
		return fmt.Errorf("write %s: no process reads this pipe", path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// plainTarget reports whether path is a file or nothing yet: where a
// report may put its chart beside it.
func plainTarget(path string) bool {
	fi, err := os.Lstat(path)
	return errors.Is(err, os.ErrNotExist) || (err == nil && fi.Mode().IsRegular())
}
