package present

import (
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestCompareSummary: how much longer the second change took, and the
// writer most of it went to, ids cut to the length asked for.
func TestCompareSummary(t *testing.T) {
	t.Parallel()
	a, b := cpid.ChangeRow{ID: "341ca5b9-0000"}, cpid.ChangeRow{ID: "5ecff3ef-1111"}
	slower := reconstruct.Comparison{A: a, B: b, SettledANS: 100e6, SettledBNS: 350e6, DeltaNS: 250e6,
		Writers: []reconstruct.WriterDelta{{Writer: "kwok", DeltaNS: 50e6}, {Writer: "deployment-controller", DeltaNS: 200e6}}}
	same := reconstruct.Comparison{A: a, B: b, SettledANS: 100e6, SettledBNS: 100e6}
	faster := reconstruct.Comparison{A: a, B: b, SettledANS: 300e6, SettledBNS: 100e6, DeltaNS: -200e6}
	for _, c := range []struct{ got, want string }{
		{CompareSummary(slower, 0), "5ecff3ef took 250ms longer than 341ca5b9 (350ms against 100ms); 200ms of it in deployment-controller"},
		{CompareSummary(same, 10), "5ecff3ef-1 took as long as 341ca5b9-0 (100ms)"},
		{CompareSummary(faster, 0), "5ecff3ef took 200ms less than 341ca5b9 (100ms against 300ms)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q\nwant %q", c.got, c.want)
		}
	}
	for _, c := range []struct {
		x         *reconstruct.StepSide
		when, hop string
	}{
		{nil, "-", "-"},
		{&reconstruct.StepSide{AtNS: 5e6}, "+5.00ms", "-"},
		{&reconstruct.StepSide{AtNS: 5e6, HasCause: true, HopNS: 2e6, Critical: true}, "+5.00ms", "+2.00ms *"},
	} {
		if when, hop := StepSide(c.x, Offset); when != c.when || hop != c.hop {
			t.Errorf("StepSide(%+v) = %q, %q; want %q, %q", c.x, when, hop, c.when, c.hop)
		}
	}
}
