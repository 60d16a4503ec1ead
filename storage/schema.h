// The schema of trainctld's SQLite database, as the migrations that build it: migration i takes
// a database from schema version i to i + 1 (PRAGMA user_version). Store::Open applies the
// pending ones in order, each in its own transaction; Store::kSchemaVersion is their count.
#pragma once

namespace trainctl::storage {

// Append only; never edit a shipped one (tests/storage/store_test.cc keeps frozen copies of the
// first ones and migrates from them).
inline constexpr const char* kMigrations[] = {
    // 0 -> 1: the first schema.
    R"sql(
    CREATE TABLE jobs (
      id        TEXT PRIMARY KEY,
      project   TEXT NOT NULL,
      state     INTEGER NOT NULL,
      priority  INTEGER NOT NULL,
      create_ms INTEGER NOT NULL,
      update_ms INTEGER NOT NULL,
      data      BLOB NOT NULL            -- trainctl.v1.Job without attempts
    );
    CREATE INDEX jobs_by_state ON jobs(state, priority, create_ms);
    CREATE TABLE attempts (
      job_id   TEXT NOT NULL REFERENCES jobs(id),
      number   INTEGER NOT NULL,
      state    INTEGER NOT NULL,
      reason   TEXT NOT NULL,
      start_ms INTEGER NOT NULL,
      end_ms   INTEGER NOT NULL,
      nodes    TEXT NOT NULL,            -- comma-separated node names
      PRIMARY KEY (job_id, number)
    );
    CREATE TABLE replica_runs (
      run_id    TEXT PRIMARY KEY,        -- job/attempt/replica/restart
      job_id    TEXT NOT NULL REFERENCES jobs(id),
      attempt   INTEGER NOT NULL,
      replica   TEXT NOT NULL,
      restart   INTEGER NOT NULL,
      node      TEXT NOT NULL,
      state     INTEGER NOT NULL,
      pid       INTEGER NOT NULL,
      exit_code INTEGER,
      signal    INTEGER,
      oom       INTEGER NOT NULL,
      message   TEXT NOT NULL,
      start_ms  INTEGER NOT NULL,
      end_ms    INTEGER NOT NULL
    );
    CREATE INDEX runs_by_job ON replica_runs(job_id, attempt);
    CREATE TABLE nodes (
      name              TEXT PRIMARY KEY,
      address           TEXT NOT NULL,
      capacity_cpu      REAL NOT NULL,
      capacity_mem_mb   INTEGER NOT NULL,
      capacity_gpus     INTEGER NOT NULL,
      alloc_cpu         REAL NOT NULL,
      alloc_mem_mb      INTEGER NOT NULL,
      alloc_gpus        INTEGER NOT NULL,
      labels            TEXT NOT NULL,   -- k=v lines
      agent_instance    TEXT NOT NULL,
      registered_ms     INTEGER NOT NULL,
      last_heartbeat_ms INTEGER NOT NULL
    );
    CREATE TABLE events (
      seq     INTEGER PRIMARY KEY AUTOINCREMENT,
      time_ms INTEGER NOT NULL,
      job_id  TEXT NOT NULL,
      attempt INTEGER NOT NULL,
      replica TEXT NOT NULL,
      node    TEXT NOT NULL,
      type    TEXT NOT NULL,
      reason  TEXT NOT NULL
    );
    CREATE INDEX events_by_job ON events(job_id, seq);
    CREATE INDEX events_by_node ON events(node, seq);
    )sql",
    // 1 -> 2: project quotas.
    R"sql(
    CREATE TABLE quotas (
      project TEXT PRIMARY KEY,
      data    BLOB NOT NULL                -- trainctl.v1.Quota
    );
    )sql",
    // 2 -> 3: node availability and health.
    R"sql(
    ALTER TABLE nodes ADD COLUMN status BLOB NOT NULL DEFAULT x'';  -- trainctl.v1.Node, state on
    )sql",
    // 3 -> 4: the whole attempt (failure class, rule, replica, node, decision, budgets left).
    R"sql(
    ALTER TABLE attempts ADD COLUMN data BLOB;  -- trainctl.v1.Attempt; NULL in older rows
    )sql",
    // 4 -> 5: API tokens, and who caused each event.
    R"sql(
    CREATE TABLE tokens (
      id   TEXT PRIMARY KEY,
      hash TEXT NOT NULL UNIQUE,         -- SHA-256 of the whole bearer token, hex
      data BLOB NOT NULL                 -- trainctl.v1.ApiToken
    );
    ALTER TABLE events ADD COLUMN actor TEXT NOT NULL DEFAULT '';
    CREATE INDEX events_by_actor ON events(actor, seq);
    )sql",
    // 5 -> 6: certificates revoked for nodes that were deleted since.
    R"sql(
    CREATE TABLE revoked_certificates (
      fingerprint TEXT PRIMARY KEY,
      node        TEXT NOT NULL
    );
    )sql",
    // 6 -> 7: terminal jobs (SUCCEEDED, FAILED, CANCELLED) by their last change, for retention.
    R"sql(
    CREATE INDEX jobs_ended ON jobs(update_ms, id) WHERE state IN (4, 5, 7);
    )sql",
    // 7 -> 8: reads of jobs from the database (those no longer in memory): newest first, of all
    // projects or one; the live jobs alone, for start-up; a creator's request ids. Store::Migrate
    // fills request_key for the jobs of the last day (RequestIndex::kWindow), from their data.
    R"sql(
    ALTER TABLE jobs ADD COLUMN request_key TEXT;  -- creator "\n" request id; NULL without one
    CREATE INDEX jobs_by_age ON jobs(create_ms DESC, id);
    CREATE INDEX jobs_by_project ON jobs(project, create_ms DESC, id);
    CREATE INDEX jobs_live ON jobs(create_ms, id) WHERE state NOT IN (4, 5, 7);
    CREATE INDEX jobs_by_request ON jobs(request_key, create_ms) WHERE request_key IS NOT NULL;
    )sql",
    // 8 -> 9: the leader lease of trainctld sharing a PostgreSQL store (storage/pg_lease.h). An
    // SQLite store has one trainctld, which never leases: the table stays as created, so that
    // both dialects keep one schema at each version.
    R"sql(
    CREATE TABLE leader_lease (
      id           INTEGER PRIMARY KEY CHECK (id = 1),
      epoch        INTEGER NOT NULL,
      holder       TEXT NOT NULL,
      address      TEXT NOT NULL,
      http_address TEXT NOT NULL,
      expires_ms   INTEGER NOT NULL
    );
    INSERT INTO leader_lease VALUES (1, 0, '', '', '', 0);
    )sql",
    // 9 -> 10: the cluster's own secrets, by name (Store::AdoptSecret): the key of replicas'
    // tokens, shared by every trainctld of a PostgreSQL store.
    R"sql(
    CREATE TABLE cluster_secrets (
      name  TEXT PRIMARY KEY,
      value BLOB NOT NULL
    );
    )sql",
    // 10 -> 11: no index of jobs by state, which no read uses (the live jobs are read through
    // jobs_live, the ended ones through jobs_ended) and every change of a job's row rewrote.
    R"sql(
    DROP INDEX jobs_by_state;
    )sql",
    // 11 -> 12: a node's events by block of 4,096 (job_rows.h, kEventBlockBits), then node.
    // Keyed by node first, as before, each of a turn's events went to a page of its own node's,
    // so a commit wrote about one page per event; the blocks keep a turn's events together.
    R"sql(
    DROP INDEX events_by_node;
    CREATE INDEX events_by_node_block ON events((seq >> 12), node, seq);
    )sql",
    // 12 -> 13: each project's replica uid (scheduler/project_uids.h), given once and kept; no
    // two projects share one.
    R"sql(
    CREATE TABLE project_uids (
      project TEXT PRIMARY KEY,
      uid     INTEGER NOT NULL UNIQUE
    );
    )sql",
    // 13 -> 14: each project's fair-share ledger (scheduler/fair_share.h): its decayed usage in
    // GPU-, CPU- and MiB-seconds as of as_of_ms, written at most once a minute.
    R"sql(
    CREATE TABLE project_usage (
      project           TEXT PRIMARY KEY,
      gpu_seconds       REAL NOT NULL,
      cpu_seconds       REAL NOT NULL,
      memory_mb_seconds REAL NOT NULL,
      as_of_ms          INTEGER NOT NULL
    );
    )sql",
    // 14 -> 15: the secrets projects keep for their jobs (server/secret_box.h): each value sealed
    // with AES-256-GCM under the key beside the database, never in the clear.
    R"sql(
    CREATE TABLE project_secrets (
      project   TEXT NOT NULL,
      name      TEXT NOT NULL,
      sealed    BLOB NOT NULL,
      size      INTEGER NOT NULL,
      update_ms INTEGER NOT NULL,
      PRIMARY KEY (project, name)
    );
    )sql",
    // 15 -> 16: the working directories jobs are submitted with (storage/workdir_store.h): each
    // archive once per (project, digest), in chunks of at most 1 MiB numbered from 0, complete
    // once its last chunk is written; and which jobs use each, so that it goes with the last.
    R"sql(
    CREATE TABLE workdirs (
      project   TEXT NOT NULL,
      digest    TEXT NOT NULL,           -- "sha256:<hex>" of the archive
      size      INTEGER NOT NULL,
      upload_ms INTEGER NOT NULL,
      complete  INTEGER NOT NULL,        -- 1 once every chunk is written, else 0
      PRIMARY KEY (project, digest)
    );
    CREATE TABLE workdir_chunks (
      project TEXT NOT NULL,
      digest  TEXT NOT NULL,
      seq     INTEGER NOT NULL,
      data    BLOB NOT NULL,
      PRIMARY KEY (project, digest, seq)
    );
    CREATE TABLE workdir_uses (
      project TEXT NOT NULL,
      digest  TEXT NOT NULL,
      job_id  TEXT NOT NULL,             -- a jobs row, or one about to be (or deleted since)
      add_ms  INTEGER NOT NULL,
      PRIMARY KEY (project, digest, job_id)
    );
    )sql",
    // 16 -> 17: nothing. PostgreSQL's store gains the tables of the runs' logs (pg_schema.h);
    // beside SQLite they are segment files of their own (storage/file_log_store.h).
    R"sql(
    SELECT 1;
    )sql",
    // 17 -> 18: the hourly usage rollup (scheduler/usage_rollup.h): what each (project, creator,
    // node, labels) used in each hour, undecayed, written whole by upsert. Kept beyond job
    // retention; trainctld --usage-retention deletes rows by their hour.
    R"sql(
    CREATE TABLE IF NOT EXISTS usage_hours (
      hour_ms            INTEGER NOT NULL,   -- the hour's start, ms since the epoch (UTC)
      project            TEXT NOT NULL,
      creator            TEXT NOT NULL,
      node               TEXT NOT NULL,
      labels             TEXT NOT NULL,      -- "k=v,k2=v2" (model/usage_ledger.h)
      gpu_seconds        REAL NOT NULL,
      cpu_seconds        REAL NOT NULL,
      memory_mb_seconds  REAL NOT NULL,
      runs               INTEGER NOT NULL,
      wall_seconds       REAL NOT NULL,
      queue_wait_seconds REAL NOT NULL,
      PRIMARY KEY (hour_ms, project, creator, node, labels)
    );
    )sql",
    // 18 -> 19: the stacks agents captured before stopping runs (`trainctl stacks`), one row per
    // run, deleted with their job.
    R"sql(
    CREATE TABLE IF NOT EXISTS replica_stacks (
      run_id     TEXT PRIMARY KEY,         -- job/attempt/replica/restart
      job_id     TEXT NOT NULL,
      attempt    INTEGER NOT NULL,
      replica    TEXT NOT NULL,
      capture_ms INTEGER NOT NULL,
      data       BLOB NOT NULL             -- trainctl.v1.ReplicaStacks
    );
    CREATE INDEX IF NOT EXISTS stacks_by_job ON replica_stacks(job_id, attempt);
    )sql",
};

}  // namespace trainctl::storage
