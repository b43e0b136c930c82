package ingest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/cpid-dev/cpid/ingest"
)

// TestDecodeKlogText decodes klog text records as klog writes them: the
// header, structured messages with every kind of value klog's serializer
// writes, unstructured ones, over one line or several.
func TestDecodeKlogText(t *testing.T) {
	year := time.Now().UTC().Year()
	if time.Now().UTC().Before(time.Date(year, 11, 23, 0, 0, 0, 0, time.UTC)) {
		year-- // November 22 is last year's until the day after it
	}
	at := time.Date(year, 11, 22, 15, 53, 8, 123456000, time.UTC).UnixNano()
	tests := []struct {
		name, line            string
		level, component, msg string
		fields                map[string]any // besides ts, caller, pid, msg
	}{
		{"structured", `I1122 15:53:08.123456   12345 controller.go:123] "Syncing" key="default/web" duration="1.2ms"`,
			"info", "controller.go", "Syncing", map[string]any{"key": "default/web", "duration": "1.2ms"}},
		{"escapes", `W1122 15:53:08.123456   12345 x.go:1] "say \"hi\"\tthere" err="a \\ b \"c\" \u00e9\x01"`,
			"warn", "x.go", "say \"hi\"\tthere", map[string]any{"err": "a \\ b \"c\" é\x01"}},
		{"JSON values", `E1122 15:53:08.123456 7 x.go:2] "Failed" n=3 f=-1.5e3 ok=true nothing=null list=["a b","c=d"] obj={"a":{"b":[1,2]},"c":"} x"}`,
			"error", "x.go", "Failed", map[string]any{"n": 3.0, "f": -1500.0, "ok": true, "nothing": nil,
				"list": []any{"a b", "c=d"}, "obj": map[string]any{"a": map[string]any{"b": []any{1.0, 2.0}}, "c": "} x"}}},
		{"logger names the component", `I1122 15:53:08.123456 7 x.go:3] "Started" logger="resourcequota-controller"`,
			"info", "resourcequota-controller", "Started", map[string]any{"logger": "resourcequota-controller"}},
		{"block value", "I1122 15:53:08.123456 7 configfile.go:94] \"Using component config\" config=<\n\tapiVersion: v1\n\t\n\t  kind: X\n >",
			"info", "configfile.go", "Using component config", map[string]any{"config": "apiVersion: v1\n\n  kind: X"}},
		{"block value then more pairs", "I1122 15:53:08.123456 7 x.go:4] \"m\" a=<\n\tone\n\ttwo\n > b=1",
			"info", "x.go", "m", map[string]any{"a": "one\ntwo", "b": 1.0}},
		{"unstructured", `I1122 15:53:08.123456 7 flags.go:64] FLAG: --cluster-cidr="10.244.0.0/16"`,
			"info", "flags.go", `FLAG: --cluster-cidr="10.244.0.0/16"`, nil},
		{"unstructured starting with a quote", `I1122 15:53:08.123456 7 x.go:5] "a" b is not a pair`,
			"info", "x.go", `"a" b is not a pair`, nil},
		{"unstructured over lines", "F1122 15:53:08.123456 7 x.go:6] boom\ngoroutine 1 [running]:\nmain.main()",
			"fatal", "x.go", "boom\ngoroutine 1 [running]:\nmain.main()", nil},
		{"cpid", `I1122 15:53:08.123456 7 x.go:7] "cpid.mergelog" cpid.format=1 cpid="9a4c1a7e-5d0b-4f39-8c1e-2f6b8d3e4a10" sources=[]`,
			"info", "x.go", "cpid.mergelog", map[string]any{"cpid.format": 1.0, "cpid": "9a4c1a7e-5d0b-4f39-8c1e-2f6b8d3e4a10", "sources": []any{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			audits, rec, err := ingest.DecodeLine([]byte(tc.line))
			if err != nil || len(audits) != 0 || rec == nil {
				t.Fatalf("DecodeLine: %v, %d audits, record %v", err, len(audits), rec)
			}
			if rec.TimeNS != at || rec.Level != tc.level || rec.Component != tc.component || rec.Msg != tc.msg {
				t.Errorf("got time %d level %q component %q msg %q, want %d %q %q %q",
					rec.TimeNS, rec.Level, rec.Component, rec.Msg, at, tc.level, tc.component, tc.msg)
			}
			var fields map[string]any
			if err := json.Unmarshal(rec.Fields, &fields); err != nil {
				t.Fatalf("fields %s: %v", rec.Fields, err)
			}
			if fields["msg"] != tc.msg || fields["caller"] == nil || fields["pid"] == nil {
				t.Errorf("fields %s lack msg, caller or pid", rec.Fields)
			}
			for _, k := range []string{"ts", "caller", "pid", "msg"} {
				delete(fields, k)
			}
			want := tc.fields
			if want == nil {
				want = map[string]any{}
			}
			if d := cmp.Diff(want, fields); d != "" {
				t.Errorf("fields (-want +got):\n%s", d)
			}
			if tc.name == "cpid" && rec.CPID != "9a4c1a7e-5d0b-4f39-8c1e-2f6b8d3e4a10" {
				t.Errorf("cpid %q", rec.CPID)
			}
		})
	}
}

func TestDecodeKlogTextErrors(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"no thread id", `I1122 15:53:08.123456 controller.go:123] "m"`, "klog text: malformed header: no thread id"},
		{"no caller", `I1122 15:53:08.123456 7 controller.go:123 "m"`, "klog text: malformed header: no file:line]"},
		{"bad month", `I1322 15:53:08.123456 7 x.go:1] "m"`, "klog text: invalid time"},
		{"bad day", `I0231 15:53:08.123456 7 x.go:1] "m"`, "klog text: invalid date 02-31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ingest.DecodeLine([]byte(tc.line))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// stringer is a value klog writes through its String method.
type stringer struct{}

func (stringer) String() string { return "from String()" }

// TestDecodeKlogTextOracle writes records with klog's own text logger
// (k8s.io/klog/v2/textlogger, the serializer of kube-controller-manager's
// default output) and checks that the decoder gets back the message and
// every value: strings with quotes, control characters, invalid UTF-8 and
// line breaks (klog's block values), byte slices (%+q), errors, Stringers,
// ObjectRefs and their slices, numbers, structs and maps as JSON.
func TestDecodeKlogTextOracle(t *testing.T) {
	type point struct {
		X, Y int
		Tag  string `json:"tag"`
	}
	values := []struct {
		v    any
		want any // as JSON decodes it
	}{
		{"plain", "plain"},
		{"with \"quotes\" and \\ and \t and \x00 and é", "with \"quotes\" and \\ and \t and \x00 and é"},
		{"two\nlines\n", "two\nlines"},
		{"a\n\tindented\n >not the end", "a\n\tindented\n >not the end"},
		{"bad \xff utf-8", "bad \ufffd utf-8"},
		{[]byte("bytes\n\x01é"), "bytes\n\x01é"},
		{errors.New("an error"), "an error"},
		{stringer{}, "from String()"},
		{klog.KRef("default", "web"), "default/web"},
		{klog.KObjSlice([]klog.KMetadata{nil}), []any{nil}},
		{42, 42.0},
		{-0.25, -0.25},
		{true, true},
		{nil, nil},
		{point{1, 2, "a b=c"}, map[string]any{"X": 1.0, "Y": 2.0, "tag": "a b=c"}},
		{map[string]int{"k": 1}, map[string]any{"k": 1.0}},
		{[]string{"x y", "z"}, []any{"x y", "z"}},
	}
	when := time.Date(2026, 11, 22, 15, 53, 8, 123456000, time.UTC)
	for i, v := range values {
		t.Run(fmt.Sprintf("%d %T", i, v.v), func(t *testing.T) {
			var buf bytes.Buffer
			log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf), textlogger.FixedTime(when)))
			log.WithName("oracle").Info("value \"of\" a type", "key", v.v, "after", 1)
			rec := ingestOne(t, buf.Bytes())
			var fields map[string]any
			if err := json.Unmarshal([]byte(rec.Fields), &fields); err != nil {
				t.Fatalf("%s: %v", rec.Fields, err)
			}
			if d := cmp.Diff(v.want, fields["key"]); d != "" {
				t.Errorf("key from %q (-want +got):\n%s", buf.String(), d)
			}
			if fields["after"] != 1.0 || rec.Msg != `value "of" a type` || rec.Component != "oracle" || rec.Level != "info" {
				t.Errorf("record %+v from %q", rec, buf.String())
			}
		})
	}
	var buf bytes.Buffer
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf), textlogger.FixedTime(when)))
	log.Error(errors.New("boom\nbang"), "failed")
	rec := ingestOne(t, buf.Bytes())
	if rec.Level != "error" || !strings.Contains(rec.Fields, `"err":"boom\nbang"`) {
		t.Errorf("error record %+v from %q", rec, buf.String())
	}
}

