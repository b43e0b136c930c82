package present

import (
	"context"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/cpid-dev/cpid"
)

// Printable returns s as it may reach a terminal: every string that comes
// from the logs (a username, a user agent, an object name, a log message)
// could hold escape sequences that retitle the window, recolour the
// screen, move the cursor or worse. Escape sequences (ESC and C1 CSI, OSC,
// DCS... to their end) are removed whole, other C0 controls, DEL and C1
// controls removed, tab, newline and carriage return turned into a space
// (a cell is one line), and bytes that are not UTF-8 into U+FFFD (a lone
// 0x9b is CSI to an 8-bit terminal).
func Printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
			i++
			continue
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case r == 0x1b:
			i = skipEscape(s, i+1)
			continue
		case r == 0x9b: // CSI
			i = skipCSI(s, i+n)
			continue
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // DCS, SOS, OSC, PM, APC
			i = skipString(s, i+n)
			continue
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// isPrintable reports s holding nothing Printable changes: the common case,
// checked without allocating.
func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			if c < 0x80 {
				return false
			}
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 || r <= 0x9f {
				return false
			}
			i += n - 1
		}
	}
	return true
}

// skipEscape returns the index after the escape sequence whose ESC ends at
// i: a CSI (ESC [), a control string (ESC ] P X ^ _) or a two-character
// sequence, with its intermediate bytes.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++ // intermediate bytes
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++ // the final byte
	}
	return i
}

// skipCSI returns the index after the parameter, intermediate and final
// bytes of a control sequence starting at i.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString returns the index after a control string starting at i: up to
// BEL, ST (ESC \ or C1 0x9c) or the end.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0x1b:
			return i // another sequence starts: this one was cut short
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

// printableReader is the ChangeReader the views read: every string of
// every answer (and every []byte, such as a revision's body) made
// Printable, so that no view can forget one.
type printableReader struct{ st cpid.ChangeReader }

// PrintableReader returns a ChangeReader whose every answer is made
// Printable, as the views read it: for other renderings of the same data
// (cpid-tui report).
func PrintableReader(st cpid.ChangeReader) cpid.ChangeReader { return printableReader{st} }

// clean makes every string and []byte that v points to (through structs,
// slices, arrays, maps and pointers) Printable, in place.
func clean(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); !isPrintable(s) && v.CanSet() {
			v.SetString(Printable(s))
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			clean(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				clean(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if b := v.Bytes(); !isPrintable(string(b)) && v.CanSet() {
				v.SetBytes([]byte(Printable(string(b))))
			}
			return
		}
		for i := range v.Len() {
			clean(v.Index(i))
		}
	case reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // hashes and fingerprints, not text
		}
		for i := range v.Len() {
			clean(v.Index(i))
		}
	case reflect.Map:
		keys := v.MapKeys()
		for _, k0 := range keys {
			val := reflect.New(v.Type().Elem()).Elem()
			val.Set(v.MapIndex(k0))
			clean(val)
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(k0)
			clean(k)
			v.SetMapIndex(k0, reflect.Value{})
			v.SetMapIndex(k, val)
		}
	}
}

// printed makes what a read returned Printable and hands it on.
func printed[T any](v T, err error) (T, error) {
	clean(reflect.ValueOf(&v).Elem())
	return v, err
}

func (p printableReader) DataVersion(ctx context.Context) (cpid.DataVersion, error) {
	return p.st.DataVersion(ctx)
}

func (p printableReader) CountChanges(ctx context.Context, filter string) (int, error) {
	return p.st.CountChanges(ctx, filter)
}

func (p printableReader) Changes(ctx context.Context, q cpid.ChangeQuery) ([]cpid.ChangeRow, error) {
	return printed(p.st.Changes(ctx, q))
}

func (p printableReader) ChangesByID(ctx context.Context, ids []string) ([]cpid.ChangeRow, error) {
	return printed(p.st.ChangesByID(ctx, ids))
}

