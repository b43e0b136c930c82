package cpid

// EscapeJSON is the JSON text j with every control character inside its
// strings, C0 (U+0000–U+001F), DEL and C1 (U+007F–U+009F), written as a
// \u00XX escape; the rest, and j when it holds none, is left as it is. The
// text decodes to the same values.
//
// Every string cpid writes came from a log, and a terminal reads C1 as
// control too (U+009B is CSI), but encoding/json and protojson write DEL
// and C1 raw: every JSON that cpid-tui prints or exports goes through
// EscapeJSON (docs/SECURITY.md). They escape C0 already; a raw C0 byte in
// a string (not valid JSON) is escaped as well. Bytes outside strings, the
// layout's newlines and tabs, are kept.
func EscapeJSON(j []byte) []byte {
	var out []byte // nil until the first control character
	done := 0      // j[:done] is in out
	in, esc := false, false
	for i := 0; i < len(j); i++ {
		c := j[i]
		switch {
		case !in:
			in = c == '"'
			continue
		case esc:
			esc = false
			continue
		case c == '\\':
			esc = true
			continue
		case c == '"':
			in = false
			continue
		}
		r, n := rune(c), 1
		if c == 0xc2 && i+1 < len(j) && j[i+1] >= 0x80 && j[i+1] <= 0x9f {
			r, n = rune(j[i+1]), 2 // C1 in UTF-8
		} else if c >= 0x20 && c != 0x7f {
			continue
		}
		out = append(out, j[done:i]...)
		out = append(out, '\\', 'u', '0', '0', hexDigit[r>>4], hexDigit[r&0xf])
		i += n - 1
		done = i + 1
	}
	if out == nil {
		return j
	}
	return append(out, j[done:]...)
}

const hexDigit = "0123456789abcdef"
