package cpid

import "context"

// ResourceMatch names a resource as a person may type it, without the
// API discovery kubectl has: any of a few candidate resource names (the
// plural a built-in resource is known by, or the spellings an unknown one
// may have), in one API group or in any.
type ResourceMatch struct {
	Resources []string
	Group     string
	AnyGroup  bool
}

// ObjectQuery finds the objects with writes that a kubectl-style
// reference (deploy/web, deployments.apps/web, node/n1) may name.
type ObjectQuery struct {
	ResourceMatch
	// Name is the object's name; "" finds every object of the resource
	// (kubectl get pods, k9s's :pods).
	Name string
	// Namespace is the object's namespace ("" for a cluster-scoped one);
	// with AllNamespaces, objects of that name in every namespace (and
	// cluster-scoped ones) are found.
	Namespace     string
	AllNamespaces bool
	// KeysOnly asks which objects there are, not how many writes each has
	// nor when: an engine may leave ObjectMatch's Writes, FirstNS and
	// LastNS 0 (PostgreSQL does for a Name and one resource: counting read
	// every write of the object, 48,702 for the busiest Node of ten
	// million events).
	KeysOnly bool
}

// ObjectNameQuery selects the objects with writes whose name starts with
// Prefix, to complete a reference (cpid-tui history deploy/w<TAB>).
type ObjectNameQuery struct {
	ResourceMatch
	Prefix string
	// Namespace and AllNamespaces are as in ObjectQuery.
	Namespace     string
	AllNamespaces bool
	Limit         int
}

// ObjectLister lists what has writes, for completion; the engines
// implement it. It is not part of ChangeReader, which other renderings
// wrap, since only the command line completes.
type ObjectLister interface {
	// WrittenResources returns the resources with writes, in order.
	WrittenResources(ctx context.Context) ([]string, error)
	// ObjectNames returns the objects with writes that q selects (without
	// their cluster), ordered by name, namespace, resource and group, at
	// most q.Limit.
	ObjectNames(ctx context.Context, q ObjectNameQuery) ([]ObjectKey, error)
}

// ObjectMatch is an object a reference found, with how many writes it has
// and when the first and the last were.
type ObjectMatch struct {
	ObjectKey
	Writes          int
	FirstNS, LastNS int64
}

// HistoryQuery selects writes of one object for ObjectHistory.
type HistoryQuery struct {
	// Object is the object; its Cluster may be "" in a view of one cluster.
	Object ObjectKey
	// SinceNS and UntilNS keep the writes completed in [SinceNS, UntilNS);
	// 0 leaves that side open.
	SinceNS, UntilNS int64
	// Writer and User keep the writes whose writer or user name contains
	// them (case-insensitive); Trigger those of changes with that trigger.
	Writer, User string
	Trigger      Trigger
	// Limit keeps the last Limit writes (0: every write).
	Limit int
	// Bodies reads the object each write stored and its request body
	// (reading a body decompresses its block: ask only when shown).
	Bodies bool
}

// WriteRef names a write: the cause of another.
type WriteRef struct {
	EventID     int64  `json:"event_id"`
	NS          int64  `json:"ns"`
	Writer      string `json:"writer"`
	Verb        string `json:"verb"`
	Subresource string `json:"subresource"`
	APIGroup    string `json:"api_group"`
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
}

// ObjectWrite is one write of an object, failed ones included: when, who
// wrote it (the writer reconstruct named, and the user and user agent the
// audit log has), the change it belongs to and what caused it.
type ObjectWrite struct {
	EventID         int64  `json:"event_id"`
	Cluster         string `json:"cluster"`
	Seq             int    `json:"seq"`
	OrderBy         string `json:"order_by"`
	NS              int64  `json:"ns"`
	ReceivedNS      int64  `json:"received_ns"`
	Verb            string `json:"verb"`
	Subresource     string `json:"subresource"`
	Code            int    `json:"code"`
	Attempt         bool   `json:"attempt"`
	Level           string `json:"level"`
	ResourceVersion string `json:"resource_version"`
	Writer          string `json:"writer"`
	WriterIsUser    bool   `json:"writer_is_user"`
	User            string `json:"user"`
	UserAgent       string `json:"user_agent"`
	CPID            string `json:"cpid"`
	Origin          string `json:"origin"`
	// Change is the change the write belongs to ("" for a background
	// write), Trigger and TriggerDetail what started that change.
	Change        string  `json:"change"`
	Trigger       Trigger `json:"trigger"`
	TriggerDetail string  `json:"trigger_detail"`
	// Rule found Cause; HopNS is from the cause becoming visible to this
	// write completing (TimelineEntry.HopNS), Explain why it took that.
	Rule          string     `json:"rule"`
	Cause         *WriteRef  `json:"cause"`
	HopNS         int64      `json:"hop_ns"`
	Explain       Explain    `json:"explain"`
	ExplainDetail string     `json:"explain_detail"`
	Confidence    Confidence `json:"confidence"`
	// Object is the object as the write stored it (JSON) and Request the
	// request body, when HistoryQuery.Bodies asked and the audit level
	// recorded them (Revision.Object).
	Object  string `json:"object,omitempty"`
	Request string `json:"request,omitempty"`
}
