-- 001: one row per stored run (the whole result document) and one per arm,
-- so history can count arms and noisy arms without decoding documents.
CREATE TABLE runs (
	id     TEXT PRIMARY KEY,
	time   TEXT NOT NULL,    -- RFC 3339, UTC
	host   TEXT NOT NULL,
	suite  TEXT NOT NULL,
	schema INTEGER NOT NULL, -- result.SchemaVersion of doc
	doc    TEXT NOT NULL     -- the run as JSON (internal/result)
);
CREATE TABLE arms (
	run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	experiment TEXT NOT NULL,
	substrate  TEXT NOT NULL,
	status     TEXT NOT NULL,
	median     REAL NOT NULL,
	unit       TEXT NOT NULL,
	noisy      INTEGER NOT NULL,
	PRIMARY KEY (run_id, name)
);
