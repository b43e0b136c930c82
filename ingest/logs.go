package ingest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// DecodeLog decodes one structured log line of a controller into a
// LogRecord. It reads the JSON of
//
//   - klog's JSON format (--logging-format=json of kube-controller-manager and
//     kube-scheduler): "ts" in Unix milliseconds, "caller", "msg", "v" on
//     info lines and no "v" on error lines, which may carry "err";
//   - zap through logr, as controller-runtime writes it: "level", "ts" in
//     Unix seconds or as text, "logger" (a reconciler's lines have none, and
//     name their controller in "controller"), "msg";
//   - log/slog's JSONHandler: "time", "level", "msg", "source".
//
// A numeric time is read as seconds, milliseconds, microseconds or
// nanoseconds since the epoch depending on its magnitude (below 1e11, 1e14,
// 1e17, or above); a text time is RFC 3339 or zap's ISO 8601. The time
// ("ts", "time" or "timestamp") and the message ("msg" or "message") are
// required. Keys are matched exactly; the last of duplicated keys wins.
// Invalid UTF-8 rejects the line. The result does not alias line.
func DecodeLog(line []byte) (cpid.LogRecord, error) {
	line = trimSpace(line)
	d := getDoc(nil)
	defer d.Release()
	if err := d.parse(line); err != nil {
		return cpid.LogRecord{}, err
	}
	return d.log()
}

// Indexes of logKeys.
const (
	lTS = iota
	lTime
	lTimestamp
	lMsg
	lMessage
	lLevel
	lV
	lLogger
	lComponent
	lCaller
	lSource
	lCPID
	lController
	nLogKeys
)

var logKeys = [nLogKeys]string{"ts", "time", "timestamp", "msg", "message", "level", "v",
	"logger", "component", "caller", "source", "cpid", "controller"}

func (d *doc) log() (cpid.LogRecord, error) {
	var r cpid.LogRecord
	if !d.Own {
		d.Buf = bytes.Clone(d.Buf)
		d.Own = true
	}
	b := d.Buf
	var v [nLogKeys]span
	for i := range d.Members {
		m := &d.Members[i]
		k := m.Key(b)
		for j := range logKeys {
			if string(k) == logKeys[j] {
				v[j] = m.Val()
				break
			}
		}
	}

	var ts span
	var tsName string
	for _, i := range []int{lTS, lTime, lTimestamp} {
		if v[i].OK() {
			ts, tsName = v[i], logKeys[i]
			break
		}
	}
	if !ts.OK() {
		return r, errors.New("no time field")
	}
	var ok bool
	switch b[ts.S] {
	case '"':
		r.TimeNS, ok = parseTime(strOf(b, ts), true)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		r.TimeNS, ok = epochNS(b[ts.S:ts.E])
	}
	if !ok {
		return r, fmt.Errorf("invalid time field %q: %.40s", tsName, b[ts.S:ts.E])
	}

	msg := v[lMsg]
	if !msg.OK() {
		msg = v[lMessage]
	}
	switch {
	case !msg.OK():
		return r, errors.New("no msg field")
	case b[msg.S] != '"':
		return r, errors.New("msg: want string")
	}

	var t strtab
	t.add(&r.Msg, b, msg)
	t.add(&r.CPID, b, v[lCPID])
	klog := b[ts.S] != '"' && isString(b, v[lCaller])
	r.Level = level(b, v[lLevel], v[lV], klog)
	switch {
	case firstString(b, v[lLogger]).OK():
		t.add(&r.Component, b, v[lLogger])
	case firstString(b, v[lComponent]).OK():
		t.add(&r.Component, b, v[lComponent])
	case isString(b, v[lCaller]):
		// Drop the line number: "deployment/deployment_controller.go:123".
		c := strOf(b, v[lCaller])
		if i := bytes.LastIndexByte(c, ':'); i > 0 {
			if _, ok := jsonscan.ParseInt(c[i+1:], 64); ok {
				c = c[:i]
			}
		}
		t.addBytes(&r.Component, c)
	case v[lSource].OK() && b[v[lSource].S] == '{':
		var m member
		for it := jsonscan.Members(b, v[lSource].S); it.Next(&m); {
			if keyIs(b, &m, "file") {
				t.add(&r.Component, b, m.Val())
			}
		}
	case firstString(b, v[lController]).OK():
		// controller-runtime's reconcilers log with no logger name and
		// the controller's name in "controller".
		t.add(&r.Component, b, v[lController])
	}
	t.done()
	r.Fields = b
	sum := sha256.Sum256(b)
	copy(r.Hash[:], sum[:])
	return r, nil
}

