package ingest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid/ingest"
)

// TestKlogYear: klog's header has no year. It is the one that puts a line
// at most a day after the file's modification time, after the time of its
// CRI wrapper or of a CloudWatch export, or at most a day before the time
// of klog's own file header.
func TestKlogYear(t *testing.T) {
	day := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name  string
		mod   time.Time
		text  string
		times []string // of the records, in order
	}{
		{"across new year, by the file's time", day("2027-01-02T10:00:00Z"),
			"I1231 23:59:59.500000 1 a.go:1] \"old\"\nI0101 00:00:01.000000 1 a.go:2] \"new\"\n",
			[]string{"2026-12-31T23:59:59.5Z", "2027-01-01T00:00:01Z"}},
		{"a day of clock skew past the file's time", day("2027-01-02T10:00:00Z"),
			"I0103 09:00:00.000000 1 a.go:1] \"skewed\"\n",
			[]string{"2027-01-03T09:00:00Z"}},
		{"klog's file header", day("2031-06-01T00:00:00Z"),
			"Log file created at: 2025/12/31 23:00:00\nRunning on machine: host\nBinary: Built with gc go1.26.8 for linux/amd64\n" +
				"Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg\n" +
				"I1231 23:30:00.000000 1 a.go:1] \"m\"\nI0101 01:00:00.000000 1 a.go:2] \"m\"\n",
			[]string{"2025-12-31T23:30:00Z", "2026-01-01T01:00:00Z"}},
		{"CRI time, a leap day", day("2031-06-01T00:00:00Z"),
			"2024-02-29T10:00:00.000000001Z stderr F I0229 10:00:00.000000 1 a.go:1] \"leap\"\n",
			[]string{"2024-02-29T10:00:00Z"}},
		{"CloudWatch export time", day("2031-06-01T00:00:00Z"),
			"2023-06-01T10:00:00.123Z I0601 10:00:00.120000 1 a.go:1] \"m\"\n",
			[]string{"2023-06-01T10:00:00.12Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tree(t, map[string][]byte{"kcm.log": []byte(tc.text)}, tc.mod)
			sum, db := ingestPaths(t, ingest.Walker{}, dir)
			if sum.Bad != 0 {
				t.Fatalf("bad lines: %v", sum.BadLines)
			}
			rows := logRows(t, db)
			if len(rows) != len(tc.times) {
				t.Fatalf("%d records, want %d", len(rows), len(tc.times))
			}
			for i, r := range rows {
				if got := time.Unix(0, r.TimeNS).UTC(); !got.Equal(day(tc.times[i])) {
					t.Errorf("record %d at %s, want %s", i, got.Format(time.RFC3339Nano), tc.times[i])
				}
			}
		})
	}
}

// TestJoinKlogRecords: the reader joins a klog record's lines before
// decoding: block values, unstructured messages over lines, in plain files
// and in CRI container logs where the other stream's lines come between.
func TestJoinKlogRecords(t *testing.T) {
	audit := string(readLine(t, "audit/rs-create.json"))
	tests := []struct {
		name string
		text string
		want []string // "line level component msg" of each record, "audit N" for an audit event
	}{
		{"plain file", strings.Join([]string{
			`I1124 05:55:09.000001 1 a.go:1] "first" v=<`,
			"\tline one",
			"\tline two",
			" > n=1",
			`{"ts":1795499709.1,"msg":"json","level":"info","logger":"zap"}`,
			`I1124 05:55:09.000002 1 a.go:2] unstructured`,
			"continued text",
			"",
			`E1124 05:55:09.000003 1 a.go:3] "last"`,
		}, "\n") + "\n", []string{"1 info kcm first", "5 info zap json", "6 info kcm unstructured\ncontinued text", "9 error kcm last"}},
		{"CRI, stdout between", strings.Join([]string{
			`2026-11-24T05:55:09.000000001Z stderr F I1124 05:55:09.000001 1 a.go:1] "first" v=<`,
			`2026-11-24T05:55:09.000000002Z stdout F ` + audit,
			"2026-11-24T05:55:09.000000003Z stderr F \tone",
			"2026-11-24T05:55:09.000000004Z stderr F  >",
			`2026-11-24T05:55:09.000000005Z stderr P I1124 05:55:09.000002 1 a.go:2] "par`,
			`2026-11-24T05:55:09.000000006Z stderr F tial"`,
		}, "\n") + "\n", []string{"audit 2", "1 info kcm first", "6 info kcm partial"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tree(t, map[string][]byte{"kcm.log": []byte(tc.text)}, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
			sum, db := ingestPaths(t, ingest.Walker{}, dir)
			if sum.Bad != 0 {
				t.Fatalf("bad lines: %v", sum.BadLines)
			}
			var got []string
			for _, a := range auditRows(t, db) {
				got = append(got, fmt.Sprintf("audit %d", a.Line))
			}
			for _, r := range logRows(t, db) {
				got = append(got, fmt.Sprintf("%d %s %s %s", r.Line, r.Level, r.Component, r.Msg))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("records:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			var ml string
			for _, r := range logRows(t, db) {
				if r.Msg == "first" {
					ml = r.Fields
				}
			}
			if !strings.Contains(ml, `"v":"line one\nline two"`) && !strings.Contains(ml, `"v":"one"`) {
				t.Errorf("block value not joined: %s", ml)
			}
			if sum.Files[0].Format&ingest.FormatKlogText == 0 {
				t.Errorf("format %s", sum.Files[0].Format)
			}
		})
	}
}

// TestJoinLimits: a klog record longer than --max-line is one bad line and
// the records after it are read; a record of another CRI stream does not
// stop it.
func TestJoinLimits(t *testing.T) {
	text := "I1124 05:55:09.000001 1 a.go:1] long\n" + strings.Repeat("continued line of forty bytes, or so\n", 10) +
		"I1124 05:55:09.000002 1 a.go:2] \"short\"\n"
	dir := tree(t, map[string][]byte{"kcm.log": []byte(text)}, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	sum, db := ingestPaths(t, ingest.Walker{Limits: ingest.Limits{MaxLine: 200}}, dir)
	if sum.Bad != 1 || !strings.Contains(sum.BadLines[0].Error(), "kcm.log:1: klog text record longer than 200 bytes") {
		t.Errorf("bad lines %d: %v", sum.Bad, sum.BadLines)
	}
	if rows := logRows(t, db); len(rows) != 1 || rows[0].Msg != "short" || rows[0].Line != 12 {
		t.Errorf("records %+v", rows)
	}
}
