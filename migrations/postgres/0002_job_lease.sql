-- Job leases (see ../0002_job_lease.sql): `heartbeat` in unix seconds. On
-- PostgreSQL a worker claims with `FOR UPDATE SKIP LOCKED`, so replicas
-- never claim the same queued job.
ALTER TABLE jobs ADD COLUMN heartbeat BIGINT;
