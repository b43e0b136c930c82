-- Schema v7: causality beyond user changes (docs/CAUSALITY.md).
-- changes.trigger says what started a change: user, node, controller-start,
-- schedule, gc or unknown; trigger_detail what happened, for people.
ALTER TABLE changes ADD COLUMN trigger TEXT NOT NULL DEFAULT 'user';
ALTER TABLE changes ADD COLUMN trigger_detail TEXT NOT NULL DEFAULT '';
-- revisions.explain says why a write waited as long as it did after its
-- cause (informer, requeue, backoff, leader-gap, restart, min-ready,
-- progress-deadline, toleration, node-grace, unschedulable, kubelet,
-- apiserver, unexplained), explain_detail the evidence; confidence how the
-- cause was found (exact: a CPID or an owner reference; heuristic: a time
-- window). NULL for a write without a cause.
ALTER TABLE revisions ADD COLUMN explain TEXT;
ALTER TABLE revisions ADD COLUMN explain_detail TEXT;
ALTER TABLE revisions ADD COLUMN confidence TEXT;
CREATE INDEX changes_trigger ON changes(cluster, trigger, started_ns);
-- Informer starts (lists and watches) are read beside the writes: an
-- index keeps that scan off the rest of the table.
CREATE INDEX audit_events_reads ON audit_events(received_ns) WHERE verb IN ('list', 'watch');
-- What was derived before v7 has none of it: the next reconstruct run of
-- every cluster rebuilds from scratch.
DELETE FROM reconstruct_state;
