-- Schema v9: W3C trace context (KEP-5915's tracing.k8s.io/traceparent).
-- audit_events.traceparent is the annotation of the event's object (the
-- response's, else the request's), canonical, NULL when it has none;
-- changes.traceparent the one the change's root write set (a traced client
-- started the change), '' otherwise. Events stored before v9 get theirs
-- from their bodies in the migration's step; what was derived before has
-- none, so the next reconstruct run of every cluster rebuilds.
ALTER TABLE audit_events ADD COLUMN traceparent TEXT;
ALTER TABLE changes ADD COLUMN traceparent TEXT NOT NULL DEFAULT '';
DELETE FROM reconstruct_state;
