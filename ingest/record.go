// Package ingest decodes kube-apiserver audit logs and controller JSON logs
// into typed records, and reads them from files, directories, compressed files,
// tar bundles and standard input.
package ingest

import (
	"fmt"

	"github.com/cpid-dev/cpid"
)

// LineError is a line that could not be decoded. It never stops a stream: the
// reader reports it and goes on with the next line.
type LineError struct {
	cpid.Pos
	Reason string
	// Count is the bad records the error stands for when more than one:
	// a run of {} items of an EventList is reported once.
	Count int
}

func (e *LineError) Error() string { return fmt.Sprintf("%s: %s", e.Pos, e.Reason) }
