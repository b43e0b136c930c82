package postgres

import (
	"context"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestCPIDPrefixes: the ids' length from cpid_ids (CPIDPrefixes, a few
// seeks) is the length counted from every CPID of the merge graph, for
// the fixture's ids and for ids that are no CPID, before and after a
// prune deleted some; and CPIDPrefixes' one statement reads what
// cpid.ReadService's two read.
func TestCPIDPrefixes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		all, err := s.CPIDs(ctx, "", math.MaxInt32)
		if err != nil || len(all) < 3 {
			t.Fatalf("%s: %d CPIDs, %v", when, len(all), err)
		}
		for _, listed := range [][]string{nil, all[:1], {all[len(all)/2], all[len(all)-1]}, {"0", "ffffffff-x", all[1][:5]},
			{all[2], all[0], all[2], all[2]}} {
			got, err := s.CPIDPrefixes(ctx, listed)
			if err != nil {
				t.Fatal(err)
			}
			want, err := cpid.ReadService{Rows: s}.CPIDPrefixes(ctx, listed)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got.Near)
			slices.Sort(want.Near)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: CPIDPrefixes of %q: %+v, want %+v", when, listed, got, want)
			}
			n, err := cpid.IDLength(ctx, s, 1, listed...)
			if err != nil {
				t.Fatal(err)
			}
			if want := cpid.UniqueLength(append(append([]string{}, all...), listed...), 1); n != want {
				t.Errorf("%s: IDLength of %q: %d, want %d", when, listed, n, want)
			}
		}
	}
	check("after reconstruct")
	if _, _, err := reconstruct.PruneStore(ctx, s, reconstruct.Budget{MaxCPIDs: 5}, false); err != nil {
		t.Fatal(err)
	}
	check("after prune")
}
