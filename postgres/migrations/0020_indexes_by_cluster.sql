-- The partial indexes of the writes (audit_events_writes) and of the lists
-- and watches (audit_events_reads) lead with the cluster. Every read of
-- them is one cluster's (reconstruct's scan of the writes after its
-- cutoff, the newest write, the late writes, the redo's deletes, the
-- evidence of restarts), and by time alone a cluster's read went through
-- every other cluster's rows in its range, each fetched from the table to
-- test its cluster: in a database of four clusters of 100,000 events, the
-- newest write of the cluster whose events were the oldest took 66-90 ms
-- (109,819 rows of the others passed), and the scan after its cutoff
-- 62 ms for 199 writes; 0.06 and 0.09 ms by cluster. A database of one
-- cluster reads the same rows as before, from an index a little larger.
DROP INDEX audit_events_writes;
CREATE INDEX audit_events_writes ON audit_events(cluster, received_ns)
  WHERE stage IN ('ResponseComplete', 'Panic')
    AND verb IN ('create', 'update', 'patch', 'delete', 'deletecollection');
DROP INDEX audit_events_reads;
CREATE INDEX audit_events_reads ON audit_events(cluster, received_ns) WHERE verb IN ('list', 'watch');
