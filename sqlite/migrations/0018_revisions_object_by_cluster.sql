-- Schema v18: an object's writes found by its five columns (issue 31).
-- history counted the writes of the object it names by grouping them,
-- with the least and greatest group and cluster and the first and last
-- write, from revisions_object, whose group and cluster came after the
-- order of the writes (nodes/kwok-node-0 among ten million events,
-- 48,702 writes: 50 ms of the command's 80). Now revisions_object holds
-- the group and cluster right after the name, then the order of the
-- writes: the object's groups and clusters are seeks, its writes one
-- range, its last writes still in order; revisions_object_time holds its
-- writes by time, so that its first and last are seeks too
-- (sqlite/history.go). revisions_names goes: no read has used it since
-- the filter reads change_search (0016), and a run builds as many
-- indexes of the writes as before.
DROP INDEX revisions_object;
CREATE INDEX revisions_object ON revisions(resource, namespace, name, api_group, cluster, seq, attempt, stage_ns);
CREATE INDEX revisions_object_time ON revisions(resource, namespace, name, api_group, cluster, stage_ns);
DROP INDEX revisions_names;
