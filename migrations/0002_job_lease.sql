-- Job leases: the worker that runs a job writes `heartbeat` (unix seconds)
-- every few seconds, together with `rounds_done`. A `running` job whose
-- heartbeat is older than the lease is re-queued by any process, so jobs of
-- a crashed process re-run while live processes sharing the file keep theirs.
-- `attempts` (incremented at each claim) fences a worker that lost its lease:
-- its updates match no row.
ALTER TABLE jobs ADD COLUMN heartbeat INTEGER;
