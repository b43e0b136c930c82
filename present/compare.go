package present

import (
	"fmt"

	"github.com/cpid-dev/cpid/reconstruct"
)

// MinIDLength is the fewest characters of an id (a change's, a CPID) that
// cpid shows people: more where the database needs them to tell two apart
// (cpid.IDLength).
const MinIDLength = 8

// ShortID abbreviates id (a UUID) to n characters, MinIDLength if fewer,
// as git abbreviates a commit.
func ShortID(id string, n int) string {
	if n = max(n, MinIDLength); len(id) > n {
		return id[:n]
	}
	return id
}

// CompareSummary is a Comparison's Summary, as cpid-tui diff and the TUI's
// comparison say it: how much longer (or shorter) the second change took
// and which writer most of the difference went to, the ids cut to n
// characters (ShortID).
func CompareSummary(r reconstruct.Comparison, n int) string {
	a, b := ShortID(r.A.ID, n), ShortID(r.B.ID, n)
	if r.DeltaNS == 0 {
		return fmt.Sprintf("%s took as long as %s (%s)", b, a, Duration(r.SettledBNS))
	}
	more, d := "longer", r.DeltaNS
	if d < 0 {
		more, d = "less", -d
	}
	s := fmt.Sprintf("%s took %s %s than %s (%s against %s)", b, Duration(d), more, a, Duration(r.SettledBNS), Duration(r.SettledANS))
	if top := r.Top(); top != nil {
		s += fmt.Sprintf("; %s of it in %s", Duration(max(top.DeltaNS, -top.DeltaNS)), top.Writer)
	}
	return s
}

// StepSide formats one change's write at a step of a comparison: when (by
// at), and its hop, with " *" on the critical path; "-" for a change
// without that step.
func StepSide(x *reconstruct.StepSide, at func(ns int64) string) (when, hop string) {
	if x == nil {
		return "-", "-"
	}
	hop = "-"
	if x.HasCause {
		hop = "+" + Duration(x.HopNS)
	}
	if x.Critical {
		hop += " *"
	}
	return at(x.AtNS), hop
}

// Signed formats a difference of durations with its sign: +3.20ms,
// -1.00ms, +0s.
func Signed(ns int64) string {
	if ns < 0 {
		return Duration(ns)
	}
	return "+" + Duration(ns)
}