// ingestOne ingests text (one klog record, over one line or several) from
// a file and returns its only record.
func ingestOne(t *testing.T, text []byte) logRow {
	t.Helper()
	recs, bad := ingestText(t, "component.log", text)
	if len(bad) > 0 || len(recs) != 1 {
		t.Fatalf("%d records, bad lines %v, from %q", len(recs), bad, text)
	}
	return recs[0]
}

// FuzzKlogText: whatever follows a klog header decodes or is refused
// without a panic; a record decoded holds valid JSON fields with its
// message, in valid UTF-8.
func FuzzKlogText(f *testing.F) {
	for _, s := range []string{`"m" k="v"`, `"m" k=<` + "\n\tx\n >", `plain text`, `"m" k={"a":[1,"]"]}`, `"a\"b" c=1.5e3 d=true`,
		"\"m\" k=<\n\tno end", `"m" k="unterminated`, `"m" =v`, "\"m\" k=\xff", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rest string) {
		line := "I1122 15:53:08.123456 7 x.go:1] " + rest
		_, rec, err := ingest.DecodeLine([]byte(line))
		if err != nil {
			return
		}
		if rec == nil {
			t.Fatalf("no record from %q", line)
		}
		var fields map[string]any
		if err := json.Unmarshal(rec.Fields, &fields); err != nil {
			t.Fatalf("fields %q of %q: %v", rec.Fields, line, err)
		}
		if fields["msg"] != rec.Msg || !utf8.ValidString(rec.Msg) {
			t.Errorf("msg %q, fields %q", rec.Msg, rec.Fields)
		}
	})
}

