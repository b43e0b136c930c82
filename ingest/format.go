package ingest

import "strings"

// Format is a set of input formats: what the lines of a file were read as,
// or, for a bad line, what it looked like. FileStats.Format holds the
// formats of one input file; most files have one.
type Format uint32

// The formats ingest recognises by content (docs/INPUTS.md).
const (
	FormatAudit       Format = 1 << iota // audit.k8s.io/v1 Event, one per line
	FormatEventList                      // audit.k8s.io/v1 EventList (webhook batch)
	FormatKlogJSON                       // klog --logging-format=json
	FormatZapJSON                        // zap/logr JSON (controller-runtime)
	FormatSlogJSON                       // log/slog JSONHandler
	FormatJSONLog                        // another JSON object with a time and a message
	FormatKlogText                       // klog's text format, the default of Kubernetes components
	FormatGKE                            // Cloud Logging LogEntry holding a Kubernetes AuditLog (GKE)
	FormatEKS                            // CloudWatch Logs event, as aws logs filter-log-events prints it (EKS)
	FormatTimestamped                    // "<RFC 3339 time> <line>": a CloudWatch Logs export to S3 (EKS), kubectl logs --timestamps
	FormatAKS                            // Azure resource log record, category kube-audit or kube-audit-admin (AKS)
	FormatCRI                            // lines in the kubelet's CRI container-log wrapper
	FormatDocument                       // a JSON document printed over many lines (gcloud, aws)
	FormatLegacyAudit                    // the legacy text audit format (not read)
	FormatOther                          // anything else: not read
)

var formatNames = []struct {
	f    Format
	name string
}{
	{FormatAudit, "audit events"},
	{FormatEventList, "audit EventList"},
	{FormatGKE, "GKE Cloud Logging AuditLog"},
	{FormatEKS, "EKS CloudWatch events"},
	{FormatAKS, "AKS diagnostic records"},
	{FormatKlogJSON, "klog JSON"},
	{FormatZapJSON, "zap JSON"},
	{FormatSlogJSON, "slog JSON"},
	{FormatJSONLog, "JSON log"},
	{FormatKlogText, "klog text"},
	{FormatLegacyAudit, "legacy audit text"},
	{FormatOther, "unrecognised"},
}

// String names the formats, the wrappers the reader removed last: "klog
// text (CRI)".
func (f Format) String() string {
	var names []string
	for _, n := range formatNames {
		if f&n.f != 0 {
			names = append(names, n.name)
		}
	}
	s := strings.Join(names, ", ")
	if s == "" {
		s = "empty"
	}
	var wraps []string
	if f&FormatCRI != 0 {
		wraps = append(wraps, "CRI")
	}
	if f&FormatTimestamped != 0 {
		wraps = append(wraps, "timestamped")
	}
	if f&FormatDocument != 0 {
		wraps = append(wraps, "JSON document")
	}
	if len(wraps) > 0 {
		s += " (" + strings.Join(wraps, ", ") + ")"
	}
	return s
}

// Losses says, for each input format that carries less than
// kube-apiserver's own audit log and JSON logs, what it cannot carry and
// what cpid reads instead. The ingest summary prints it as a data-quality
// warning for every format found.
func (f Format) Losses() []string {
	var out []string
	if f&FormatGKE != 0 {
		out = append(out, gkeLoss)
	}
	if f&FormatKlogText != 0 {
		out = append(out, "klog text: the header has no year (inferred: docs/INPUTS.md), no verbosity "+
			"(levels are info, warn, error, fatal) and the caller's file without its directory; "+
			"the component is the logger name, else the program named by the file's path")
	}
	return out
}

// gkeLoss is what a GKE AuditLog entry cannot carry of the audit event it
// was made from (gke.go).
const gkeLoss = "GKE AuditLog entries carry no stage (read as ResponseComplete), one time for the request " +
	"(timestamp, when the entry was emitted: read as both when the request was received and when it completed, " +
	"so writes are ordered by completion and hop latencies leave out the request's own duration), no audit level " +
	"(RequestResponse with a response object, Request with only a request, else Metadata), no requestURI (rebuilt from resourceName without its " +
	"query, so informer starts are not seen), only the user's name (principalEmail), and a resourceVersion only " +
	"where GKE logged the response object (otherwise revisions are ordered by time); the HTTP code comes from the " +
	"response Status, else from status.code"
