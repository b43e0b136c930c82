package reconstruct

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestNumberMatchesOrderRevisions: the places the engine gives writes as
// they come, corrected as its Output says (Reorder: renumber the object
// from all its writes; Relabel: only order_by becomes "time"), are the
// places OrderRevisions gives all the writes at once, over random streams
// of writes to a few objects: resourceVersions that go back or do not
// parse, requests that complete out of order, ties, and streams cut in
// two runs with the state saved and restored between them.
func TestNumberMatchesOrderRevisions(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		n := 1 + r.IntN(30)
		var evs []*Event
		for i := range n {
			rv := strconv.Itoa(100 + i*3 + r.IntN(7) - 3) // mostly rising, sometimes back
			switch r.IntN(10) {
			case 0:
				rv = "" // Metadata-level create: no resourceVersion
			case 1:
				rv = "x"
			}
			recv := int64(1000 + i*10)
			stage := recv + int64(r.IntN(40)) // a slow request completes after later ones
			if r.IntN(8) == 0 {
				stage = int64(1000 + (i-1)*10) // a tie with an earlier write's time
			}
			code := 200
			if r.IntN(6) == 0 {
				code = 409
			}
			evs = append(evs, &Event{ID: int64(i + 1), AuditID: "a" + strconv.Itoa(i), Verb: "update", Resource: "configmaps",
				Namespace: "d", Name: "cm" + strconv.Itoa(r.IntN(3)), ResourceVersion: rv, Username: "system:serviceaccount:kube-system:x",
				Code: code, ReceivedNS: recv, StageNS: stage})
		}
		// The store's view: rows by event ID, then Output applied.
		type row struct {
			key cpid.ObjectKey
			seq int
			by  string
		}
		rows := map[int64]*row{}
		apply := func(out cpid.Derived) {
			for _, w := range out.Writes {
				rows[w.EventID] = &row{w.Key, w.Seq, w.OrderBy}
			}
			objs := func(k cpid.ObjectKey) []*Event {
				var es []*Event
				for _, e := range evs {
					if rows[e.ID] != nil && e.Key() == k {
						es = append(es, e)
					}
				}
				return es
			}
			for k := range out.Reorder {
				es := objs(k)
				ids, by := OrderRevisions(len(es), func(i int) (int64, string, int64) {
					return es[i].ID, es[i].ResourceVersion, es[i].StageNS
				})
				for i, id := range ids {
					rows[id].seq, rows[id].by = i+1, by
				}
			}
			for k := range out.Relabel {
				for _, e := range objs(k) {
					rows[e.ID].by = "time"
				}
			}
		}
		cut := r.IntN(n + 1)
		en := NewEngine()
		for _, e := range evs[:cut] {
			en.Process(e)
		}
		apply(en.Drain())
		var saved savedIn
		state, err := en.MarshalState(saved.emit)
		if err != nil {
			t.Fatal(err)
		}
		en = NewEngine()
		if err := en.RestoreState(state, saved.saved()); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs[cut:] {
			en.Process(e)
		}
		apply(en.Drain())

		byObj := map[cpid.ObjectKey][]*Event{}
		for _, e := range evs {
			byObj[e.Key()] = append(byObj[e.Key()], e)
		}
		for k, es := range byObj {
			ids, by := OrderRevisions(len(es), func(i int) (int64, string, int64) {
				return es[i].ID, es[i].ResourceVersion, es[i].StageNS
			})
			var got []int64
			for seq := 1; seq <= len(es); seq++ {
				for _, e := range es {
					if rows[e.ID].seq == seq {
						got = append(got, e.ID)
					}
				}
			}
			if !slices.Equal(got, ids) {
				t.Fatalf("seed %d, %v (cut at %d): order %v, want %v", seed, k, cut, got, ids)
			}
			for _, e := range es {
				if rows[e.ID].by != by {
					t.Fatalf("seed %d, %v: event %d ordered by %q, want %q", seed, k, e.ID, rows[e.ID].by, by)
				}
			}
		}
	}
}
