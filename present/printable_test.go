package present

import "testing"

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain", "kubectl/v1.35.0 (linux/amd64)", "kubectl/v1.35.0 (linux/amd64)"},
		{"unicode", "tête-à-tête ✓", "tête-à-tête ✓"},
		{"csi colour", "a\x1b[31mred\x1b[0m", "ared"},
		{"csi clear", "x\x1b[2Jy", "xy"},
		{"osc title bel", "\x1b]0;pwned\x07alice", "alice"},
		{"osc title st", "\x1b]0;pwned\x1b\\alice", "alice"},
		{"osc hyperlink", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"dcs", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		{"two-char escape", "a\x1bcb", "ab"},
		{"charset escape", "a\x1b(Bb", "ab"},
		{"c1 csi", "a\u009b31mb", "ab"},
		{"c1 osc", "a\u009d0;t\u009cb", "ab"},
		{"c1 other", "a\u0085b", "ab"},
		{"raw 8-bit csi", "a\x9b31mb", "a\ufffd31mb"},
		{"c0", "a\x00\x07\x08b\x7f", "ab"},
		{"whitespace", "a\tb\nc\rd", "a b c d"},
		{"trailing esc", "a\x1b", "a"},
		{"cut osc", "a\x1b]0;title", "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Printable(c.in); got != c.want {
				t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
			}
			if isPrintable(c.in) != (c.in == c.want) {
				t.Errorf("isPrintable(%q) = %v", c.in, isPrintable(c.in))
			}
		})
	}
}
