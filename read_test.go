package cpid_test

import (
	"slices"
	"testing"

	"github.com/cpid-dev/cpid"
)

func TestWriterPatterns(t *testing.T) {
	for _, c := range []struct {
		writer string
		want   []string
	}{
		{"deployment-controller", []string{"%deployment-controller%", "%controller-manager%"}},
		{"generic-garbage-collector", []string{"%generic-garbage-collector%", "%controller-manager%"}},
		{"kube-scheduler", []string{"%kube-scheduler%", "%scheduler%"}},
		{"kwok", []string{"%kwok%"}},
		{"kubelet node-1", []string{"%kubelet%node-1%", "%kubelet%"}},
		{"my%operator", []string{"%my_operator%"}},
	} {
		t.Run(c.writer, func(t *testing.T) {
			if got := cpid.WriterPatterns(c.writer); !slices.Equal(got, c.want) {
				t.Errorf("WriterPatterns(%q) = %q, want %q", c.writer, got, c.want)
			}
		})
	}
}

// TestUniqueLength checks the abbreviation of ids: one more than the
// longest prefix two of them share, at least min, counted in characters.
func TestUniqueLength(t *testing.T) {
	for _, c := range []struct {
		name string
		ids  []string
		want int
	}{
		{"none", nil, 8},
		{"apart", []string{"0123abcd-1", "4567abcd-1"}, 8},
		{"share 10", []string{"0123abcd-1a", "zzzz", "0123abcd-1b", "0123abcd-2"}, 11},
		{"listed twice", []string{"0123abcd-1a", "0123abcd-1a"}, 8},
		{"one starts another", []string{"0123abcd-12", "0123abcd-123"}, 12},
		{"characters, not bytes", []string{"ééééééééé1", "ééééééééé2"}, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := cpid.UniqueLength(c.ids, 8); got != c.want {
				t.Errorf("UniqueLength(%q) = %d, want %d", c.ids, got, c.want)
			}
		})
	}
}

// TestPrefixesOf: what an engine's cpid_ids tells of the CPIDs, and when
// it cannot tell (the count reached the cap: IDLength reads the CPIDs).
func TestPrefixesOf(t *testing.T) {
	t.Parallel()
	n := func(i int) *int { return &i }
	for _, c := range []struct {
		shared *int
		count  int
		want   int
		ok     bool
	}{
		{nil, 0, -1, true},
		{n(0), 1, -1, true},
		{n(9), 2, 9, true},
		{n(cpid.CPIDSharedCap - 1), 2, cpid.CPIDSharedCap - 1, true},
		{n(cpid.CPIDSharedCap), 2, cpid.CPIDSharedCap, false},
	} {
		p, ok := cpid.PrefixesOf(c.shared, c.count)
		if ok != c.ok || p.Shared != c.want || p.Known != c.ok {
			t.Errorf("PrefixesOf(%v, %d) = %+v, %v; want Shared %d, ok %v", c.shared, c.count, p, ok, c.want, c.ok)
		}
	}
}
