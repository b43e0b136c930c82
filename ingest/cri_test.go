package ingest_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cpid-dev/cpid/ingest"
)

// feed runs lines through c and returns the complete lines and the errors.
func feed(c *ingest.CRI, lines []string) (out, errs []string) {
	for _, l := range lines {
		p, ok, err := c.Feed([]byte(l))
		if err != nil {
			errs = append(errs, err.Error())
		}
		if ok {
			out = append(out, string(p))
		}
	}
	if err := c.End(); err != nil {
		errs = append(errs, err.Error())
	}
	return out, errs
}

func TestCRIFile(t *testing.T) {
	lines := strings.Split(string(readLine(t, "cri/kube-controller-manager.log")), "\n")
	want := strings.Split(string(readLine(t, "cri/joined.golden")), "\n")
	var c ingest.CRI
	got, errs := feed(&c, lines)
	if diff := cmp.Diff(want, got); diff != "" || errs != nil {
		t.Errorf("(-want +got):\n%s\nerrors %q", diff, errs)
	}
	for _, l := range got {
		if _, _, err := ingest.DecodeLine([]byte(l)); err != nil {
			t.Errorf("joined line does not decode: %v", err)
		}
	}
}

func TestCRI(t *testing.T) {
	const ts = "2026-11-22T15:47:58.166401122Z "
	tests := []struct {
		name   string
		max    int
		lines  []string
		want   []string
		errors []string
	}{{
		name:  "not wrapped: passes through",
		lines: []string{`{"ts":1,"msg":"m"}`, "", "2017-03-21T03:57:09.106841886-04:00 AUDIT: id=\"c939d2a7\"", "plain text"},
		want:  []string{`{"ts":1,"msg":"m"}`, "", "2017-03-21T03:57:09.106841886-04:00 AUDIT: id=\"c939d2a7\"", "plain text"},
	}, {
		name:  "full lines, both streams, CRI-O offset",
		lines: []string{ts + "stdout F a", "2026-11-22T16:47:58.1+01:00 stderr F b c", ts + "stdout F "},
		want:  []string{"a", "b c", ""},
	}, {
		name:  "partials join per stream",
		lines: []string{ts + "stderr P {\"a\":", ts + "stdout P x", ts + "stderr P 1,", ts + "stdout F y", ts + "stderr F \"b\":2}"},
		want:  []string{"xy", `{"a":1,"b":2}`},
	}, {
		name:  "tags after a colon are ignored",
		lines: []string{ts + "stdout P:future a", ts + "stdout F:future b"},
		want:  []string{"ab"},
	}, {
		name:  "no payload after the tag",
		lines: []string{ts + "stdout F"},
		want:  []string{""},
	}, {
		name:   "dangling partial at the end",
		lines:  []string{ts + "stdout F a", ts + "stderr P {\"a\":"},
		want:   []string{"a"},
		errors: []string{"CRI partial line on stderr (5 bytes) never completed"},
	}, {
		name:   "too long: dropped up to its end, then back to normal",
		max:    8,
		lines:  []string{ts + "stdout P 12345", ts + "stdout P 67890", ts + "stdout P abc", ts + "stdout F def", ts + "stdout F ok", ts + "stderr F 123456789"},
		want:   []string{"ok"},
		errors: []string{"CRI line on stdout longer than 8 bytes (10 so far): dropped", "CRI line on stderr longer than 8 bytes (9 so far): dropped"},
	}, {
		name:  "a bad timestamp is not CRI",
		lines: []string{"2026-13-22T15:47:58Z stdout F a"},
		want:  []string{"2026-13-22T15:47:58Z stdout F a"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ingest.CRI{Max: tc.max}
			got, errs := feed(&c, tc.lines)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.errors, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCRIPayloadReuse(t *testing.T) {
	// A joined payload stays valid until the next Feed; a full line's
	// payload is a slice of the input.
	var c ingest.CRI
	c.Feed([]byte("2026-11-22T15:47:58.1Z stdout P ab"))
	p, ok, _ := c.Feed([]byte("2026-11-22T15:47:58.2Z stdout F cd"))
	if !ok || string(p) != "abcd" {
		t.Fatalf("got %q %v", p, ok)
	}
	line := []byte("2026-11-22T15:47:58.3Z stdout F xyz")
	p, _, _ = c.Feed(line)
	if !bytes.Equal(p, []byte("xyz")) || &p[0] != &line[len(line)-3] {
		t.Error("a full line is copied")
	}
}