// level normalizes a level to info, warn, error, debug or "v=N".
func level(b []byte, lv, v span, klog bool) string {
	if !lv.OK() {
		// klog's JSON format has no level: info lines carry their verbosity
		// "v", error lines do not.
		if n, ok := intValue(b, v); ok {
			return verbosity(n)
		}
		if klog {
			return "error"
		}
		return ""
	}
	if n, ok := intValue(b, lv); ok {
		// zap's numeric levels; logr's V(n) is zap level -n.
		switch {
		case n <= -1:
			return verbosity(-n)
		case n <= 5:
			return [...]string{"info", "warn", "error", "dpanic", "panic", "fatal"}[n]
		}
		return strconv.FormatInt(n, 10)
	}
	s, ok := jsonscan.String(b, lv)
	if !ok {
		return ""
	}
	s = bytes.ToLower(s)
	// zap writes levels below debug as "Level(-2)".
	if bytes.HasPrefix(s, []byte("level(")) && bytes.HasSuffix(s, []byte(")")) {
		if n, ok := jsonscan.ParseInt(s[len("level("):len(s)-1], 64); ok && n < 0 {
			return verbosity(-n)
		}
	}
	switch string(s) {
	case "warning":
		return "warn"
	case "info", "warn", "error", "debug", "dpanic", "panic", "fatal", "trace":
		return vocabulary[string(s)]
	}
	return string(s)
}

// verbosity names klog verbosity n: V(0) is plain info, V(1) is zap's debug.
func verbosity(n int64) string {
	if n == 0 {
		return "info"
	}
	return "v=" + strconv.FormatInt(n, 10)
}

func intValue(b []byte, v span) (int64, bool) {
	if !v.OK() {
		return 0, false
	}
	return jsonscan.ParseInt(b[v.S:v.E], 64)
}

// epochNS converts a JSON number of seconds, milliseconds, microseconds or
// nanoseconds since the epoch, told apart by magnitude, to nanoseconds.
func epochNS(lit []byte) (int64, bool) {
	if lit[0] == '-' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f <= 0 || f >= 1e20 {
		return 0, false
	}
	scale := 0 // power of ten from the unit to nanoseconds
	switch {
	case f < 1e11:
		scale = 9
	case f < 1e14:
		scale = 6
	case f < 1e17:
		scale = 3
	}
	// Exact decimal arithmetic: float64 loses nanoseconds.
	var mant uint64
	exp := scale
	nd := 0
	i := 0
	seenDot := false
	for ; i < len(lit); i++ {
		c := lit[i]
		if c == '.' {
			seenDot = true
			continue
		}
		if !isDigit(c) {
			break
		}
		if nd < 19 {
			if mant != 0 || c != '0' {
				nd++
			}
			mant = mant*10 + uint64(c-'0')
			if seenDot {
				exp--
			}
		} else if !seenDot {
			exp++
		}
	}
	if i < len(lit) { // exponent
		e, ok := jsonscan.ParseInt(bytes.TrimPrefix(lit[i+1:], []byte("+")), 32)
		if !ok {
			return 0, false
		}
		exp += int(e)
	}
	for ; exp < 0; exp++ {
		mant /= 10
	}
	for ; exp > 0; exp-- {
		if mant > (1<<63-1)/10 {
			return 0, false
		}
		mant *= 10
	}
	if mant == 0 || mant > 1<<63-1 {
		return 0, false
	}
	return int64(mant), true
}
