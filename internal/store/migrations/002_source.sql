-- 002: where a run came from ("run" measured here, "import" from a file),
-- and an index for listing runs by time.
ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'run';
CREATE INDEX runs_time ON runs(time);
