-- Schema v20: the partial indexes of the writes (audit_events_writes) and
-- of the lists and watches (audit_events_reads) lead with the cluster, as
-- PostgreSQL's migration 0020 does. Every read of them is one cluster's
-- (reconstruct's scan of the writes after its cutoff, the newest write,
-- the redo's deletes, the evidence of restarts): by time alone, a
-- cluster's read went through every other cluster's rows of its range,
-- each read from the table to test its cluster. A database of one
-- cluster reads the same rows as before. The WHERE stays word for word
-- the one of the queries (writeTerms in sqlite/reconstruct.go).
DROP INDEX audit_events_writes;
CREATE INDEX audit_events_writes ON audit_events(cluster, received_ns)
  WHERE stage IN ('ResponseComplete', 'Panic')
    AND (verb = 'create' OR verb = 'update' OR verb = 'patch' OR verb = 'delete' OR verb = 'deletecollection');
DROP INDEX audit_events_reads;
CREATE INDEX audit_events_reads ON audit_events(cluster, received_ns) WHERE verb IN ('list', 'watch');
