package reconstruct

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cpid-dev/cpid"
)

type logRecord struct {
	Format   int             `json:"cpid.format"`
	CPID     string          `json:"cpid"`
	Sources  []string        `json:"sources"`
	Service  string          `json:"service"`
	SpanID   string          `json:"span_id"`
	ParentID string          `json:"parent_id"`
	Name     string          `json:"name"`
	Start    string          `json:"start"`
	End      string          `json:"end"`
	Attrs    json.RawMessage `json:"attrs"`
}

func parseRecord(fields []byte) (logRecord, error) {
	var r logRecord
	if err := json.Unmarshal(fields, &r); err != nil {
		return r, err
	}
	if r.Format != 1 {
		return r, fmt.Errorf("cpid.format %d is not supported (this cpid reads format 1)", r.Format)
	}
	if r.CPID == "" {
		return r, errors.New("no cpid")
	}
	return r, nil
}

// ParseMergelog reads a mergelog record from the fields of a log line; tsNS
// is the line's time, the mergelog's timestamp.
func ParseMergelog(fields []byte, tsNS int64) (cpid.Mergelog, error) {
	r, err := parseRecord(fields)
	if err != nil {
		return cpid.Mergelog{}, fmt.Errorf("mergelog record: %w", err)
	}
	return cpid.Mergelog{CPID: r.CPID, Sources: r.Sources, TimeNS: tsNS, Service: r.Service, Origin: cpid.OriginLog}, nil
}

// ParseSpan reads a span record from the fields of a log line.
func ParseSpan(fields []byte) (cpid.Span, error) {
	r, err := parseRecord(fields)
	if err != nil {
		return cpid.Span{}, fmt.Errorf("span record: %w", err)
	}
	start, err1 := time.Parse(time.RFC3339Nano, r.Start)
	end, err2 := time.Parse(time.RFC3339Nano, r.End)
	if err := errors.Join(err1, err2); err != nil || r.SpanID == "" {
		return cpid.Span{}, fmt.Errorf("span record: bad span_id, start or end: %v", err)
	}
	return cpid.Span{CPID: r.CPID, SpanID: r.SpanID, ParentID: r.ParentID, Service: r.Service, Name: r.Name,
		StartNS: start.UnixNano(), EndNS: end.UnixNano(), Attrs: r.Attrs}, nil
}
