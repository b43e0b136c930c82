package ingest

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// Managed clusters hand their control plane's logs over in an envelope of
// their cloud's logging service. cpid recognises each by its members and
// decodes what it holds as if it were a line of its own:
//
//   - GKE: a Cloud Logging LogEntry whose protoPayload is an AuditLog of
//     serviceName k8s.io. It is not the audit event but a mapping of it;
//     gke.go builds the audit event back (see gkeLoss for what is lost).
//   - EKS: a CloudWatch Logs event, {"logStreamName", "timestamp" (Unix
//     ms), "message", "ingestionTime", "eventId"}, as aws logs
//     filter-log-events and get-log-events print them
//     (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilteredLogEvent.html);
//     the message is the line kube-apiserver (log stream
//     kube-apiserver-audit-ID) or a controller (kube-controller-manager-ID,
//     klog text) wrote
//     (https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html).
//     An export to S3 writes "<time> <message>" lines instead
//     (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/S3Export.html);
//     the reader removes the time (cutExportTime).
//   - AKS: an Azure Monitor resource log record, {"time", "resourceId",
//     "category", "operationName", "properties"}
//     (https://learn.microsoft.com/azure/azure-monitor/essentials/resource-logs-schema),
//     of category kube-audit or kube-audit-admin for the audit log (and
//     kube-controller-manager, kube-scheduler... for the components'),
//     whose properties.log is the line as a JSON string
//     (https://learn.microsoft.com/azure/aks/monitor-aks-reference), one
//     record a line in a storage account's PT1H.json blobs, or in
//     {"records": [...]} as Event Hubs deliver them.
//
// A JSON array, or an object with an array "events", "records" or
// "entries", holds several; on one line each element is decoded in turn
// (the reader splits the ones printed over many lines: join.go).

// envelope says which envelope the object is; 0 when none. FormatDocument
// stands for an object holding an array of them.
func (d *doc) envelope() Format {
	b := d.Buf
	var gke, msg, ts, cw, cat, log, arr bool
	for i := range d.Members {
		m := &d.Members[i]
		c := b[m.ValStart]
		switch string(m.Key(b)) {
		case "protoPayload":
			gke = c == '{'
		case "message":
			msg = c == '"'
		case "timestamp":
			ts = c != '"' && c != '{' && c != '['
		case "logStreamName", "eventId", "ingestionTime":
			cw = true
		case "category":
			cat = c == '"'
		case "properties":
			log = c == '{' && isString(b, memberOf(b, m.Val(), "log"))
		case "events", "records", "entries":
			arr = arr || c == '['
		}
	}
	switch {
	case gke:
		return FormatGKE
	case msg && ts && cw:
		return FormatEKS
	case cat && log:
		return FormatAKS
	case arr:
		return FormatDocument
	}
	return 0
}

// memberOf returns the value of key in the object at v, or nothing.
func memberOf(b []byte, v span, key string) span {
	var out span
	if !v.OK() || b[v.S] != '{' {
		return out
	}
	var m jsonscan.Member
	for it := jsonscan.Members(b, v.S); it.Next(&m); {
		if string(m.Key(b)) == key {
			out = m.Val()
		}
	}
	return out
}

// top returns the value of a top-level member of the doc.
func (d *doc) top(key string) span {
	var out span
	for i := range d.Members {
		if string(d.Members[i].Key(d.Buf)) == key {
			out = d.Members[i].Val()
		}
	}
	return out
}

// unwrap decodes what the envelope env holds.
func (d *doc) unwrap(env Format, li lineInfo, red *Redaction) (audits []cpid.AuditEvent, logs []cpid.LogRecord, f Format, err error) {
	b := d.Buf
	inner := lineInfo{component: li.component, level: 2}
	var content []byte
	switch env {
	case FormatGKE:
		ev, err := gkeEvent(d)
		if err != nil {
			return nil, nil, FormatGKE, err
		}
		audits, _, _, err = decodeAt(ev, inner, red, true)
		return audits, nil, FormatGKE, err
	case FormatEKS:
		content, _ = jsonscan.String(b, d.top("message"))
		if ts := d.top("timestamp"); ts.OK() {
			inner.ref.ns, _ = epochNS(b[ts.S:ts.E])
		}
		if s, ok := jsonscan.String(b, d.top("logStreamName")); ok {
			inner.component = streamID.ReplaceAllString(string(s), "")
		}
	case FormatAKS:
		content, _ = jsonscan.String(b, memberOf(b, d.top("properties"), "log"))
		if s, ok := jsonscan.String(b, d.top("time")); ok {
			inner.ref.ns, _ = parseTime(s, true)
		}
		if s, ok := jsonscan.String(b, d.top("category")); ok {
			inner.component = string(s)
		}
	case FormatDocument:
		var arr span
		for _, k := range []string{"events", "records", "entries"} {
			if v := d.top(k); v.OK() && b[v.S] == '[' {
				arr = v
				break
			}
		}
		return decodeArray(b[arr.S:arr.E], li, red)
	default:
		return nil, nil, FormatOther, errors.New("unknown envelope")
	}
	audits, logs, f, err = decodeAt(content, inner, red, false)
	if err == nil && f == 0 {
		err = fmt.Errorf("%s: empty message", env)
	}
	return audits, logs, env | f, err
}

// streamID is the instance suffix of an EKS log stream's name
// (kube-controller-manager-2b0c7c6f0f7a4ae1b8d2e9f4a1c3d5e6).
var streamID = regexp.MustCompile(`-[0-9a-f]{16,}$`)