func (p printableReader) ChangesCarrying(ctx context.Context, cpids []string) ([]string, error) {
	return printed(p.st.ChangesCarrying(ctx, cpids))
}

func (p printableReader) LinkedChanges(ctx context.Context, change, id string, ancestors bool) ([]cpid.ChangeRow, error) {
	return printed(p.st.LinkedChanges(ctx, change, id, ancestors))
}

func (p printableReader) ChangeGraph(ctx context.Context, change string) (cpid.ChangeGraph, error) {
	return printed(p.st.ChangeGraph(ctx, change))
}

func (p printableReader) ChangeLogs(ctx context.Context, change string, limit int) (cpid.ChangeLogSet, error) {
	return printed(p.st.ChangeLogs(ctx, change, limit))
}

func (p printableReader) ChangeSpans(ctx context.Context, change string) ([]cpid.ChangeSpan, error) {
	return printed(p.st.ChangeSpans(ctx, change))
}

func (p printableReader) ObjectRevisions(ctx context.Context, o cpid.ObjectKey, limit int) ([]cpid.Revision, bool, error) {
	rs, more, err := p.st.ObjectRevisions(ctx, o, limit)
	rs, _ = printed(rs, nil)
	return rs, more, err
}

func (p printableReader) Objects(ctx context.Context, q cpid.ObjectQuery) ([]cpid.ObjectMatch, error) {
	return printed(p.st.Objects(ctx, q))
}

func (p printableReader) ObjectHistory(ctx context.Context, q cpid.HistoryQuery) ([]cpid.ObjectWrite, bool, error) {
	ws, more, err := p.st.ObjectHistory(ctx, q)
	ws, _ = printed(ws, nil)
	return ws, more, err
}

func (p printableReader) Timeline(ctx context.Context, change string) ([]cpid.TimelineEntry, error) {
	return printed(p.st.Timeline(ctx, change))
}

func (p printableReader) Timelines(ctx context.Context, changes []string) (map[string][]cpid.TimelineEntry, error) {
	return printed(p.st.Timelines(ctx, changes))
}

func (p printableReader) Related(ctx context.Context, id string) ([]string, error) {
	return printed(p.st.Related(ctx, id))
}

func (p printableReader) Origins(ctx context.Context, id string) ([]string, error) {
	return printed(p.st.Origins(ctx, id))
}

func (p printableReader) CPIDs(ctx context.Context, prefix string, limit int) ([]string, error) {
	return printed(p.st.CPIDs(ctx, prefix, limit))
}

// CPIDPrefixes asks the engine, when it keeps the CPIDs' prefixes
// (cpid.PrefixReader); Known is false otherwise.
func (p printableReader) CPIDPrefixes(ctx context.Context, ids []string) (cpid.CPIDPrefixes, error) {
	pr, ok := p.st.(cpid.PrefixReader)
	if !ok {
		return cpid.CPIDPrefixes{}, nil
	}
	return printed(pr.CPIDPrefixes(ctx, ids))
}

func (p printableReader) Spans(ctx context.Context, change string) ([]cpid.SpanRow, error) {
	return printed(p.st.Spans(ctx, change))
}

func (p printableReader) PodWrites(ctx context.Context, change string) ([]cpid.PodWrite, error) {
	return printed(p.st.PodWrites(ctx, change))
}

func (p printableReader) Hops(ctx context.Context, change string) ([]cpid.Hop, error) {
	return printed(p.st.Hops(ctx, change))
}

func (p printableReader) Anomalies(ctx context.Context, change string) ([]cpid.AnomalyRow, error) {
	return printed(p.st.Anomalies(ctx, change))
}

func (p printableReader) TailSources(ctx context.Context) ([]cpid.TailSource, error) {
	return printed(p.st.TailSources(ctx))
}

func (p printableReader) NewestMergelog(ctx context.Context) (int64, error) {
	return p.st.NewestMergelog(ctx)
}
