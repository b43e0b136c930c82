-- Schema v16: change_search, what the filter of the terminal UI and of
-- query changes reads of a change's writes (issue 31): their distinct
-- names, writers, verbs and codes, one row of texts per change, which
-- reconstruct stores as it summarizes the changes (sqlite/search.go). A
-- key typed in the filter read, for every change whose own row does not
-- hold it, the writes of every name and writer that does (1 million
-- writes among ten million synthetic events); it reads one row per change
-- now, and none when search_terms says that no change can hold it.
CREATE TABLE change_search (
  change_id TEXT PRIMARY KEY, -- changes.id
  cluster   TEXT NOT NULL,
  names     TEXT NOT NULL, -- the distinct lower(name) of its writes, apart by char(31)
  writers   TEXT NOT NULL, -- the distinct lower(writer) of its writes, apart by char(31)
  verbs     TEXT NOT NULL, -- the distinct verb[/subresource] of its writes, apart by char(31)
  codes     TEXT NOT NULL  -- char(31) || code || char(31)... for the codes under 300 of its writes and those of its failed writes; '' when none
);
-- search_terms: every value a change's own row ('o': its namespace, name,
-- resource, user, cluster, lower-cased; 'i': its id, when not made of
-- the characters of a UUID) or its writes ('w': a name or writer; 'v': a
-- verb; 'k': a code, as change_search holds them) held since the table
-- was made: the filter reads a text only when one of them holds it.
-- Values are never removed: one that no change holds any more only makes
-- the filter read the texts.
CREATE TABLE search_terms (
  kind TEXT NOT NULL,
  term TEXT NOT NULL,
  PRIMARY KEY (kind, term)
) WITHOUT ROWID;
CREATE TRIGGER changes_search_terms AFTER INSERT ON changes BEGIN
  INSERT OR IGNORE INTO search_terms(kind, term) VALUES ('o', lower(new.namespace)), ('o', lower(new.name)),
    ('o', lower(new.resource)), ('o', lower(new.user)), ('o', lower(new.cluster));
  INSERT OR IGNORE INTO search_terms(kind, term) SELECT 'i', lower(new.id) WHERE lower(new.id) GLOB '*[^0-9a-f-]*';
END;
CREATE TRIGGER changes_search_terms_update AFTER UPDATE OF id, namespace, name, resource, user, cluster ON changes BEGIN
  INSERT OR IGNORE INTO search_terms(kind, term) VALUES ('o', lower(new.namespace)), ('o', lower(new.name)),
    ('o', lower(new.resource)), ('o', lower(new.user)), ('o', lower(new.cluster));
  INSERT OR IGNORE INTO search_terms(kind, term) SELECT 'i', lower(new.id) WHERE lower(new.id) GLOB '*[^0-9a-f-]*';
END;

-- The rows and values of the changes derived before it: the statements
-- of searchSQL (sqlite/search.go) for every write, as they stood then
-- (TestSearchRows checks that both store the same rows).
INSERT OR IGNORE INTO search_terms(kind, term)
  SELECT 'o', lower(namespace) FROM changes UNION SELECT 'o', lower(name) FROM changes UNION SELECT 'o', lower(resource) FROM changes
  UNION SELECT 'o', lower(user) FROM changes UNION SELECT 'o', lower(cluster) FROM changes
  UNION SELECT 'i', lower(id) FROM changes WHERE lower(id) GLOB '*[^0-9a-f-]*';
CREATE TEMP TABLE IF NOT EXISTS search_w(id TEXT, n TEXT, wr TEXT, v TEXT, k INTEGER);
DELETE FROM temp.search_w;
INSERT INTO temp.search_w SELECT DISTINCT r.change_id, lower(r.name), lower(r.writer),
    e.verb || CASE WHEN e.subresource <> '' THEN '/' || e.subresource ELSE '' END,
    CASE WHEN e.code < 300 OR r.attempt <> 0 THEN e.code END
  FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id IS NOT NULL;
INSERT INTO change_search(change_id, cluster, names, writers, verbs, codes)
  WITH t AS (SELECT DISTINCT id, 0 AS f, n AS x FROM temp.search_w UNION ALL SELECT DISTINCT id, 1, wr FROM temp.search_w
    UNION ALL SELECT DISTINCT id, 2, v FROM temp.search_w UNION ALL SELECT DISTINCT id, 3, k FROM temp.search_w WHERE k IS NOT NULL)
  SELECT c.id, c.cluster, COALESCE(group_concat(CASE WHEN t.f = 0 THEN t.x END, char(31)), ''),
    COALESCE(group_concat(CASE WHEN t.f = 1 THEN t.x END, char(31)), ''),
    COALESCE(group_concat(CASE WHEN t.f = 2 THEN t.x END, char(31)), ''),
    COALESCE(char(31) || group_concat(CASE WHEN t.f = 3 THEN t.x END, char(31)) || char(31), '')
  FROM t JOIN changes c ON c.id = t.id GROUP BY c.id;
INSERT OR IGNORE INTO search_terms(kind, term) SELECT 'w', n FROM temp.search_w UNION SELECT 'w', wr FROM temp.search_w
  UNION SELECT 'v', v FROM temp.search_w UNION SELECT 'k', k FROM temp.search_w WHERE k IS NOT NULL;
DROP TABLE temp.search_w;
