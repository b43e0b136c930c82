-- Reconstruct saves what its engine knows of each object as a row of its
-- own, beside the watermark (reconstruct_state), so that an incremental
-- run loads the objects its new writes touch instead of the state of
-- every object the cluster ever had (issue 31).
CREATE TABLE reconstruct_objects (
  cluster TEXT  NOT NULL,
  key     TEXT  NOT NULL, -- cpid.ObjectKey.String()
  uid     TEXT  NOT NULL, -- metadata.uid, '' when not known
  state   BYTEA NOT NULL, -- the engine's encoding (JSON)
  PRIMARY KEY (cluster, key)
);
-- Owner references name their owner by uid.
CREATE INDEX reconstruct_objects_uid ON reconstruct_objects(uid) WHERE uid <> '';
