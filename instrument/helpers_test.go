package instrument_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/cpid-dev/cpid/instrument"
)

// id returns a readable deterministic ID: name (at most 7 bytes) is stored in
// its last bytes, so that id("a") prints as 00000000-0000-4000-8000-000000000061.
func id(name string) instrument.ID {
	var x instrument.ID
	copy(x[16-len(name):], name)
	x[6] = 0x40
	x[8] = 0x80
	return x
}

// name is the inverse of id, for readable failures.
func name(x instrument.ID) string {
	i := 9
	for i < 16 && x[i] == 0 {
		i++
	}
	if y := id(string(x[i:])); y == x {
		return string(x[i:])
	}
	return x.String()
}

func names(ids []instrument.ID) string {
	s := make([]string, len(ids))
	for i, x := range ids {
		s[i] = name(x)
	}
	return strings.Join(s, ",")
}

// tc parses "cpid:anc1,anc2" with names as in id.
func tc(s string) instrument.Context {
	if s == "" {
		return instrument.Context{}
	}
	cpid, anc, _ := strings.Cut(s, ":")
	c := instrument.Context{CPID: id(cpid)}
	if anc != "" {
		for _, a := range strings.Split(anc, ",") {
			c.Ancestors = append(c.Ancestors, id(a))
		}
	}
	return c
}

func show(c instrument.Context) string {
	if c.IsZero() {
		return ""
	}
	s := name(c.CPID)
	if len(c.Ancestors) > 0 {
		s += ":" + names(c.Ancestors)
	}
	return s
}

// sequence returns an ID generator giving n1, n2, ... (as in id).
func sequence(prefix string) func() instrument.ID {
	n := 0
	return func() instrument.ID {
		n++
		return id(fmt.Sprintf("%s%d", prefix, n))
	}
}

// clock returns a clock that starts at a fixed time and ticks a millisecond
// per reading.
func clock() func() time.Time {
	t := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Millisecond)
		return t
	}
}
