// The schema of trainctld's PostgreSQL database (storage/pg_store.h), as its migrations: the
// same tables, columns and indexes as SQLite's (storage/schema.h) at the same version numbers
// (but for version 17's log tables, PostgreSQL's alone), in PostgreSQL's dialect: BIGINT for
// integers and millisecond times, DOUBLE PRECISION for reals, BYTEA for blobs, the "C" collation
// for the keys rows are ordered by (SQLite's byte order), BIGSERIAL where SQLite has a rowid, and
// the version in the one-row table schema_version (SQLite's PRAGMA user_version).
//
// No PostgreSQL database ever held a schema older than kPgFirstVersion, so the first migration
// builds that version whole; each later one takes version v to v + 1, like SQLite's, and is
// added to both files together.
#pragma once

#include "storage/store.h"

namespace trainctl::storage {

inline constexpr int kPgFirstVersion = 8;

// Append only; never edit a shipped one. kPgMigrations[0] takes an empty database to
// kPgFirstVersion, kPgMigrations[i] (i > 0) version kPgFirstVersion + i - 1 to the next.
inline constexpr const char* kPgMigrations[] = {
    // 0 -> 8: the schema of SQLite's migrations 1 to 8.
    R"sql(
    CREATE TABLE schema_version (
      version INTEGER NOT NULL
    );
    CREATE TABLE jobs (
      id          TEXT COLLATE "C" PRIMARY KEY,
      project     TEXT COLLATE "C" NOT NULL,
      state       BIGINT NOT NULL,
      priority    BIGINT NOT NULL,
      create_ms   BIGINT NOT NULL,
      update_ms   BIGINT NOT NULL,
      data        BYTEA NOT NULL,         -- trainctl.v1.Job without attempts
      request_key TEXT                    -- creator "\n" request id; NULL without one
    );
    CREATE INDEX jobs_by_state ON jobs(state, priority, create_ms);
    CREATE INDEX jobs_ended ON jobs(update_ms, id) WHERE state IN (4, 5, 7);
    CREATE INDEX jobs_by_age ON jobs(create_ms DESC, id);
    CREATE INDEX jobs_by_project ON jobs(project, create_ms DESC, id);
    CREATE INDEX jobs_live ON jobs(create_ms, id) WHERE state NOT IN (4, 5, 7);
    CREATE INDEX jobs_by_request ON jobs(request_key, create_ms) WHERE request_key IS NOT NULL;
    CREATE TABLE attempts (
      job_id   TEXT COLLATE "C" NOT NULL REFERENCES jobs(id),
      number   BIGINT NOT NULL,
      state    BIGINT NOT NULL,
      reason   TEXT NOT NULL,
      start_ms BIGINT NOT NULL,
      end_ms   BIGINT NOT NULL,
      nodes    TEXT NOT NULL,             -- comma-separated node names
      data     BYTEA,                     -- trainctl.v1.Attempt
      PRIMARY KEY (job_id, number)
    );
    CREATE TABLE replica_runs (
      run_id    TEXT PRIMARY KEY,         -- job/attempt/replica/restart
      job_id    TEXT COLLATE "C" NOT NULL REFERENCES jobs(id),
      attempt   BIGINT NOT NULL,
      replica   TEXT NOT NULL,
      restart   BIGINT NOT NULL,
      node      TEXT NOT NULL,
      state     BIGINT NOT NULL,
      pid       BIGINT NOT NULL,
      exit_code BIGINT,
      signal    BIGINT,
      oom       BIGINT NOT NULL,
      message   TEXT NOT NULL,
      start_ms  BIGINT NOT NULL,
      end_ms    BIGINT NOT NULL
    );
    CREATE INDEX runs_by_job ON replica_runs(job_id, attempt);
    CREATE TABLE nodes (
      name              TEXT COLLATE "C" PRIMARY KEY,
      address           TEXT NOT NULL,
      capacity_cpu      DOUBLE PRECISION NOT NULL,
      capacity_mem_mb   BIGINT NOT NULL,
      capacity_gpus     BIGINT NOT NULL,
      alloc_cpu         DOUBLE PRECISION NOT NULL,
      alloc_mem_mb      BIGINT NOT NULL,
      alloc_gpus        BIGINT NOT NULL,
      labels            TEXT NOT NULL,    -- k=v lines
      agent_instance    TEXT NOT NULL,
      registered_ms     BIGINT NOT NULL,
      last_heartbeat_ms BIGINT NOT NULL,
      status            BYTEA NOT NULL DEFAULT '\x'  -- trainctl.v1.Node, state on
    );
    CREATE TABLE events (
      seq     BIGSERIAL PRIMARY KEY,
      time_ms BIGINT NOT NULL,
      job_id  TEXT NOT NULL,
      attempt BIGINT NOT NULL,
      replica TEXT NOT NULL,
      node    TEXT NOT NULL,
      type    TEXT NOT NULL,
      reason  TEXT NOT NULL,
      actor   TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX events_by_job ON events(job_id, seq);
    CREATE INDEX events_by_node ON events(node, seq);
    CREATE INDEX events_by_actor ON events(actor, seq);
    CREATE TABLE quotas (
      project TEXT COLLATE "C" PRIMARY KEY,
      data    BYTEA NOT NULL              -- trainctl.v1.Quota
    );
    CREATE TABLE tokens (
      seq  BIGSERIAL NOT NULL,            -- creation order (SQLite's rowid)
      id   TEXT COLLATE "C" PRIMARY KEY,
      hash TEXT NOT NULL UNIQUE,          -- SHA-256 of the whole bearer token, hex
      data BYTEA NOT NULL                 -- trainctl.v1.ApiToken
    );
    CREATE TABLE revoked_certificates (
      fingerprint TEXT COLLATE "C" PRIMARY KEY,
      node        TEXT NOT NULL
    );
    )sql",
    // 8 -> 9: the leader lease (storage/pg_lease.h): one row naming the leader, its epoch and
    // when its lease ends (the database's clock, in Unix ms), and the fence every write
    // transaction of a leader runs first (kFenceSqlState when its epoch has passed).
    R"sql(
    CREATE TABLE leader_lease (
      id           INTEGER PRIMARY KEY CHECK (id = 1),
      epoch        BIGINT NOT NULL,
      holder       TEXT NOT NULL,
      address      TEXT NOT NULL,
      http_address TEXT NOT NULL,
      expires_ms   BIGINT NOT NULL
    );
    INSERT INTO leader_lease VALUES (1, 0, '', '', '', 0);
    CREATE FUNCTION trainctl_fence(mine BIGINT) RETURNS INTEGER LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM 1 FROM leader_lease WHERE id = 1 AND epoch = mine FOR SHARE;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'the leader lease of epoch % has passed to another trainctld', mine
          USING ERRCODE = 'TCF01';
      END IF;
      RETURN 1;
    END $$;
    )sql",
    // 9 -> 10: the cluster's own secrets, by name (Store::AdoptSecret).
    R"sql(
    CREATE TABLE cluster_secrets (
      name  TEXT COLLATE "C" PRIMARY KEY,
      value BYTEA NOT NULL
    );
    )sql",
    // 10 -> 11: no index of jobs by state (schema.h).
    R"sql(
    DROP INDEX jobs_by_state;
    )sql",
    // 11 -> 12: a node's events by block of 4,096, then node (schema.h).
    R"sql(
    DROP INDEX events_by_node;
    CREATE INDEX events_by_node_block ON events((seq >> 12), node, seq);
    )sql",
    // 12 -> 13: each project's replica uid (schema.h).
    R"sql(
    CREATE TABLE project_uids (
      project TEXT COLLATE "C" PRIMARY KEY,
      uid     BIGINT NOT NULL UNIQUE
    );
    )sql",
    // 13 -> 14: each project's fair-share ledger (schema.h).
    R"sql(
    CREATE TABLE project_usage (
      project           TEXT COLLATE "C" PRIMARY KEY,
      gpu_seconds       DOUBLE PRECISION NOT NULL,
      cpu_seconds       DOUBLE PRECISION NOT NULL,
      memory_mb_seconds DOUBLE PRECISION NOT NULL,
      as_of_ms          BIGINT NOT NULL
    );
    )sql",
    // 14 -> 15: projects' sealed secrets (schema.h).
    R"sql(
    CREATE TABLE project_secrets (
      project   TEXT COLLATE "C" NOT NULL,
      name      TEXT COLLATE "C" NOT NULL,
      sealed    BYTEA NOT NULL,
      size      BIGINT NOT NULL,
      update_ms BIGINT NOT NULL,
      PRIMARY KEY (project, name)
    );
    )sql",
    // 15 -> 16: working directories, their chunks and their uses (schema.h).
    R"sql(
    CREATE TABLE workdirs (
      project   TEXT COLLATE "C" NOT NULL,
      digest    TEXT COLLATE "C" NOT NULL,
      size      BIGINT NOT NULL,
      upload_ms BIGINT NOT NULL,
      complete  BIGINT NOT NULL,
      PRIMARY KEY (project, digest)
    );
    CREATE TABLE workdir_chunks (
      project TEXT COLLATE "C" NOT NULL,
      digest  TEXT COLLATE "C" NOT NULL,
      seq     BIGINT NOT NULL,
      data    BYTEA NOT NULL,
      PRIMARY KEY (project, digest, seq)
    );
    CREATE TABLE workdir_uses (
      project TEXT COLLATE "C" NOT NULL,
      digest  TEXT COLLATE "C" NOT NULL,
      job_id  TEXT COLLATE "C" NOT NULL,
      add_ms  BIGINT NOT NULL,
      PRIMARY KEY (project, digest, job_id)
    );
    )sql",
    // 16 -> 17: trainctld's copy of the runs' logs (storage/pg_log_store.h), PostgreSQL's alone:
    // beside SQLite they are segment files (storage/file_log_store.h), and SQLite's migration 17
    // adds nothing. A run's row says where its copy stands; a piece's row holds the bytes of
    // [start_offset, next_offset) of the log, or a gap's marker.
    R"sql(
    CREATE TABLE log_runs (
      run_id    TEXT COLLATE "C" PRIMARY KEY,
      job_id    TEXT COLLATE "C" NOT NULL,
      node      TEXT NOT NULL,
      stored    BIGINT NOT NULL,
      file_size BIGINT NOT NULL,
      final     BIGINT NOT NULL,
      last_ms   BIGINT NOT NULL,
      bytes     BIGINT NOT NULL
    );
    CREATE INDEX log_runs_by_job ON log_runs(job_id);
    CREATE TABLE log_pieces (
      run_id       TEXT COLLATE "C" NOT NULL REFERENCES log_runs(run_id),
      start_offset BIGINT NOT NULL,
      next_offset  BIGINT NOT NULL,
      time_ms      BIGINT NOT NULL,
      gap          BIGINT NOT NULL,
      data         BYTEA NOT NULL,
      PRIMARY KEY (run_id, start_offset)
    );
    )sql",
    // 17 -> 18: the hourly usage rollup (schema.h).
    R"sql(
    CREATE TABLE IF NOT EXISTS usage_hours (
      hour_ms            BIGINT NOT NULL,
      project            TEXT COLLATE "C" NOT NULL,
      creator            TEXT COLLATE "C" NOT NULL,
      node               TEXT COLLATE "C" NOT NULL,
      labels             TEXT COLLATE "C" NOT NULL,
      gpu_seconds        DOUBLE PRECISION NOT NULL,
      cpu_seconds        DOUBLE PRECISION NOT NULL,
      memory_mb_seconds  DOUBLE PRECISION NOT NULL,
      runs               BIGINT NOT NULL,
      wall_seconds       DOUBLE PRECISION NOT NULL,
      queue_wait_seconds DOUBLE PRECISION NOT NULL,
      PRIMARY KEY (hour_ms, project, creator, node, labels)
    );
    )sql",
    // 18 -> 19: the stacks captured before stops (schema.h).
    R"sql(
    CREATE TABLE IF NOT EXISTS replica_stacks (
      run_id     TEXT COLLATE "C" PRIMARY KEY,
      job_id     TEXT COLLATE "C" NOT NULL,
      attempt    BIGINT NOT NULL,
      replica    TEXT COLLATE "C" NOT NULL,
      capture_ms BIGINT NOT NULL,
      data       BYTEA NOT NULL
    );
    CREATE INDEX IF NOT EXISTS stacks_by_job ON replica_stacks(job_id, attempt);
    )sql",
};

// The SQLSTATE of trainctl_fence's error: this trainctld's lease epoch is no longer current.
inline constexpr char kFenceSqlState[] = "TCF01";

static_assert(kPgFirstVersion + static_cast<int>(sizeof(kPgMigrations) / sizeof(kPgMigrations[0])) -
                  1 ==
              Store::kSchemaVersion);

}  // namespace trainctl::storage
