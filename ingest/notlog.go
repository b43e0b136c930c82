package ingest

import (
	"bytes"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// notLogNames are the extensions of files that are never logs: the notes,
// scripts and tables people keep beside the logs of a bundle.
var notLogNames = map[string]string{
	".md":       "Markdown",
	".markdown": "Markdown",
	".sh":       "a shell script",
	".bash":     "a shell script",
	".py":       "a Python script",
	".go":       "Go source",
	".tsv":      "a TSV table",
	".csv":      "a CSV table",
}

// sniffBytes is how much of a file notLog looks at.
const sniffBytes = 4 << 10

// notLog says why a file found in a directory or a bundle is clearly not a
// log, "" when it may be one (it is then read, and what is not a record is
// a bad line). It is never asked about a file named on the command line.
// By its name: Markdown, a script, a table (notLogNames), whatever it
// holds. By its first bytes (head; nil: by the name alone), unless its
// name is a log's (logName): a script's "#!", a first line starting with
// "#" (a Markdown heading, a script's comment) or lines of tab-separated
// columns, and no line among them that a log could hold (JSON, klog text
// or its file header, a CRI or timestamped line). A file without
// extension that starts with JSON or klog text is read.
func notLog(name string, head []byte) string {
	fam := family(name)
	if what, ok := notLogNames[path.Ext(fam)]; ok {
		return "not a log (" + what + ", by its name)"
	}
	if head == nil || logName(name) || isGzip(head) || isTar(head) {
		return ""
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	if len(head) == sniffBytes {
		// The last line may be cut: judge the whole ones.
		if i := bytes.LastIndexByte(head, '\n'); i > 0 {
			head = head[:i]
		}
	}
	var first []byte
	tabs, table := -1, true
	for line := range bytes.Lines(head) {
		line = trimEOL(line)
		if len(trimSpace(line)) == 0 {
			continue
		}
		if logLike(line) {
			return ""
		}
		if first == nil {
			first = line
		}
		n := bytes.Count(line, []byte{'\t'})
		if n == 0 || tabs >= 0 && n != tabs {
			table = false
		}
		tabs = n
	}
	switch {
	case first == nil:
		return "" // empty, or blank: nothing to skip
	case bytes.HasPrefix(first, []byte("#!")):
		return "not a log (a script: its first line is #!)"
	case first[0] == '#':
		return "not a log (Markdown or a script: its first line starts with #)"
	case table:
		return "not a log (a table: tab-separated columns)"
	}
	return ""
}

// family is the lower-case name of the live file a file or bundle member
// belongs to, without its directory and rotation suffixes.
func family(name string) string {
	fam, _ := rotation(path.Base(filepath.ToSlash(name)))
	return strings.ToLower(fam)
}

// logName reports a name that is a log's, whatever it holds: *.log and its
// rotated backups (audit.log, 0.log.20060102-150405.gz, x.log.1), audit*
// (audit-2006-01-02T15-04-05.000.log.gz, NODE-audit.log).
func logName(name string) bool {
	fam := family(name)
	return strings.HasSuffix(fam, ".log") || strings.HasPrefix(fam, "audit")
}

// logLike reports a line that a log cpid reads could hold, in any of its
// formats (docs/INPUTS.md), or the legacy audit text it explains.
func logLike(line []byte) bool {
	if _, _, payload, ok := splitCRI(line); ok {
		line = payload
	} else if _, rest, ok := cutExportTime(line); ok {
		line = rest
	}
	t := trimSpace(line)
	switch {
	case len(t) == 0:
		return false
	case t[0] == '{' || t[0] == '[':
		return true
	case isKlogHeader(t), bytes.HasPrefix(t, []byte(klogCreated)):
		return true
	}
	return textFormat(t) == errLegacy
}

// sniff reads the first bytes of the file at name for notLog; nil when it
// cannot be opened (the reader reports why).
func sniff(name string) []byte {
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, sniffBytes)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// skipNotLog reports a file found in a directory or a bundle that is
// clearly not a log (notLog), telling the Notice why. head is its first
// bytes; nil reads them from the file at name when its name says nothing.
func (w *Walker) skipNotLog(name string, head []byte) bool {
	why := notLog(name, nil)
	if why == "" && !logName(name) {
		if head == nil {
			head = sniff(name)
		}
		why = notLog(name, head)
	}
	if why == "" {
		return false
	}
	if w.Notice != nil {
		w.Notice(Notice{Name: name, Reason: why, NotLog: true})
	}
	return true
}
