-- Schema v13: what the terminal UI and the commands read at every start
-- and every listing, at any size (issue 31).
--
-- mergelogs_cpid: a CPID's mergelogs. The walks of the merge DAG (the
-- change view's origins and descendants, query related and origins) join
-- mergelogs on cpid alone, which the unique index (cluster, cpid, origin)
-- does not lead with: SQLite built an automatic index of every mergelog
-- for each walk.
CREATE INDEX mergelogs_cpid ON mergelogs(cpid);

-- cpid_ids: every CPID of the merge graph (a mergelog's or a source's),
-- once, with how many of those rows name it and how many characters it
-- shares with the next one in order. The shortest prefix that tells the
-- ids of the database apart (cpid.IDLength: the ids the commands and the
-- UI print) is then one more than the largest of these, read from an
-- index, instead of a sort of every CPID at every command. The triggers
-- below keep it: a CPID added or gone changes its own row and its
-- predecessor's. 40 (shared) means at least that many: readers
-- then count from the CPIDs themselves.
CREATE TABLE cpid_ids (
  cpid   TEXT    PRIMARY KEY,
  refs   INTEGER NOT NULL,
  shared INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX cpid_ids_shared ON cpid_ids(shared);

INSERT INTO cpid_ids(cpid, refs, shared)
  SELECT cpid, count(*), 0 FROM (SELECT cpid FROM mergelogs UNION ALL SELECT source_cpid FROM mergelog_sources)
  GROUP BY cpid;
UPDATE cpid_ids SET shared = (SELECT CASE
      WHEN substr(cpid_ids.cpid, 1, 1) <> substr(n.cpid, 1, 1) THEN 0
      WHEN substr(cpid_ids.cpid, 2, 1) <> substr(n.cpid, 2, 1) THEN 1
      WHEN substr(cpid_ids.cpid, 3, 1) <> substr(n.cpid, 3, 1) THEN 2
      WHEN substr(cpid_ids.cpid, 4, 1) <> substr(n.cpid, 4, 1) THEN 3
      WHEN substr(cpid_ids.cpid, 5, 1) <> substr(n.cpid, 5, 1) THEN 4
      WHEN substr(cpid_ids.cpid, 6, 1) <> substr(n.cpid, 6, 1) THEN 5
      WHEN substr(cpid_ids.cpid, 7, 1) <> substr(n.cpid, 7, 1) THEN 6
      WHEN substr(cpid_ids.cpid, 8, 1) <> substr(n.cpid, 8, 1) THEN 7
      WHEN substr(cpid_ids.cpid, 9, 1) <> substr(n.cpid, 9, 1) THEN 8
      WHEN substr(cpid_ids.cpid, 10, 1) <> substr(n.cpid, 10, 1) THEN 9
      WHEN substr(cpid_ids.cpid, 11, 1) <> substr(n.cpid, 11, 1) THEN 10
      WHEN substr(cpid_ids.cpid, 12, 1) <> substr(n.cpid, 12, 1) THEN 11
      WHEN substr(cpid_ids.cpid, 13, 1) <> substr(n.cpid, 13, 1) THEN 12
      WHEN substr(cpid_ids.cpid, 14, 1) <> substr(n.cpid, 14, 1) THEN 13
      WHEN substr(cpid_ids.cpid, 15, 1) <> substr(n.cpid, 15, 1) THEN 14
      WHEN substr(cpid_ids.cpid, 16, 1) <> substr(n.cpid, 16, 1) THEN 15
      WHEN substr(cpid_ids.cpid, 17, 1) <> substr(n.cpid, 17, 1) THEN 16
      WHEN substr(cpid_ids.cpid, 18, 1) <> substr(n.cpid, 18, 1) THEN 17
      WHEN substr(cpid_ids.cpid, 19, 1) <> substr(n.cpid, 19, 1) THEN 18
      WHEN substr(cpid_ids.cpid, 20, 1) <> substr(n.cpid, 20, 1) THEN 19
      WHEN substr(cpid_ids.cpid, 21, 1) <> substr(n.cpid, 21, 1) THEN 20
      WHEN substr(cpid_ids.cpid, 22, 1) <> substr(n.cpid, 22, 1) THEN 21
      WHEN substr(cpid_ids.cpid, 23, 1) <> substr(n.cpid, 23, 1) THEN 22
      WHEN substr(cpid_ids.cpid, 24, 1) <> substr(n.cpid, 24, 1) THEN 23
      WHEN substr(cpid_ids.cpid, 25, 1) <> substr(n.cpid, 25, 1) THEN 24
      WHEN substr(cpid_ids.cpid, 26, 1) <> substr(n.cpid, 26, 1) THEN 25
      WHEN substr(cpid_ids.cpid, 27, 1) <> substr(n.cpid, 27, 1) THEN 26
      WHEN substr(cpid_ids.cpid, 28, 1) <> substr(n.cpid, 28, 1) THEN 27
      WHEN substr(cpid_ids.cpid, 29, 1) <> substr(n.cpid, 29, 1) THEN 28
      WHEN substr(cpid_ids.cpid, 30, 1) <> substr(n.cpid, 30, 1) THEN 29
      WHEN substr(cpid_ids.cpid, 31, 1) <> substr(n.cpid, 31, 1) THEN 30
      WHEN substr(cpid_ids.cpid, 32, 1) <> substr(n.cpid, 32, 1) THEN 31
      WHEN substr(cpid_ids.cpid, 33, 1) <> substr(n.cpid, 33, 1) THEN 32
      WHEN substr(cpid_ids.cpid, 34, 1) <> substr(n.cpid, 34, 1) THEN 33
      WHEN substr(cpid_ids.cpid, 35, 1) <> substr(n.cpid, 35, 1) THEN 34
      WHEN substr(cpid_ids.cpid, 36, 1) <> substr(n.cpid, 36, 1) THEN 35
      WHEN substr(cpid_ids.cpid, 37, 1) <> substr(n.cpid, 37, 1) THEN 36
      WHEN substr(cpid_ids.cpid, 38, 1) <> substr(n.cpid, 38, 1) THEN 37
      WHEN substr(cpid_ids.cpid, 39, 1) <> substr(n.cpid, 39, 1) THEN 38
      WHEN substr(cpid_ids.cpid, 40, 1) <> substr(n.cpid, 40, 1) THEN 39
      ELSE 40 END
    FROM cpid_ids n WHERE n.cpid > cpid_ids.cpid ORDER BY n.cpid LIMIT 1)
  WHERE cpid < (SELECT max(cpid) FROM cpid_ids);

CREATE TRIGGER mergelogs_cpid_add AFTER INSERT ON mergelogs BEGIN
  UPDATE cpid_ids SET shared = CASE
      WHEN substr(cpid, 1, 1) <> substr(NEW.cpid, 1, 1) THEN 0
      WHEN substr(cpid, 2, 1) <> substr(NEW.cpid, 2, 1) THEN 1
      WHEN substr(cpid, 3, 1) <> substr(NEW.cpid, 3, 1) THEN 2
      WHEN substr(cpid, 4, 1) <> substr(NEW.cpid, 4, 1) THEN 3
      WHEN substr(cpid, 5, 1) <> substr(NEW.cpid, 5, 1) THEN 4
      WHEN substr(cpid, 6, 1) <> substr(NEW.cpid, 6, 1) THEN 5
      WHEN substr(cpid, 7, 1) <> substr(NEW.cpid, 7, 1) THEN 6
      WHEN substr(cpid, 8, 1) <> substr(NEW.cpid, 8, 1) THEN 7
      WHEN substr(cpid, 9, 1) <> substr(NEW.cpid, 9, 1) THEN 8
      WHEN substr(cpid, 10, 1) <> substr(NEW.cpid, 10, 1) THEN 9
      WHEN substr(cpid, 11, 1) <> substr(NEW.cpid, 11, 1) THEN 10
      WHEN substr(cpid, 12, 1) <> substr(NEW.cpid, 12, 1) THEN 11
      WHEN substr(cpid, 13, 1) <> substr(NEW.cpid, 13, 1) THEN 12
      WHEN substr(cpid, 14, 1) <> substr(NEW.cpid, 14, 1) THEN 13
      WHEN substr(cpid, 15, 1) <> substr(NEW.cpid, 15, 1) THEN 14
      WHEN substr(cpid, 16, 1) <> substr(NEW.cpid, 16, 1) THEN 15
      WHEN substr(cpid, 17, 1) <> substr(NEW.cpid, 17, 1) THEN 16
      WHEN substr(cpid, 18, 1) <> substr(NEW.cpid, 18, 1) THEN 17
      WHEN substr(cpid, 19, 1) <> substr(NEW.cpid, 19, 1) THEN 18
      WHEN substr(cpid, 20, 1) <> substr(NEW.cpid, 20, 1) THEN 19
      WHEN substr(cpid, 21, 1) <> substr(NEW.cpid, 21, 1) THEN 20
      WHEN substr(cpid, 22, 1) <> substr(NEW.cpid, 22, 1) THEN 21
      WHEN substr(cpid, 23, 1) <> substr(NEW.cpid, 23, 1) THEN 22
      WHEN substr(cpid, 24, 1) <> substr(NEW.cpid, 24, 1) THEN 23
      WHEN substr(cpid, 25, 1) <> substr(NEW.cpid, 25, 1) THEN 24
      WHEN substr(cpid, 26, 1) <> substr(NEW.cpid, 26, 1) THEN 25
      WHEN substr(cpid, 27, 1) <> substr(NEW.cpid, 27, 1) THEN 26
      WHEN substr(cpid, 28, 1) <> substr(NEW.cpid, 28, 1) THEN 27
      WHEN substr(cpid, 29, 1) <> substr(NEW.cpid, 29, 1) THEN 28
      WHEN substr(cpid, 30, 1) <> substr(NEW.cpid, 30, 1) THEN 29
      WHEN substr(cpid, 31, 1) <> substr(NEW.cpid, 31, 1) THEN 30
      WHEN substr(cpid, 32, 1) <> substr(NEW.cpid, 32, 1) THEN 31
      WHEN substr(cpid, 33, 1) <> substr(NEW.cpid, 33, 1) THEN 32
      WHEN substr(cpid, 34, 1) <> substr(NEW.cpid, 34, 1) THEN 33
      WHEN substr(cpid, 35, 1) <> substr(NEW.cpid, 35, 1) THEN 34
      WHEN substr(cpid, 36, 1) <> substr(NEW.cpid, 36, 1) THEN 35
      WHEN substr(cpid, 37, 1) <> substr(NEW.cpid, 37, 1) THEN 36
      WHEN substr(cpid, 38, 1) <> substr(NEW.cpid, 38, 1) THEN 37
      WHEN substr(cpid, 39, 1) <> substr(NEW.cpid, 39, 1) THEN 38
      WHEN substr(cpid, 40, 1) <> substr(NEW.cpid, 40, 1) THEN 39
      ELSE 40 END
    WHERE cpid = (SELECT max(cpid) FROM cpid_ids WHERE cpid < NEW.cpid)
      AND NOT EXISTS (SELECT 1 FROM cpid_ids WHERE cpid = NEW.cpid);
  INSERT OR IGNORE INTO cpid_ids(cpid, refs, shared)
    VALUES (NEW.cpid, 0, COALESCE((SELECT CASE
      WHEN substr(NEW.cpid, 1, 1) <> substr(n.cpid, 1, 1) THEN 0
      WHEN substr(NEW.cpid, 2, 1) <> substr(n.cpid, 2, 1) THEN 1
      WHEN substr(NEW.cpid, 3, 1) <> substr(n.cpid, 3, 1) THEN 2
      WHEN substr(NEW.cpid, 4, 1) <> substr(n.cpid, 4, 1) THEN 3
      WHEN substr(NEW.cpid, 5, 1) <> substr(n.cpid, 5, 1) THEN 4
      WHEN substr(NEW.cpid, 6, 1) <> substr(n.cpid, 6, 1) THEN 5
      WHEN substr(NEW.cpid, 7, 1) <> substr(n.cpid, 7, 1) THEN 6
      WHEN substr(NEW.cpid, 8, 1) <> substr(n.cpid, 8, 1) THEN 7
      WHEN substr(NEW.cpid, 9, 1) <> substr(n.cpid, 9, 1) THEN 8
      WHEN substr(NEW.cpid, 10, 1) <> substr(n.cpid, 10, 1) THEN 9
      WHEN substr(NEW.cpid, 11, 1) <> substr(n.cpid, 11, 1) THEN 10
      WHEN substr(NEW.cpid, 12, 1) <> substr(n.cpid, 12, 1) THEN 11
      WHEN substr(NEW.cpid, 13, 1) <> substr(n.cpid, 13, 1) THEN 12
      WHEN substr(NEW.cpid, 14, 1) <> substr(n.cpid, 14, 1) THEN 13
      WHEN substr(NEW.cpid, 15, 1) <> substr(n.cpid, 15, 1) THEN 14
      WHEN substr(NEW.cpid, 16, 1) <> substr(n.cpid, 16, 1) THEN 15
      WHEN substr(NEW.cpid, 17, 1) <> substr(n.cpid, 17, 1) THEN 16
      WHEN substr(NEW.cpid, 18, 1) <> substr(n.cpid, 18, 1) THEN 17
      WHEN substr(NEW.cpid, 19, 1) <> substr(n.cpid, 19, 1) THEN 18
      WHEN substr(NEW.cpid, 20, 1) <> substr(n.cpid, 20, 1) THEN 19
      WHEN substr(NEW.cpid, 21, 1) <> substr(n.cpid, 21, 1) THEN 20
      WHEN substr(NEW.cpid, 22, 1) <> substr(n.cpid, 22, 1) THEN 21
      WHEN substr(NEW.cpid, 23, 1) <> substr(n.cpid, 23, 1) THEN 22
      WHEN substr(NEW.cpid, 24, 1) <> substr(n.cpid, 24, 1) THEN 23
      WHEN substr(NEW.cpid, 25, 1) <> substr(n.cpid, 25, 1) THEN 24
      WHEN substr(NEW.cpid, 26, 1) <> substr(n.cpid, 26, 1) THEN 25
      WHEN substr(NEW.cpid, 27, 1) <> substr(n.cpid, 27, 1) THEN 26
      WHEN substr(NEW.cpid, 28, 1) <> substr(n.cpid, 28, 1) THEN 27
      WHEN substr(NEW.cpid, 29, 1) <> substr(n.cpid, 29, 1) THEN 28
      WHEN substr(NEW.cpid, 30, 1) <> substr(n.cpid, 30, 1) THEN 29
      WHEN substr(NEW.cpid, 31, 1) <> substr(n.cpid, 31, 1) THEN 30
      WHEN substr(NEW.cpid, 32, 1) <> substr(n.cpid, 32, 1) THEN 31
      WHEN substr(NEW.cpid, 33, 1) <> substr(n.cpid, 33, 1) THEN 32
      WHEN substr(NEW.cpid, 34, 1) <> substr(n.cpid, 34, 1) THEN 33
      WHEN substr(NEW.cpid, 35, 1) <> substr(n.cpid, 35, 1) THEN 34
      WHEN substr(NEW.cpid, 36, 1) <> substr(n.cpid, 36, 1) THEN 35
      WHEN substr(NEW.cpid, 37, 1) <> substr(n.cpid, 37, 1) THEN 36
      WHEN substr(NEW.cpid, 38, 1) <> substr(n.cpid, 38, 1) THEN 37
      WHEN substr(NEW.cpid, 39, 1) <> substr(n.cpid, 39, 1) THEN 38
      WHEN substr(NEW.cpid, 40, 1) <> substr(n.cpid, 40, 1) THEN 39
      ELSE 40 END
      FROM cpid_ids n WHERE n.cpid > NEW.cpid ORDER BY n.cpid LIMIT 1), 0));
  UPDATE cpid_ids SET refs = refs + 1 WHERE cpid = NEW.cpid;
END;
CREATE TRIGGER mergelogs_cpid_remove AFTER DELETE ON mergelogs BEGIN
  UPDATE cpid_ids SET refs = refs - 1 WHERE cpid = OLD.cpid;
  DELETE FROM cpid_ids WHERE cpid = OLD.cpid AND refs <= 0;
  UPDATE cpid_ids SET shared = COALESCE((SELECT CASE
      WHEN substr(cpid_ids.cpid, 1, 1) <> substr(n.cpid, 1, 1) THEN 0
      WHEN substr(cpid_ids.cpid, 2, 1) <> substr(n.cpid, 2, 1) THEN 1
      WHEN substr(cpid_ids.cpid, 3, 1) <> substr(n.cpid, 3, 1) THEN 2
      WHEN substr(cpid_ids.cpid, 4, 1) <> substr(n.cpid, 4, 1) THEN 3
      WHEN substr(cpid_ids.cpid, 5, 1) <> substr(n.cpid, 5, 1) THEN 4
      WHEN substr(cpid_ids.cpid, 6, 1) <> substr(n.cpid, 6, 1) THEN 5
      WHEN substr(cpid_ids.cpid, 7, 1) <> substr(n.cpid, 7, 1) THEN 6
      WHEN substr(cpid_ids.cpid, 8, 1) <> substr(n.cpid, 8, 1) THEN 7
      WHEN substr(cpid_ids.cpid, 9, 1) <> substr(n.cpid, 9, 1) THEN 8
      WHEN substr(cpid_ids.cpid, 10, 1) <> substr(n.cpid, 10, 1) THEN 9
      WHEN substr(cpid_ids.cpid, 11, 1) <> substr(n.cpid, 11, 1) THEN 10
      WHEN substr(cpid_ids.cpid, 12, 1) <> substr(n.cpid, 12, 1) THEN 11
      WHEN substr(cpid_ids.cpid, 13, 1) <> substr(n.cpid, 13, 1) THEN 12
      WHEN substr(cpid_ids.cpid, 14, 1) <> substr(n.cpid, 14, 1) THEN 13
      WHEN substr(cpid_ids.cpid, 15, 1) <> substr(n.cpid, 15, 1) THEN 14
      WHEN substr(cpid_ids.cpid, 16, 1) <> substr(n.cpid, 16, 1) THEN 15
      WHEN substr(cpid_ids.cpid, 17, 1) <> substr(n.cpid, 17, 1) THEN 16
      WHEN substr(cpid_ids.cpid, 18, 1) <> substr(n.cpid, 18, 1) THEN 17
      WHEN substr(cpid_ids.cpid, 19, 1) <> substr(n.cpid, 19, 1) THEN 18
      WHEN substr(cpid_ids.cpid, 20, 1) <> substr(n.cpid, 20, 1) THEN 19
      WHEN substr(cpid_ids.cpid, 21, 1) <> substr(n.cpid, 21, 1) THEN 20
      WHEN substr(cpid_ids.cpid, 22, 1) <> substr(n.cpid, 22, 1) THEN 21
      WHEN substr(cpid_ids.cpid, 23, 1) <> substr(n.cpid, 23, 1) THEN 22
      WHEN substr(cpid_ids.cpid, 24, 1) <> substr(n.cpid, 24, 1) THEN 23
      WHEN substr(cpid_ids.cpid, 25, 1) <> substr(n.cpid, 25, 1) THEN 24
      WHEN substr(cpid_ids.cpid, 26, 1) <> substr(n.cpid, 26, 1) THEN 25
      WHEN substr(cpid_ids.cpid, 27, 1) <> substr(n.cpid, 27, 1) THEN 26
      WHEN substr(cpid_ids.cpid, 28, 1) <> substr(n.cpid, 28, 1) THEN 27
      WHEN substr(cpid_ids.cpid, 29, 1) <> substr(n.cpid, 29, 1) THEN 28
      WHEN substr(cpid_ids.cpid, 30, 1) <> substr(n.cpid, 30, 1) THEN 29
      WHEN substr(cpid_ids.cpid, 31, 1) <> substr(n.cpid, 31, 1) THEN 30
      WHEN substr(cpid_ids.cpid, 32, 1) <> substr(n.cpid, 32, 1) THEN 31
      WHEN substr(cpid_ids.cpid, 33, 1) <> substr(n.cpid, 33, 1) THEN 32
      WHEN substr(cpid_ids.cpid, 34, 1) <> substr(n.cpid, 34, 1) THEN 33
      WHEN substr(cpid_ids.cpid, 35, 1) <> substr(n.cpid, 35, 1) THEN 34
      WHEN substr(cpid_ids.cpid, 36, 1) <> substr(n.cpid, 36, 1) THEN 35
      WHEN substr(cpid_ids.cpid, 37, 1) <> substr(n.cpid, 37, 1) THEN 36
      WHEN substr(cpid_ids.cpid, 38, 1) <> substr(n.cpid, 38, 1) THEN 37
      WHEN substr(cpid_ids.cpid, 39, 1) <> substr(n.cpid, 39, 1) THEN 38
      WHEN substr(cpid_ids.cpid, 40, 1) <> substr(n.cpid, 40, 1) THEN 39
      ELSE 40 END
      FROM cpid_ids n WHERE n.cpid > OLD.cpid ORDER BY n.cpid LIMIT 1), 0)
    WHERE cpid = (SELECT max(cpid) FROM cpid_ids WHERE cpid < OLD.cpid)
      AND NOT EXISTS (SELECT 1 FROM cpid_ids WHERE cpid = OLD.cpid);
END;
CREATE TRIGGER mergelogs_cpid_change AFTER UPDATE OF cpid ON mergelogs WHEN OLD.cpid IS NOT NEW.cpid BEGIN
  UPDATE cpid_ids SET refs = refs - 1 WHERE cpid = OLD.cpid;
  DELETE FROM cpid_ids WHERE cpid = OLD.cpid AND refs <= 0;
  UPDATE cpid_ids SET shared = COALESCE((SELECT CASE
      WHEN substr(cpid_ids.cpid, 1, 1) <> substr(n.cpid, 1, 1) THEN 0
      WHEN substr(cpid_ids.cpid, 2, 1) <> substr(n.cpid, 2, 1) THEN 1
      WHEN substr(cpid_ids.cpid, 3, 1) <> substr(n.cpid, 3, 1) THEN 2
      WHEN substr(cpid_ids.cpid, 4, 1) <> substr(n.cpid, 4, 1) THEN 3
      WHEN substr(cpid_ids.cpid, 5, 1) <> substr(n.cpid, 5, 1) THEN 4
      WHEN substr(cpid_ids.cpid, 6, 1) <> substr(n.cpid, 6, 1) THEN 5
      WHEN substr(cpid_ids.cpid, 7, 1) <> substr(n.cpid, 7, 1) THEN 6
      WHEN substr(cpid_ids.cpid, 8, 1) <> substr(n.cpid, 8, 1) THEN 7
      WHEN substr(cpid_ids.cpid, 9, 1) <> substr(n.cpid, 9, 1) THEN 8
      WHEN substr(cpid_ids.cpid, 10, 1) <> substr(n.cpid, 10, 1) THEN 9
      WHEN substr(cpid_ids.cpid, 11, 1) <> substr(n.cpid, 11, 1) THEN 10
      WHEN substr(cpid_ids.cpid, 12, 1) <> substr(n.cpid, 12, 1) THEN 11
      WHEN substr(cpid_ids.cpid, 13, 1) <> substr(n.cpid, 13, 1) THEN 12
      WHEN substr(cpid_ids.cpid, 14, 1) <> substr(n.cpid, 14, 1) THEN 13
      WHEN substr(cpid_ids.cpid, 15, 1) <> substr(n.cpid, 15, 1) THEN 14
      WHEN substr(cpid_ids.cpid, 16, 1) <> substr(n.cpid, 16, 1) THEN 15
      WHEN substr(cpid_ids.cpid, 17, 1) <> substr(n.cpid, 17, 1) THEN 16
      WHEN substr(cpid_ids.cpid, 18, 1) <> substr(n.cpid, 18, 1) THEN 17
      WHEN substr(cpid_ids.cpid, 19, 1) <> substr(n.cpid, 19, 1) THEN 18
      WHEN substr(cpid_ids.cpid, 20, 1) <> substr(n.cpid, 20, 1) THEN 19
      WHEN substr(cpid_ids.cpid, 21, 1) <> substr(n.cpid, 21, 1) THEN 20
      WHEN substr(cpid_ids.cpid, 22, 1) <> substr(n.cpid, 22, 1) THEN 21
      WHEN substr(cpid_ids.cpid, 23, 1) <> substr(n.cpid, 23, 1) THEN 22
      WHEN substr(cpid_ids.cpid, 24, 1) <> substr(n.cpid, 24, 1) THEN 23
      WHEN substr(cpid_ids.cpid, 25, 1) <> substr(n.cpid, 25, 1) THEN 24
      WHEN substr(cpid_ids.cpid, 26, 1) <> substr(n.cpid, 26, 1) THEN 25
      WHEN substr(cpid_ids.cpid, 27, 1) <> substr(n.cpid, 27, 1) THEN 26
      WHEN substr(cpid_ids.cpid, 28, 1) <> substr(n.cpid, 28, 1) THEN 27
      WHEN substr(cpid_ids.cpid, 29, 1) <> substr(n.cpid, 29, 1) THEN 28
      WHEN substr(cpid_ids.cpid, 30, 1) <> substr(n.cpid, 30, 1) THEN 29
      WHEN substr(cpid_ids.cpid, 31, 1) <> substr(n.cpid, 31, 1) THEN 30
      WHEN substr(cpid_ids.cpid, 32, 1) <> substr(n.cpid, 32, 1) THEN 31
      WHEN substr(cpid_ids.cpid, 33, 1) <> substr(n.cpid, 33, 1) THEN 32
      WHEN substr(cpid_ids.cpid, 34, 1) <> substr(n.cpid, 34, 1) THEN 33
      WHEN substr(cpid_ids.cpid, 35, 1) <> substr(n.cpid, 35, 1) THEN 34
      WHEN substr(cpid_ids.cpid, 36, 1) <> substr(n.cpid, 36, 1) THEN 35
      WHEN substr(cpid_ids.cpid, 37, 1) <> substr(n.cpid, 37, 1) THEN 36
      WHEN substr(cpid_ids.cpid, 38, 1) <> substr(n.cpid, 38, 1) THEN 37
      WHEN substr(cpid_ids.cpid, 39, 1) <> substr(n.cpid, 39, 1) THEN 38
      WHEN substr(cpid_ids.cpid, 40, 1) <> substr(n.cpid, 40, 1) THEN 39
      ELSE 40 END
      FROM cpid_ids n WHERE n.cpid > OLD.cpid ORDER BY n.cpid LIMIT 1), 0)
    WHERE cpid = (SELECT max(cpid) FROM cpid_ids WHERE cpid < OLD.cpid)
      AND NOT EXISTS (SELECT 1 FROM cpid_ids WHERE cpid = OLD.cpid);
  UPDATE cpid_ids SET shared = CASE
      WHEN substr(cpid, 1, 1) <> substr(NEW.cpid, 1, 1) THEN 0
      WHEN substr(cpid, 2, 1) <> substr(NEW.cpid, 2, 1) THEN 1
      WHEN substr(cpid, 3, 1) <> substr(NEW.cpid, 3, 1) THEN 2
      WHEN substr(cpid, 4, 1) <> substr(NEW.cpid, 4, 1) THEN 3
      WHEN substr(cpid, 5, 1) <> substr(NEW.cpid, 5, 1) THEN 4
      WHEN substr(cpid, 6, 1) <> substr(NEW.cpid, 6, 1) THEN 5
      WHEN substr(cpid, 7, 1) <> substr(NEW.cpid, 7, 1) THEN 6
      WHEN substr(cpid, 8, 1) <> substr(NEW.cpid, 8, 1) THEN 7
      WHEN substr(cpid, 9, 1) <> substr(NEW.cpid, 9, 1) THEN 8
      WHEN substr(cpid, 10, 1) <> substr(NEW.cpid, 10, 1) THEN 9
      WHEN substr(cpid, 11, 1) <> substr(NEW.cpid, 11, 1) THEN 10
      WHEN substr(cpid, 12, 1) <> substr(NEW.cpid, 12, 1) THEN 11
      WHEN substr(cpid, 13, 1) <> substr(NEW.cpid, 13, 1) THEN 12
      WHEN substr(cpid, 14, 1) <> substr(NEW.cpid, 14, 1) THEN 13
      WHEN substr(cpid, 15, 1) <> substr(NEW.cpid, 15, 1) THEN 14
      WHEN substr(cpid, 16, 1) <> substr(NEW.cpid, 16, 1) THEN 15
      WHEN substr(cpid, 17, 1) <> substr(NEW.cpid, 17, 1) THEN 16
      WHEN substr(cpid, 18, 1) <> substr(NEW.cpid, 18, 1) THEN 17
      WHEN substr(cpid, 19, 1) <> substr(NEW.cpid, 19, 1) THEN 18
      WHEN substr(cpid, 20, 1) <> substr(NEW.cpid, 20, 1) THEN 19
      WHEN substr(cpid, 21, 1) <> substr(NEW.cpid, 21, 1) THEN 20
      WHEN substr(cpid, 22, 1) <> substr(NEW.cpid, 22, 1) THEN 21
      WHEN substr(cpid, 23, 1) <> substr(NEW.cpid, 23, 1) THEN 22
      WHEN substr(cpid, 24, 1) <> substr(NEW.cpid, 24, 1) THEN 23
      WHEN substr(cpid, 25, 1) <> substr(NEW.cpid, 25, 1) THEN 24
      WHEN substr(cpid, 26, 1) <> substr(NEW.cpid, 26, 1) THEN 25
      WHEN substr(cpid, 27, 1) <> substr(NEW.cpid, 27, 1) THEN 26
      WHEN substr(cpid, 28, 1) <> substr(NEW.cpid, 28, 1) THEN 27
      WHEN substr(cpid, 29, 1) <> substr(NEW.cpid, 29, 1) THEN 28
      WHEN substr(cpid, 30, 1) <> substr(NEW.cpid, 30, 1) THEN 29
      WHEN substr(cpid, 31, 1) <> substr(NEW.cpid, 31, 1) THEN 30
      WHEN substr(cpid, 32, 1) <> substr(NEW.cpid, 32, 1) THEN 31
      WHEN substr(cpid, 33, 1) <> substr(NEW.cpid, 33, 1) THEN 32
      WHEN substr(cpid, 34, 1) <> substr(NEW.cpid, 34, 1) THEN 33
      WHEN substr(cpid, 35, 1) <> substr(NEW.cpid, 35, 1) THEN 34
      WHEN substr(cpid, 36, 1) <> substr(NEW.cpid, 36, 1) THEN 35
      WHEN substr(cpid, 37, 1) <> substr(NEW.cpid, 37, 1) THEN 36
      WHEN substr(cpid, 38, 1) <> substr(NEW.cpid, 38, 1) THEN 37
      WHEN substr(cpid, 39, 1) <> substr(NEW.cpid, 39, 1) THEN 38
      WHEN substr(cpid, 40, 1) <> substr(NEW.cpid, 40, 1) THEN 39
      ELSE 40 END
    WHERE cpid = (SELECT max(cpid) FROM cpid_ids WHERE cpid < NEW.cpid)
      AND NOT EXISTS (SELECT 1 FROM cpid_ids WHERE cpid = NEW.cpid);
  INSERT OR IGNORE INTO cpid_ids(cpid, refs, shared)
    VALUES (NEW.cpid, 0, COALESCE((SELECT CASE
      WHEN substr(NEW.cpid, 1, 1) <> substr(n.cpid, 1, 1) THEN 0
      WHEN substr(NEW.cpid, 2, 1) <> substr(n.cpid, 2, 1) THEN 1
      WHEN substr(NEW.cpid, 3, 1) <> substr(n.cpid, 3, 1) THEN 2
      WHEN substr(NEW.cpid, 4, 1) <> substr(n.cpid, 4, 1) THEN 3
      WHEN substr(NEW.cpid, 5, 1) <> substr(n.cpid, 5, 1) THEN 4
      WHEN substr(NEW.cpid, 6, 1) <> substr(n.cpid, 6, 1) THEN 5
      WHEN substr(NEW.cpid, 7, 1) <> substr(n.cpid, 7, 1) THEN 6
      WHEN substr(NEW.cpid, 8, 1) <> substr(n.cpid, 8, 1) THEN 7
      WHEN substr(NEW.cpid, 9, 1) <> substr(n.cpid, 9, 1) THEN 8
      WHEN substr(NEW.cpid, 10, 1) <> substr(n.cpid, 10, 1) THEN 9
      WHEN substr(NEW.cpid, 11, 1) <> substr(n.cpid, 11, 1) THEN 10
      WHEN substr(NEW.cpid, 12, 1) <> substr(n.cpid, 12, 1) THEN 11
      WHEN substr(NEW.cpid, 13, 1) <> substr(n.cpid, 13, 1) THEN 12
      WHEN substr(NEW.cpid, 14, 1) <> substr(n.cpid, 14, 1) THEN 13
      WHEN substr(NEW.cpid, 15, 1) <> substr(n.cpid, 15, 1) THEN 14
      WHEN substr(NEW.cpid, 16, 1) <> substr(n.cpid, 16, 1) THEN 15
      WHEN substr(NEW.cpid, 17, 1) <> substr(n.cpid, 17, 1) THEN 16
      WHEN substr(NEW.cpid, 18, 1) <> substr(n.cpid, 18, 1) THEN 17
      WHEN substr(NEW.cpid, 19, 1) <> substr(n.cpid, 19, 1) THEN 18
      WHEN substr(NEW.cpid, 20, 1) <> substr(n.cpid, 20, 1) THEN 19
      WHEN substr(NEW.cpid, 21, 1) <> substr(n.cpid, 21, 1) THEN 20
      WHEN substr(NEW.cpid, 22, 1) <> substr(n.cpid, 22, 1) THEN 21
      WHEN substr(NEW.cpid, 23, 1) <> substr(n.cpid, 23, 1) THEN 22
      WHEN substr(NEW.cpid, 24, 1) <> substr(n.cpid, 24, 1) THEN 23
      WHEN substr(NEW.cpid, 25, 1) <> substr(n.cpid, 25, 1) THEN 24
      WHEN substr(NEW.cpid, 26, 1) <> substr(n.cpid, 26, 1) THEN 25
      WHEN substr(NEW.cpid, 27, 1) <> substr(n.cpid, 27, 1) THEN 26
      WHEN substr(NEW.cpid, 28, 1) <> substr(n.cpid, 28, 1) THEN 27
      WHEN substr(NEW.cpid, 29, 1) <> substr(n.cpid, 29, 1) THEN 28
      WHEN substr(NEW.cpid, 30, 1) <> substr(n.cpid, 30, 1) THEN 29
      WHEN substr(NEW.cpid, 31, 1) <> substr(n.cpid, 31, 1) THEN 30
      WHEN substr(NEW.cpid, 32, 1) <> substr(n.cpid, 32, 1) THEN 31
      WHEN substr(NEW.cpid, 33, 1) <> substr(n.cpid, 33, 1) THEN 32
      WHEN substr(NEW.cpid, 34, 1) <> substr(n.cpid, 34, 1) THEN 33
      WHEN substr(NEW.cpid, 35, 1) <> substr(n.cpid, 35, 1) THEN 34
      WHEN substr(NEW.cpid, 36, 1) <> substr(n.cpid, 36, 1) THEN 35
      WHEN substr(NEW.cpid, 37, 1) <> substr(n.cpid, 37, 1) THEN 36
      WHEN substr(NEW.cpid, 38, 1) <> substr(n.cpid, 38, 1) THEN 37
      WHEN substr(NEW.cpid, 39, 1) <> substr(n.cpid, 39, 1) THEN 38
      WHEN substr(NEW.cpid, 40, 1) <> substr(n.cpid, 40, 1) THEN 39
      ELSE 40 END
      FROM cpid_ids n WHERE n.cpid > NEW.cpid ORDER BY n.cpid LIMIT 1), 0));
  UPDATE cpid_ids SET refs = refs + 1 WHERE cpid = NEW.cpid;
END;
CREATE TRIGGER mergelog_sources_cpid_add AFTER INSERT ON mergelog_sources BEGIN
  UPDATE cpid_ids SET shared = CASE
      WHEN substr(cpid, 1, 1) <> substr(NEW.source_cpid, 1, 1) THEN 0
      WHEN substr(cpid, 2, 1) <> substr(NEW.source_cpid, 2, 1) THEN 1
      WHEN substr(cpid, 3, 1) <> substr(NEW.source_cpid, 3, 1) THEN 2
      WHEN substr(cpid, 4, 1) <> substr(NEW.source_cpid, 4, 1) THEN 3
      WHEN substr(cpid, 5, 1) <> substr(NEW.source_cpid, 5, 1) THEN 4
      WHEN substr(cpid, 6, 1) <> substr(NEW.source_cpid, 6, 1) THEN 5
      WHEN substr(cpid, 7, 1) <> substr(NEW.source_cpid, 7, 1) THEN 6
      WHEN substr(cpid, 8, 1) <> substr(NEW.source_cpid, 8, 1) THEN 7
      WHEN substr(cpid, 9, 1) <> substr(NEW.source_cpid, 9, 1) THEN 8
      WHEN substr(cpid, 10, 1) <> substr(NEW.source_cpid, 10, 1) THEN 9
      WHEN substr(cpid, 11, 1) <> substr(NEW.source_cpid, 11, 1) THEN 10
      WHEN substr(cpid, 12, 1) <> substr(NEW.source_cpid, 12, 1) THEN 11
      WHEN substr(cpid, 13, 1) <> substr(NEW.source_cpid, 13, 1) THEN 12
      WHEN substr(cpid, 14, 1) <> substr(NEW.source_cpid, 14, 1) THEN 13
      WHEN substr(cpid, 15, 1) <> substr(NEW.source_cpid, 15, 1) THEN 14
      WHEN substr(cpid, 16, 1) <> substr(NEW.source_cpid, 16, 1) THEN 15
      WHEN substr(cpid, 17, 1) <> substr(NEW.source_cpid, 17, 1) THEN 16
      WHEN substr(cpid, 18, 1) <> substr(NEW.source_cpid, 18, 1) THEN 17
      WHEN substr(cpid, 19, 1) <> substr(NEW.source_cpid, 19, 1) THEN 18
      WHEN substr(cpid, 20, 1) <> substr(NEW.source_cpid, 20, 1) THEN 19
      WHEN substr(cpid, 21, 1) <> substr(NEW.source_cpid, 21, 1) THEN 20
      WHEN substr(cpid, 22, 1) <> substr(NEW.source_cpid, 22, 1) THEN 21
      WHEN substr(cpid, 23, 1) <> substr(NEW.source_cpid, 23, 1) THEN 22
      WHEN substr(cpid, 24, 1) <> substr(NEW.source_cpid, 24, 1) THEN 23
      WHEN substr(cpid, 25, 1) <> substr(NEW.source_cpid, 25, 1) THEN 24
      WHEN substr(cpid, 26, 1) <> substr(NEW.source_cpid, 26, 1) THEN 25
      WHEN substr(cpid, 27, 1) <> substr(NEW.source_cpid, 27, 1) THEN 26
      WHEN substr(cpid, 28, 1) <> substr(NEW.source_cpid, 28, 1) THEN 27
      WHEN substr(cpid, 29, 1) <> substr(NEW.source_cpid, 29, 1) THEN 28
      WHEN substr(cpid, 30, 1) <> substr(NEW.source_cpid, 30, 1) THEN 29
      WHEN substr(cpid, 31, 1) <> substr(NEW.source_cpid, 31, 1) THEN 30
      WHEN substr(cpid, 32, 1) <> substr(NEW.source_cpid, 32, 1) THEN 31
      WHEN substr(cpid, 33, 1) <> substr(NEW.source_cpid, 33, 1) THEN 32
      WHEN substr(cpid, 34, 1) <> substr(NEW.source_cpid, 34, 1) THEN 33
      WHEN substr(cpid, 35, 1) <> substr(NEW.source_cpid, 35, 1) THEN 34
      WHEN substr(cpid, 36, 1) <> substr(NEW.source_cpid, 36, 1) THEN 35
      WHEN substr(cpid, 37, 1) <> substr(NEW.source_cpid, 37, 1) THEN 36
      WHEN substr(cpid, 38, 1) <> substr(NEW.source_cpid, 38, 1) THEN 37
      WHEN substr(cpid, 39, 1) <> substr(NEW.source_cpid, 39, 1) THEN 38
      WHEN substr(cpid, 40, 1) <> substr(NEW.source_cpid, 40, 1) THEN 39
      ELSE 40 END
    WHERE cpid = (SELECT max(cpid) FROM cpid_ids WHERE cpid < NEW.source_cpid)
      AND NOT EXISTS (SELECT 1 FROM cpid_ids WHERE cpid = NEW.source_cpid);
  INSERT OR IGNORE INTO cpid_ids(cpid, refs, shared)
    VALUES (NEW.source_cpid, 0, COALESCE((SELECT CASE
      WHEN substr(NEW.source_cpid, 1, 1) <> substr(n.cpid, 1, 1) THEN 0
      WHEN substr(NEW.source_cpid, 2, 1) <> substr(n.cpid, 2, 1) THEN 1
      WHEN substr(NEW.source_cpid, 3, 1) <> substr(n.cpid, 3, 1) THEN 2
      WHEN substr(NEW.source_cpid, 4, 1) <> substr(n.cpid, 4, 1) THEN 3
      WHEN substr(NEW.source_cpid, 5, 1) <> substr(n.cpid, 5, 1) THEN 4
      WHEN substr(NEW.source_cpid, 6, 1) <> substr(n.cpid, 6, 1) THEN 5
      WHEN substr(NEW.source_cpid, 7, 1) <> substr(n.cpid, 7, 1) THEN 6
      WHEN substr(NEW.source_cpid, 8, 1) <> substr(n.cpid, 8, 1) THEN 7
      WHEN substr(NEW.source_cpid, 9, 1) <> substr(n.cpid, 9, 1) THEN 8
      WHEN substr(NEW.source_cpid, 10, 1) <> substr(n.cpid, 10, 1) THEN 9
      WHEN substr(NEW.source_cpid, 11, 1) <> substr(n.cpid, 11, 1) THEN 10
      WHEN substr(NEW.source_cpid, 12, 1) <> substr(n.cpid, 12, 1) THEN 11
      WHEN substr(NEW.source_cpid, 13, 1) <> substr(n.cpid, 13, 1) THEN 12
      WHEN substr(NEW.source_cpid, 14, 1) <> substr(n.cpid, 14, 1) THEN 13
      WHEN substr(NEW.source_cpid, 15, 1) <> substr(n.cpid, 15, 1) THEN 14
      WHEN substr(NEW.source_cpid, 16, 1) <> substr(n.cpid, 16, 1) THEN 15
      WHEN substr(NEW.source_cpid, 17, 1) <> substr(n.cpid, 17, 1) THEN 16
      WHEN substr(NEW.source_cpid, 18, 1) <> substr(n.cpid, 18, 1) THEN 17
      WHEN substr(NEW.source_cpid, 19, 1) <> substr(n.cpid, 19, 1) THEN 18
      WHEN substr(NEW.source_cpid, 20, 1) <> substr(n.cpid, 20, 1) THEN 19
      WHEN substr(NEW.source_cpid, 21, 1) <> substr(n.cpid, 21, 1) THEN 20
      WHEN substr(NEW.source_cpid, 22, 1) <> substr(n.cpid, 22, 1) THEN 21
      WHEN substr(NEW.source_cpid, 23, 1) <> substr(n.cpid, 23, 1) THEN 22
      WHEN substr(NEW.source_cpid, 24, 1) <> substr(n.cpid, 24, 1) THEN 23
      WHEN substr(NEW.source_cpid, 25, 1) <> substr(n.cpid, 25, 1) THEN 24
      WHEN substr(NEW.source_cpid, 26, 1) <> substr(n.cpid, 26, 1) THEN 25
      WHEN substr(NEW.source_cpid, 27, 1) <> substr(n.cpid, 27, 1) THEN 26
      WHEN substr(NEW.source_cpid, 28, 1) <> substr(n.cpid, 28, 1) THEN 27
      WHEN substr(NEW.source_cpid, 29, 1) <> substr(n.cpid, 29, 1) THEN 28
      WHEN substr(NEW.source_cpid, 30, 1) <> substr(n.cpid, 30, 1) THEN 29
      WHEN substr(NEW.source_cpid, 31, 1) <> substr(n.cpid, 31, 1) THEN 30
      WHEN substr(NEW.source_cpid, 32, 1) <> substr(n.cpid, 32, 1) THEN 31
      WHEN substr(NEW.source_cpid, 33, 1) <> substr(n.cpid, 33, 1) THEN 32
      WHEN substr(NEW.source_cpid, 34, 1) <> substr(n.cpid, 34, 1) THEN 33
      WHEN substr(NEW.source_cpid, 35, 1) <> substr(n.cpid, 35, 1) THEN 34
      WHEN substr(NEW.source_cpid, 36, 1) <> substr(n.cpid, 36, 1) THEN 35
      WHEN substr(NEW.source_cpid, 37, 1) <> substr(n.cpid, 37, 1) THEN 36
      WHEN substr(NEW.source_cpid, 38, 1) <> substr(n.cpid, 38, 1) THEN 37
      WHEN substr(NEW.source_cpid, 39, 1) <> substr(n.cpid, 39, 1) THEN 38
      WHEN substr(NEW.source_cpid, 40, 1) <> substr(n.cpid, 40, 1) THEN 39
      ELSE 40 END
      FROM cpid_ids n WHERE n.cpid > NEW.source_cpid ORDER BY n.cpid LIMIT 1), 0));
  UPDATE cpid_ids SET refs = refs + 1 WHERE cpid = NEW.source_cpid;
END;
CREATE TRIGGER mergelog_sources_cpid_remove AFTER DELETE ON mergelog_sources BEGIN
  UPDATE cpid_ids SET refs = refs - 1 WHERE cpid = OLD.source_cpid;
  DELETE FROM cpid_ids WHERE cpid = OLD.source_cpid AND refs <= 0;
  UPDATE cpid_ids SET shared = COALESCE((SELECT CASE
      WHEN substr(cpid_ids.cpid, 1, 1) <> substr(n.cpid, 1, 1) THEN 0
      WHEN substr(cpid_ids.cpid, 2, 1) <> substr(n.cpid, 2, 1) THEN 1
      WHEN substr(cpid_ids.cpid, 3, 1) <> substr(n.cpid, 3, 1) THEN 2
      WHEN substr(cpid_ids.cpid, 4, 1) <> substr(n.cpid, 4, 1) THEN 3
      WHEN substr(cpid_ids.cpid, 5, 1) <> substr(n.cpid, 5, 1) THEN 4
      WHEN substr(cpid_ids.cpid, 6, 1) <> substr(n.cpid, 6, 1) THEN 5
      WHEN substr(cpid_ids.cpid, 7, 1) <> substr(n.cpid, 7, 1) THEN 6
      WHEN substr(cpid_ids.cpid, 8, 1) <> substr(n.cpid, 8, 1) THEN 7
      WHEN substr(cpid_ids.cpid, 9, 1) <> substr(n.cpid, 9, 1) THEN 8
      WHEN substr(cpid_ids.cpid, 10, 1) <> substr(n.cpid, 10, 1) THEN 9
      WHEN substr(cpid_ids.cpid, 11, 1) <> substr(n.cpid, 11, 1) THEN 10
      WHEN substr(cpid_ids.cpid, 12, 1) <> substr(n.cpid, 12, 1) THEN 11
      WHEN substr(cpid_ids.cpid, 13, 1) <> substr(n.cpid, 13, 1) THEN 12
      WHEN substr(cpid_ids.cpid, 14, 1) <> substr(n.cpid, 14, 1) THEN 13
      WHEN substr(cpid_ids.cpid, 15, 1) <> substr(n.cpid, 15, 1) THEN 14
      WHEN substr(cpid_ids.cpid, 16, 1) <> substr(n.cpid, 16, 1) THEN 15
      WHEN substr(cpid_ids.cpid, 17, 1) <> substr(n.cpid, 17, 1) THEN 16
      WHEN substr(cpid_ids.cpid, 18, 1) <> substr(n.cpid, 18, 1) THEN 17
      WHEN substr(cpid_ids.cpid, 19, 1) <> substr(n.cpid, 19, 1) THEN 18
      WHEN substr(cpid_ids.cpid, 20, 1) <> substr(n.cpid, 20, 1) THEN 19
      WHEN substr(cpid_ids.cpid, 21, 1) <> substr(n.cpid, 21, 1) THEN 20
      WHEN substr(cpid_ids.cpid, 22, 1) <> substr(n.cpid, 22, 1) THEN 21
      WHEN substr(cpid_ids.cpid, 23, 1) <> substr(n.cpid, 23, 1) THEN 22
      WHEN substr(cpid_ids.cpid, 24, 1) <> substr(n.cpid, 24, 1) THEN 23
      WHEN substr(cpid_ids.cpid, 25, 1) <> substr(n.cpid, 25, 1) THEN 24
      WHEN substr(cpid_ids.cpid, 26, 1) <> substr(n.cpid, 26, 1) THEN 25
      WHEN substr(cpid_ids.cpid, 27, 1) <> substr(n.cpid, 27, 1) THEN 26
      WHEN substr(cpid_ids.cpid, 28, 1) <> substr(n.cpid, 28, 1) THEN 27
      WHEN substr(cpid_ids.cpid, 29, 1) <> substr(n.cpid, 29, 1) THEN 28
      WHEN substr(cpid_ids.cpid, 30, 1) <> substr(n.cpid, 30, 1) THEN 29
      WHEN substr(cpid_ids.cpid, 31, 1) <> substr(n.cpid, 31, 1) THEN 30
      WHEN substr(cpid_ids.cpid, 32, 1) <> substr(n.cpid, 32, 1) THEN 31
      WHEN substr(cpid_ids.cpid, 33, 1) <> substr(n.cpid, 33, 1) THEN 32
      WHEN substr(cpid_ids.cpid, 34, 1) <> substr(n.cpid, 34, 1) THEN 33
      WHEN substr(cpid_ids.cpid, 35, 1) <> substr(n.cpid, 35, 1) THEN 34
      WHEN substr(cpid_ids.cpid, 36, 1) <> substr(n.cpid, 36, 1) THEN 35
      WHEN substr(cpid_ids.cpid, 37, 1) <> substr(n.cpid, 37, 1) THEN 36
      WHEN substr(cpid_ids.cpid, 38, 1) <> substr(n.cpid, 38, 1) THEN 37
      WHEN substr(cpid_ids.cpid, 39, 1) <> substr(n.cpid, 39, 1) THEN 38
      WHEN substr(cpid_ids.cpid, 40, 1) <> substr(n.cpid, 40, 1) THEN 39
      ELSE 40 END
      FROM cpid_ids n WHERE n.cpid > OLD.source_cpid ORDER BY n.cpid LIMIT 1), 0)
    WHERE cpid = (SELECT max(cpid) FROM cpid_ids WHERE cpid < OLD.source_cpid)
      AND NOT EXISTS (SELECT 1 FROM cpid_ids WHERE cpid = OLD.source_cpid);
END;
CREATE TRIGGER mergelog_sources_cpid_change AFTER UPDATE OF source_cpid ON mergelog_sources WHEN OLD.source_cpid IS NOT NEW.source_cpid BEGIN
  UPDATE cpid_ids SET refs = refs - 1 WHERE cpid = OLD.source_cpid;
  DELETE FROM cpid_ids WHERE cpid = OLD.source_cpid AND refs <= 0;
  UPDATE cpid_ids SET shared = COALESCE((SELECT CASE
      WHEN substr(cpid_ids.cpid, 1, 1) <> substr(n.cpid, 1, 1) THEN 0
      WHEN substr(cpid_ids.cpid, 2, 1) <> substr(n.cpid, 2, 1) THEN 1
      WHEN substr(cpid_ids.cpid, 3, 1) <> substr(n.cpid, 3, 1) THEN 2
      WHEN substr(cpid_ids.cpid, 4, 1) <> substr(n.cpid, 4, 1) THEN 3
      WHEN substr(cpid_ids.cpid, 5, 1) <> substr(n.cpid, 5, 1) THEN 4
      WHEN substr(cpid_ids.cpid, 6, 1) <> substr(n.cpid, 6, 1) THEN 5
      WHEN substr(cpid_ids.cpid, 7, 1) <> substr(n.cpid, 7, 1) THEN 6
      WHEN substr(cpid_ids.cpid, 8, 1) <> substr(n.cpid, 8, 1) THEN 7
      WHEN substr(cpid_ids.cpid, 9, 1) <> substr(n.cpid, 9, 1) THEN 8
      WHEN substr(cpid_ids.cpid, 10, 1) <> substr(n.cpid, 10, 1) THEN 9
      WHEN substr(cpid_ids.cpid, 11, 1) <> substr(n.cpid, 11, 1) THEN 10
      WHEN substr(cpid_ids.cpid, 12, 1) <> substr(n.cpid, 12, 1) THEN 11
      WHEN substr(cpid_ids.cpid, 13, 1) <> substr(n.cpid, 13, 1) THEN 12
      WHEN substr(cpid_ids.cpid, 14, 1) <> substr(n.cpid, 14, 1) THEN 13
      WHEN substr(cpid_ids.cpid, 15, 1) <> substr(n.cpid, 15, 1) THEN 14
      WHEN substr(cpid_ids.cpid, 16, 1) <> substr(n.cpid, 16, 1) THEN 15
      WHEN substr(cpid_ids.cpid, 17, 1) <> substr(n.cpid, 17, 1) THEN 16
      WHEN substr(cpid_ids.cpid, 18, 1) <> substr(n.cpid, 18, 1) THEN 17
      WHEN substr(cpid_ids.cpid, 19, 1) <> substr(n.cpid, 19, 1) THEN 18
      WHEN substr(cpid_ids.cpid, 20, 1) <> substr(n.cpid, 20, 1) THEN 19
      WHEN substr(cpid_ids.cpid, 21, 1) <> substr(n.cpid, 21, 1) THEN 20
      WHEN substr(cpid_ids.cpid, 22, 1) <> substr(n.cpid, 22, 1) THEN 21
      WHEN substr(cpid_ids.cpid, 23, 1) <> substr(n.cpid, 23, 1) THEN 22
      WHEN substr(cpid_ids.cpid, 24, 1) <> substr(n.cpid, 24, 1) THEN 23
      WHEN substr(cpid_ids.cpid, 25, 1) <> substr(n.cpid, 25, 1) THEN 24
      WHEN substr(cpid_ids.cpid, 26, 1) <> substr(n.cpid, 26, 1) THEN 25
      WHEN substr(cpid_ids.cpid, 27, 1) <> substr(n.cpid, 27, 1) THEN 26
      WHEN substr(cpid_ids.cpid, 28, 1) <> substr(n.cpid, 28, 1) THEN 27
      WHEN substr(cpid_ids.cpid, 29, 1) <> substr(n.cpid, 29, 1) THEN 28
      WHEN substr(cpid_ids.cpid, 30, 1) <> substr(n.cpid, 30, 1) THEN 29
      WHEN substr(cpid_ids.cpid, 31, 1) <> substr(n.cpid, 31, 1) THEN 30
      WHEN substr(cpid_ids.cpid, 32, 1) <> substr(n.cpid, 32, 1) THEN 31
      WHEN substr(cpid_ids.cpid, 33, 1) <> substr(n.cpid, 33, 1) THEN 32
      WHEN substr(cpid_ids.cpid, 34, 1) <> substr(n.cpid, 34, 1) THEN 33
      WHEN substr(cpid_ids.cpid, 35, 1) <> substr(n.cpid, 35, 1) THEN 34
      WHEN substr(cpid_ids.cpid, 36, 1) <> substr(n.cpid, 36, 1) THEN 35
      WHEN substr(cpid_ids.cpid, 37, 1) <> substr(n.cpid, 37, 1) THEN 36
      WHEN substr(cpid_ids.cpid, 38, 1) <> substr(n.cpid, 38, 1) THEN 37
      WHEN substr(cpid_ids.cpid, 39, 1) <> substr(n.cpid, 39, 1) THEN 38
      WHEN substr(cpid_ids.cpid, 40, 1) <> substr(n.cpid, 40, 1) THEN 39
      ELSE 40 END
      FROM cpid_ids n WHERE n.cpid > OLD.source_cpid ORDER BY n.cpid LIMIT 1), 0)
    WHERE cpid = (SELECT max(cpid) FROM cpid_ids WHERE cpid < OLD.source_cpid)
      AND NOT EXISTS (SELECT 1 FROM cpid_ids WHERE cpid = OLD.source_cpid);
  UPDATE cpid_ids SET shared = CASE
      WHEN substr(cpid, 1, 1) <> substr(NEW.source_cpid, 1, 1) THEN 0
      WHEN substr(cpid, 2, 1) <> substr(NEW.source_cpid, 2, 1) THEN 1
      WHEN substr(cpid, 3, 1) <> substr(NEW.source_cpid, 3, 1) THEN 2
      WHEN substr(cpid, 4, 1) <> substr(NEW.source_cpid, 4, 1) THEN 3
      WHEN substr(cpid, 5, 1) <> substr(NEW.source_cpid, 5, 1) THEN 4
      WHEN substr(cpid, 6, 1) <> substr(NEW.source_cpid, 6, 1) THEN 5
      WHEN substr(cpid, 7, 1) <> substr(NEW.source_cpid, 7, 1) THEN 6
      WHEN substr(cpid, 8, 1) <> substr(NEW.source_cpid, 8, 1) THEN 7
      WHEN substr(cpid, 9, 1) <> substr(NEW.source_cpid, 9, 1) THEN 8
      WHEN substr(cpid, 10, 1) <> substr(NEW.source_cpid, 10, 1) THEN 9
      WHEN substr(cpid, 11, 1) <> substr(NEW.source_cpid, 11, 1) THEN 10
      WHEN substr(cpid, 12, 1) <> substr(NEW.source_cpid, 12, 1) THEN 11
      WHEN substr(cpid, 13, 1) <> substr(NEW.source_cpid, 13, 1) THEN 12
      WHEN substr(cpid, 14, 1) <> substr(NEW.source_cpid, 14, 1) THEN 13
      WHEN substr(cpid, 15, 1) <> substr(NEW.source_cpid, 15, 1) THEN 14
      WHEN substr(cpid, 16, 1) <> substr(NEW.source_cpid, 16, 1) THEN 15
      WHEN substr(cpid, 17, 1) <> substr(NEW.source_cpid, 17, 1) THEN 16
      WHEN substr(cpid, 18, 1) <> substr(NEW.source_cpid, 18, 1) THEN 17
      WHEN substr(cpid, 19, 1) <> substr(NEW.source_cpid, 19, 1) THEN 18
      WHEN substr(cpid, 20, 1) <> substr(NEW.source_cpid, 20, 1) THEN 19
      WHEN substr(cpid, 21, 1) <> substr(NEW.source_cpid, 21, 1) THEN 20
      WHEN substr(cpid, 22, 1) <> substr(NEW.source_cpid, 22, 1) THEN 21
      WHEN substr(cpid, 23, 1) <> substr(NEW.source_cpid, 23, 1) THEN 22
      WHEN substr(cpid, 24, 1) <> substr(NEW.source_cpid, 24, 1) THEN 23
      WHEN substr(cpid, 25, 1) <> substr(NEW.source_cpid, 25, 1) THEN 24
      WHEN substr(cpid, 26, 1) <> substr(NEW.source_cpid, 26, 1) THEN 25
      WHEN substr(cpid, 27, 1) <> substr(NEW.source_cpid, 27, 1) THEN 26
      WHEN substr(cpid, 28, 1) <> substr(NEW.source_cpid, 28, 1) THEN 27
      WHEN substr(cpid, 29, 1) <> substr(NEW.source_cpid, 29, 1) THEN 28
      WHEN substr(cpid, 30, 1) <> substr(NEW.source_cpid, 30, 1) THEN 29
      WHEN substr(cpid, 31, 1) <> substr(NEW.source_cpid, 31, 1) THEN 30
      WHEN substr(cpid, 32, 1) <> substr(NEW.source_cpid, 32, 1) THEN 31
      WHEN substr(cpid, 33, 1) <> substr(NEW.source_cpid, 33, 1) THEN 32
      WHEN substr(cpid, 34, 1) <> substr(NEW.source_cpid, 34, 1) THEN 33
      WHEN substr(cpid, 35, 1) <> substr(NEW.source_cpid, 35, 1) THEN 34
      WHEN substr(cpid, 36, 1) <> substr(NEW.source_cpid, 36, 1) THEN 35
      WHEN substr(cpid, 37, 1) <> substr(NEW.source_cpid, 37, 1) THEN 36
      WHEN substr(cpid, 38, 1) <> substr(NEW.source_cpid, 38, 1) THEN 37
      WHEN substr(cpid, 39, 1) <> substr(NEW.source_cpid, 39, 1) THEN 38
      WHEN substr(cpid, 40, 1) <> substr(NEW.source_cpid, 40, 1) THEN 39
      ELSE 40 END
    WHERE cpid = (SELECT max(cpid) FROM cpid_ids WHERE cpid < NEW.source_cpid)
      AND NOT EXISTS (SELECT 1 FROM cpid_ids WHERE cpid = NEW.source_cpid);
  INSERT OR IGNORE INTO cpid_ids(cpid, refs, shared)
    VALUES (NEW.source_cpid, 0, COALESCE((SELECT CASE
      WHEN substr(NEW.source_cpid, 1, 1) <> substr(n.cpid, 1, 1) THEN 0
      WHEN substr(NEW.source_cpid, 2, 1) <> substr(n.cpid, 2, 1) THEN 1
      WHEN substr(NEW.source_cpid, 3, 1) <> substr(n.cpid, 3, 1) THEN 2
      WHEN substr(NEW.source_cpid, 4, 1) <> substr(n.cpid, 4, 1) THEN 3
      WHEN substr(NEW.source_cpid, 5, 1) <> substr(n.cpid, 5, 1) THEN 4
      WHEN substr(NEW.source_cpid, 6, 1) <> substr(n.cpid, 6, 1) THEN 5
      WHEN substr(NEW.source_cpid, 7, 1) <> substr(n.cpid, 7, 1) THEN 6
      WHEN substr(NEW.source_cpid, 8, 1) <> substr(n.cpid, 8, 1) THEN 7
      WHEN substr(NEW.source_cpid, 9, 1) <> substr(n.cpid, 9, 1) THEN 8
      WHEN substr(NEW.source_cpid, 10, 1) <> substr(n.cpid, 10, 1) THEN 9
      WHEN substr(NEW.source_cpid, 11, 1) <> substr(n.cpid, 11, 1) THEN 10
      WHEN substr(NEW.source_cpid, 12, 1) <> substr(n.cpid, 12, 1) THEN 11
      WHEN substr(NEW.source_cpid, 13, 1) <> substr(n.cpid, 13, 1) THEN 12
      WHEN substr(NEW.source_cpid, 14, 1) <> substr(n.cpid, 14, 1) THEN 13
      WHEN substr(NEW.source_cpid, 15, 1) <> substr(n.cpid, 15, 1) THEN 14
      WHEN substr(NEW.source_cpid, 16, 1) <> substr(n.cpid, 16, 1) THEN 15
      WHEN substr(NEW.source_cpid, 17, 1) <> substr(n.cpid, 17, 1) THEN 16
      WHEN substr(NEW.source_cpid, 18, 1) <> substr(n.cpid, 18, 1) THEN 17
      WHEN substr(NEW.source_cpid, 19, 1) <> substr(n.cpid, 19, 1) THEN 18
      WHEN substr(NEW.source_cpid, 20, 1) <> substr(n.cpid, 20, 1) THEN 19
      WHEN substr(NEW.source_cpid, 21, 1) <> substr(n.cpid, 21, 1) THEN 20
      WHEN substr(NEW.source_cpid, 22, 1) <> substr(n.cpid, 22, 1) THEN 21
      WHEN substr(NEW.source_cpid, 23, 1) <> substr(n.cpid, 23, 1) THEN 22
      WHEN substr(NEW.source_cpid, 24, 1) <> substr(n.cpid, 24, 1) THEN 23
      WHEN substr(NEW.source_cpid, 25, 1) <> substr(n.cpid, 25, 1) THEN 24
      WHEN substr(NEW.source_cpid, 26, 1) <> substr(n.cpid, 26, 1) THEN 25
      WHEN substr(NEW.source_cpid, 27, 1) <> substr(n.cpid, 27, 1) THEN 26
      WHEN substr(NEW.source_cpid, 28, 1) <> substr(n.cpid, 28, 1) THEN 27
      WHEN substr(NEW.source_cpid, 29, 1) <> substr(n.cpid, 29, 1) THEN 28
      WHEN substr(NEW.source_cpid, 30, 1) <> substr(n.cpid, 30, 1) THEN 29
      WHEN substr(NEW.source_cpid, 31, 1) <> substr(n.cpid, 31, 1) THEN 30
      WHEN substr(NEW.source_cpid, 32, 1) <> substr(n.cpid, 32, 1) THEN 31
      WHEN substr(NEW.source_cpid, 33, 1) <> substr(n.cpid, 33, 1) THEN 32
      WHEN substr(NEW.source_cpid, 34, 1) <> substr(n.cpid, 34, 1) THEN 33
      WHEN substr(NEW.source_cpid, 35, 1) <> substr(n.cpid, 35, 1) THEN 34
      WHEN substr(NEW.source_cpid, 36, 1) <> substr(n.cpid, 36, 1) THEN 35
      WHEN substr(NEW.source_cpid, 37, 1) <> substr(n.cpid, 37, 1) THEN 36
      WHEN substr(NEW.source_cpid, 38, 1) <> substr(n.cpid, 38, 1) THEN 37
      WHEN substr(NEW.source_cpid, 39, 1) <> substr(n.cpid, 39, 1) THEN 38
      WHEN substr(NEW.source_cpid, 40, 1) <> substr(n.cpid, 40, 1) THEN 39
      ELSE 40 END
      FROM cpid_ids n WHERE n.cpid > NEW.source_cpid ORDER BY n.cpid LIMIT 1), 0));
  UPDATE cpid_ids SET refs = refs + 1 WHERE cpid = NEW.source_cpid;
END;