// FuzzKlogTextOracle: a message and a string value written by klog's text
// logger are read back as they were (a value over lines without its last
// line break, invalid UTF-8 as U+FFFD, as klog's block value and
// encoding/json make them).
func FuzzKlogTextOracle(f *testing.F) {
	for _, s := range [][2]string{{"m", "v"}, {"a \"q\"", "two\nlines"}, {"", "\n"}, {"x", "\t\n >\n"}, {"\xff", "a\xffb\nc"}} {
		f.Add(s[0], s[1])
	}
	when := time.Date(2026, 11, 22, 15, 53, 8, 123456000, time.UTC)
	f.Fuzz(func(t *testing.T, msg, value string) {
		var buf bytes.Buffer
		log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf), textlogger.FixedTime(when)))
		log.Info(msg, "k", value)
		_, rec, err := ingest.DecodeLine(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		if err != nil || rec == nil {
			t.Fatalf("%q: %v", buf.String(), err)
		}
		var fields map[string]any
		if err := json.Unmarshal(rec.Fields, &fields); err != nil {
			t.Fatalf("fields %q: %v", rec.Fields, err)
		}
		want := value
		if strings.Contains(value, "\n") {
			want = strings.TrimSuffix(value, "\n")
		}
		if fields["k"] != viaJSON(want) || rec.Msg != viaJSON(msg) {
			t.Errorf("%q: got msg %q k %q, want %q %q", buf.String(), rec.Msg, fields["k"], viaJSON(msg), viaJSON(want))
		}
	})
}

// viaJSON is s as encoding/json writes and reads it back.
func viaJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	json.Unmarshal(b, &out)
	return out
}
