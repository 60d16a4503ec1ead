#include "server/daemon_flag_table.h"

namespace trainctl::server {
namespace {
using Kind = FlagSpec::Kind;
}  // namespace

// Defaults live in DaemonFlags; the help states them.
std::vector<FlagGroup> DaemonFlagGroups() {
  return {
      {"Flags:",
       {{"config", 0, Kind::kValue, "FILE", "",
         "read settings from FILE, a YAML mapping whose keys are these flags without \"--\" "
         "(e.g. /etc/trainctl/trainctld.yaml); flags given here override it. SIGHUP re-reads it: "
         "log-level and default-quota-* apply at once, other changes at the next start"},
        {"print-config", 0, Kind::kBool, "", "",
         "print the effective configuration (the file, the flags and the defaults) as a config "
         "file, and exit"},
        {"data-dir", 0, Kind::kValue, "DIR", "",
         "where the database (trainctl.db) lives, and trainctld's own files (its lock, address "
         "files, the first admin token); created if missing (required)"},
        {"store", 0, Kind::kValue, "URI", "",
         "keep the state in a PostgreSQL database instead of DIR/trainctl.db: "
         "postgres://USER@HOST/DB, or any libpq connection URI (postgresql:// too); the "
         "database needs a role that may create tables in it (default: the SQLite file)"},
        {"listen", 0, Kind::kValue, "HOST:PORT", "",
         "gRPC address for the CLI, pipelines and agents (default 127.0.0.1:7070; port 0 picks a "
         "free port; the address in use is written to DIR/trainctld.addr)"},
        {"http-listen", 0, Kind::kValue, "HOST:PORT", "",
         "the REST API, the web console and Prometheus metrics (GET /metrics; with TLS a token "
         "of any role) (default 127.0.0.1:7080; port 0 picks a free port, "
         "written to DIR/trainctld.http-addr; \"off\" serves none). HTTPS with --tls-cert"},
        {"http-allowed-hosts", 0, Kind::kValue, "NAME,...", "",
         "Host names the REST API and console answer to beside their own (loopback, IP addresses, "
         "this host's name, the listen and advertised hosts, the TLS certificate's names); "
         "others are refused, so that a web "
         "page cannot rebind its DNS name to trainctld. Needed for a DNS name of a 0.0.0.0 "
         "listener, a load balancer's or an HA pair's name; \"*\": any, only behind a load "
         "balancer that checks Host itself"},
        {"http-max-streams", 0, Kind::kValue, "N", "",
         "long-lived HTTP streams (job watches, log follows) served at once; more are refused "
         "with 429, and ordinary requests keep threads of their own (default 64; 1..4096)"},
        {"checkpoint-root", 0, Kind::kValue, "DIR", "",
         "parent of each job's default checkpoint directory; point it at a filesystem every node "
         "mounts (default DIR-checkpoints beside the data dir, which replicas cannot enter)"},
        {"checkpoint-allowed-roots", 0, Kind::kValue, "DIR,...", "",
         "absolute directories under which a job may name its own checkpointDir (default: the "
         "checkpoint root)"},
        {"replica-uid-range", 0, Kind::kValue, "FIRST-LAST", "",
         "the uids projects' replicas run under where no user is named for them: each project "
         "gets one of its own at its first job, the same on every host (default 65536-99999)"},
        {"heartbeat-interval", 0, Kind::kValue, "D", "",
         "how often agents send heartbeats (default 2s)"},
        {"node-lost-timeout", 0, Kind::kValue, "D", "",
         "a node not heard from for this long is LOST and its replicas move to other nodes "
         "(default 15s; at least 3 heartbeat intervals)"},
        {"flap-threshold", 0, Kind::kValue, "N", "",
         "a node isolated N times within --flap-window is flapping: it stays out until "
         "`trainctl node uncordon` (default 3; 0 turns it off)"},
        {"flap-window", 0, Kind::kValue, "D", "", "see --flap-threshold (default 1h)"},
        {"settle-window", 0, Kind::kValue, "D", "",
         "GANG jobs: how long a non-transient exit waits for an earlier failure of a peer before "
         "it is decided; a job's scheduling.settleWindow overrides it (default 3s; 0s..60s)"},
        {"clock-skew-tolerance", 0, Kind::kValue, "D", "",
         "GANG jobs: failures whose exit times are this close count as simultaneous, and one "
         "that is not the user's is then the root cause (default 1s; 0s..10s)"},
        {"fair-share", 0, Kind::kValue, "on|off", "",
         "across projects, take the next job from the project with the lowest fair share (its "
         "decayed usage over its quota's weight); off: by priority, then submission time "
         "(default on)"},
        {"fair-share-half-life", 0, Kind::kValue, "D", "",
         "usage counts half after this long (default 7d; 1h..3650d)"},
        {"fair-share-resource-weights", 0, Kind::kValue, "gpu=W,cpu=W,memory=W", "",
         "how much a fraction of the cluster's GPUs, CPUs and memory counts in a project's usage; "
         "the dominant one counts (default gpu=1,cpu=1,memory=1)"},
        {"reservation-after", 0, Kind::kValue, "D|off", "",
         "a job blocked on capacity (not its quota) this long gets the cluster's reservation: "
         "the nodes where it would start soonest are kept for it, and another job starts there "
         "only if its scheduling.timeout ends before then; one job at a time (default 10m; "
         "0s..30d; off: never)"},
        {"straggler-ratio", 0, Kind::kValue, "R", "",
         "a rank of a gang whose step rate (the steps its replicas report) stays below R times "
         "the gang's median for a whole --straggler-window is a straggler: a StragglerDetected "
         "event names it and its node (default 0.7; 0.05..0.95)"},
        {"straggler-window", 0, Kind::kValue, "D", "",
         "over how long step rates are measured, and how long a rank must stay slow "
         "(default 5m; 1s..24h)"},
        {"gang-check-timeout", 0, Kind::kValue, "D", "",
         "how long the agents of a multi-node gang's nodes have to answer each round of the "
         "fabric check before its replicas start (faultTolerance.gangCheck); a node that does "
         "not answer in time fails its probes (default 1m; 1s..1h)"},
        {"job-retention", 0, Kind::kValue, "D", "",
         "jobs that ended longer ago are deleted, with their attempts, runs and events, a few at "
         "a time (default 90d; 0: keep every job; `trainctl delete` deletes one sooner)"},
        {"usage-retention", 0, Kind::kValue, "D", "",
         "hourly usage rows (`trainctl usage`) older than this are deleted; they outlive the "
         "jobs they count (default 730d; 0: keep them all; 1h..3650d)"},
        {"finished-job-cache", 0, Kind::kValue, "D", "",
         "jobs that ended stay in memory this long after their last change, then are read from "
         "the database, so memory and start-up hold the live jobs, however many are kept "
         "(default 10m; 0s..30d)"},
        {"finished-job-cache-jobs", 0, Kind::kValue, "N", "",
         "at most this many ended jobs stay in memory, and a start loads no more (the last "
         "ended): beyond it the oldest ended ones leave sooner than --finished-job-cache, so a "
         "burst of short jobs cannot fill memory or slow a start (default 10000; 0..10000000)"},
        {"port-range", 0, Kind::kValue, "LO-HI", "",
         "the ports of each node that replicas get: one each, and a second one, the rendezvous "
         "port (MASTER_PORT), for each job's primary (default 20000-32767; at least 64 ports "
         "within 1024-65535)"},
        {"max-request-bytes", 0, Kind::kValue, "N", "",
         "the largest gRPC message trainctld accepts from a client or an agent; larger ones are "
         "refused with RESOURCE_EXHAUSTED before they are parsed (default 4194304, 4 MiB; "
         "2 MiB..64 MiB)"},
        {"max-agent-streams-per-peer", 0, Kind::kValue, "N", "",
         "agent streams one host may hold at once; more are refused with RESOURCE_EXHAUSTED "
         "(default 64; 0: unlimited)"},
        {"max-new-nodes-per-peer", 0, Kind::kValue, "N", "",
         "nodes one host may register under names trainctld does not know yet, per hour; more "
         "are refused with RESOURCE_EXHAUSTED (default 16; 0: unlimited)"},
        {"max-watches-per-peer", 0, Kind::kValue, "N", "",
         "job watch streams (trainctl wait, watch) one host may hold at once (default 256; 0: "
         "unlimited)"},
        {"secret-env-pattern", 0, Kind::kValue, "GLOB,...", "",
         "env entries of jobs whose names match are secrets, like those a pool lists in "
         "secretEnv: replicas get them, reads show \"<redacted>\" (default "
         "*_SECRET*,*_TOKEN*,*_PASSWORD*,*_KEY; none: only secretEnv)"},
        {"secret-key-file", 0, Kind::kValue, "FILE", "",
         "the key (32 bytes, mode 0600) project secrets are sealed with (default "
         "DATA_DIR/secrets.key, made at the first start; with --store postgres required for "
         "secrets, and the same file on every trainctld)"},
        {"max-workdir-mb", 0, Kind::kValue, "N", "",
         "the largest working directory a job may be submitted with (trainctl submit --workdir), "
         "in MiB (default 100; 1..10240)"},
        {"log-dir", 0, Kind::kValue, "DIR", "",
         "where trainctld keeps its copy of the replicas' logs, shipped by the agents (default "
         "DATA_DIR/logs; with --store postgres they are kept in PostgreSQL)"},
        {"log-store-max-gb", 0, Kind::kValue, "GB", "",
         "the most the copy of the replicas' logs may take, in GB of 2^30 bytes (default 10): "
         "past it the logs of the jobs that ended longest ago are deleted first, with a "
         "LogsEvicted event; when none is left to delete, agents keep the rest until there is "
         "room"},
        {"log-level", 0, Kind::kValue, "LEVEL", "",
         "trace, debug, info, warn, error (default info)"},
        {"log-format", 0, Kind::kValue, "FORMAT", "",
         "text, or json: one JSON object per line with time, level, logger, msg and the job, "
         "node and replica it is about; under systemd the journal gets JOB_ID, NODE and REPLICA "
         "fields either way (default text)"},
        {"check-db", 0, Kind::kBool, "", "",
         "check DIR/trainctl.db with SQLite's full integrity_check and exit: 0 when it is sound, "
         "1 with what it found (on a stopped trainctld's data dir, or a backup's)"},
        {"help", 'h', Kind::kBool, "", "", "show this help"},
        {"version", 0, Kind::kBool, "", "", "print the version"}}},
      {"Transport security (a listen address off loopback needs --tls-cert, or\n"
       "--insecure-allow-plaintext; `trainctld pki init` makes every file these flags name):",
       {{"tls-cert", 0, Kind::kValue, "FILE", "",
         "the server's certificate chain (PEM); serve TLS with --tls-key"},
        {"tls-key", 0, Kind::kValue, "FILE", "", "the server's private key (PEM)"},
        {"agent-ca", 0, Kind::kValue, "FILE", "",
         "CA certificates (PEM) that sign agents' client certificates; required with "
         "--tls-cert. An agent must present a certificate whose common name is its node name"},
        {"insecure-allow-plaintext", 0, Kind::kBool, "", "",
         "serve plaintext gRPC on a non-loopback address: anyone who reaches the port can run "
         "any command on every node. Logged as a warning at every start"}}},
      {"High availability: several trainctld with one --store postgres://... database; one leads,\n"
       "the others stand by and answer every call UNAVAILABLE naming it\n"
       "(docs/operators/postgresql-ha.md):",
       {{"lease-duration", 0, Kind::kValue, "D", "",
         "the leader renews its lease in the database this often over; a standby takes over once "
         "it lapses, and a leader that cannot renew for this long steps down (exits 75) "
         "(default 5s; 1s..60s)"},
        {"advertise-address", 0, Kind::kValue, "HOST:PORT", "",
         "the gRPC address clients and agents should use for this trainctld, which standbys name "
         "while it leads (default: --listen's, a wildcard host replaced by this host's name)"},
        {"advertise-http-address", 0, Kind::kValue, "HOST:PORT", "",
         "the same for the REST API (default: --http-listen's)"}}},
      {"Default quota, for every project without a quota of its own (set one with `trainctl quota "
       "set`);\neach limit a non-negative number; unset means unlimited, the default:",
       {{"default-quota-gpus", 0, Kind::kValue, "N", "", "GPUs its jobs may hold at once"},
        {"default-quota-cpu", 0, Kind::kValue, "N", "",
         "CPU cores (fractions allowed) its jobs may hold at once"},
        {"default-quota-memory-mb", 0, Kind::kValue, "N", "",
         "memory in MiB its jobs may hold at once"},
        {"default-quota-max-running-jobs", 0, Kind::kValue, "N", "", "jobs it may run at once"}}},
  };
}

}  // namespace trainctl::server
