-- The planner's estimate of an object's writes (resource, namespace and
-- name together): without it PostgreSQL multiplies the three columns'
-- selectivities, expects tens of writes for a Node with 25k, and reads
-- them all to sort them for history's last 200 (0.1 s on 5M events,
-- growing with the object), where the index revisions_object gives them
-- in order (0.3 ms). The most common combinations (mcv) are what it lacks.
CREATE STATISTICS revisions_object_stats (mcv) ON resource, namespace, name FROM revisions;
ANALYZE revisions;
