-- tail_checkpoints: where `cpid-tui tail` stands in each log it follows,
-- written in the same transaction as the records read before it, with the
-- source's counters. See docs/SCHEMA.md.
CREATE TABLE tail_checkpoints (
  source          TEXT    PRIMARY KEY, -- the followed live path
  file            TEXT    NOT NULL,    -- name of the file being read when it was opened (a hint)
  fingerprint     BLOB    NOT NULL,    -- SHA-256 prefix of the file's first fingerprint_len bytes
  fingerprint_len INTEGER NOT NULL,    -- 0: nothing of the source stored yet
  offset          INTEGER NOT NULL,    -- bytes of the (decompressed) content stored
  line            INTEGER NOT NULL,    -- lines stored
  device          INTEGER NOT NULL,    -- hints
  inode           INTEGER NOT NULL,
  lines           INTEGER NOT NULL,    -- counters since the source was first tailed
  records         INTEGER NOT NULL,
  dups            INTEGER NOT NULL,
  bad             INTEGER NOT NULL,
  possible_loss   INTEGER NOT NULL,
  newest_ns       INTEGER NOT NULL,    -- newest record time stored
  committed_ns    INTEGER NOT NULL     -- when the last checkpoint was committed
);
