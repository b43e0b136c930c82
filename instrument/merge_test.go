package instrument_test

import (
	"testing"

	"github.com/cpid-dev/cpid/instrument"
)

// TestMerge covers Algorithm 1 (BuildCpidGraph) and section 3.5 of the paper.
// Contexts are written "cpid:ancestor,ancestor" with one-letter names.
func TestMerge(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		in      []string
		want    string // resulting context; minted CPIDs are m1, m2...
		sources string // sources of the mergelog, "" when a CPID is reused
	}{
		{name: "nothing", n: 10, in: nil, want: ""},
		{name: "only contexts without CPID", n: 10, in: []string{"", ""}, want: ""},
		{name: "single", n: 10, in: []string{"a:x"}, want: "a:x"},
		{name: "disjoint", n: 10, in: []string{"a", "b"}, want: "m1:a,b", sources: "a,b"},
		{name: "disjoint with ancestors interleaved closest first", n: 10,
			in: []string{"a:p,q", "b:r,s,t"}, want: "m1:a,b,p,r,q,s,t", sources: "a,b"},
		{name: "figure 8: replicaset behind deployment", n: 10,
			in: []string{"a", "g:a,b"}, want: "g:a,b"},
		{name: "figure 8, descendant first", n: 10,
			in: []string{"g:a,b", "a"}, want: "g:a,b"},
		{name: "descends from all others", n: 10,
			in: []string{"a", "b", "g:a,b", "c", "h:g,c"}, want: "h:g,c,a,b"},
		{name: "descends from all others, given first", n: 10,
			in: []string{"h:g,c", "a", "g:a,b", "b", "c"}, want: "h:g,c,a,b"},
		{name: "transitive through an observed context", n: 10,
			in: []string{"a", "c:b", "b:a"}, want: "c:b,a"},
		{name: "ancestors learned from an ancestor go last", n: 10,
			in: []string{"h:g,c", "g:a,b"}, want: "h:g,c,a,b"},
		{name: "ancestor found after its root", n: 10,
			in: []string{"c:b", "b:a", "a"}, want: "c:b,a"},
		{name: "common ancestor is not a descendant", n: 10,
			in: []string{"a:x", "b:x"}, want: "m1:a,b,x", sources: "a,b"},
		{name: "two descendants of one root", n: 10,
			in: []string{"a", "b:a", "c:a"}, want: "m1:b,c,a", sources: "b,c"},
		{name: "duplicate", n: 10, in: []string{"a", "a"}, want: "a"},
		{name: "duplicate joins ancestor lists, later first", n: 10,
			in: []string{"a:x", "a:y"}, want: "a:y,x"},
		{name: "duplicates among disjoint", n: 10,
			in: []string{"a", "b", "a", "b:a"}, want: "b:a"},
		{name: "duplicates do not repeat sources", n: 10,
			in: []string{"a", "b", "a", "b"}, want: "m1:a,b", sources: "a,b"},
		{name: "duplicate ancestors in a list", n: 10,
			in: []string{"g:a,a,b,a", "b"}, want: "g:a,b"},
		{name: "result ancestors capped at N", n: 3,
			in: []string{"a:p,q", "b:r,s"}, want: "m1:a,b,p", sources: "a,b"},
		{name: "input ancestors beyond N are not used", n: 2,
			in: []string{"g:a,b,c", "c"}, want: "m1:g,c", sources: "g,c"},
		{name: "input ancestors within N are used", n: 3,
			in: []string{"g:a,b,c", "c"}, want: "g:a,b,c"},
		{name: "reused ancestors capped at N", n: 2,
			in: []string{"a", "h:g,c", "g:a,b"}, want: "h:g,c"},
		{name: "N=0 merges whenever CPIDs differ", n: 0,
			in: []string{"g:a", "a"}, want: "m1", sources: "g,a"},
		{name: "N=0 reuses equal CPIDs", n: 0,
			in: []string{"a:x", "a:y"}, want: "a"},
		{name: "more sources than N", n: 2,
			in: []string{"a", "b", "c"}, want: "m1:a,b", sources: "a,b,c"},
		{name: "self reference is ignored", n: 10,
			in: []string{"a:a,b"}, want: "a:b"},
		{name: "inconsistent cycle does not loop", n: 10,
			in: []string{"a:b", "b:a"}, want: "b:a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := instrument.New("test", nil, instrument.WithMaxAncestors(tt.n), instrument.WithIDs(sequence("m")))
			in := make([]instrument.Context, len(tt.in))
			for i, s := range tt.in {
				in[i] = tc(s)
			}
			got, m, minted := tr.Plan(instrument.ObjectRef{Name: "obj"}, in...)
			if s := show(got); s != tt.want {
				t.Errorf("context = %q, want %q", s, tt.want)
			}
			if minted != (tt.sources != "") {
				t.Fatalf("minted = %v, want %v", minted, tt.sources != "")
			}
			if minted {
				if s := names(m.Sources); s != tt.sources {
					t.Errorf("sources = %q, want %q", s, tt.sources)
				}
				if m.CPID != got.CPID || m.Service != "test" || m.Object.Name != "obj" {
					t.Errorf("mergelog = %+v, want CPID %v, service test, object obj", m, got.CPID)
				}
			}
			roots := instrument.Roots(tt.n, in...)
			if minted && names(roots) != tt.sources || !minted && len(roots) > 1 {
				t.Errorf("Roots = %q, inconsistent with the merge", names(roots))
			}
		})
	}
}

// TestMergeMalformedAnnotations merges contexts read from annotations that
// someone else wrote badly: they count as absent and the merge goes on.
func TestMergeMalformedAnnotations(t *testing.T) {
	a, x := id("a").String(), id("x").String()
	tests := []struct {
		name    string
		own     map[string]string
		cause   map[string]string
		want    string
		sources string
	}{
		{name: "own CPID not a UUID", own: map[string]string{instrument.KeyCPID: "not-a-uuid"},
			cause: map[string]string{instrument.KeyCPID: a}, want: "a"},
		{name: "own CPID nil UUID", own: map[string]string{instrument.KeyCPID: "00000000-0000-0000-0000-000000000000"},
			cause: map[string]string{instrument.KeyCPID: a}, want: "a"},
		{name: "bad ancestors lose the shortcut", own: map[string]string{instrument.KeyCPID: a, instrument.KeyAncestors: x + ",zz"},
			cause: map[string]string{instrument.KeyCPID: x}, want: "m1:a,x", sources: "a,x"},
		{name: "good ancestors keep it", own: map[string]string{instrument.KeyCPID: a, instrument.KeyAncestors: x},
			cause: map[string]string{instrument.KeyCPID: x}, want: "a:x"},
		{name: "ancestors without CPID", own: map[string]string{instrument.KeyAncestors: x},
			cause: map[string]string{instrument.KeyCPID: a}, want: "a"},
		{name: "both malformed", own: map[string]string{instrument.KeyCPID: "?"},
			cause: map[string]string{instrument.KeyCPID: "{" + a + "}"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := instrument.New("test", nil, instrument.WithIDs(sequence("m")))
			got, m, minted := tr.Plan(instrument.ObjectRef{}, tr.ExtractAnnotations(tt.own), tr.ExtractAnnotations(tt.cause))
			if s := show(got); s != tt.want {
				t.Errorf("context = %q, want %q", s, tt.want)
			}
			if minted && names(m.Sources) != tt.sources || !minted && tt.sources != "" {
				t.Errorf("sources = %q (minted %v), want %q", names(m.Sources), minted, tt.sources)
			}
		})
	}
}
