// Api: trainctld's user-facing operations, whatever the transport. The gRPC services
// (job_service, cluster_service, quota_service, auth_service, admin_service) and the REST server
// (server/rest/)
// both call it, so every request is authorized, validated and decided in one place:
//
//   api.GetJob(call, req, [](absl::StatusOr<v1::Job> job) { ... });
//
// A CallContext carries what the transport knows of the caller: its "authorization" header and
// its peer. Every operation authorizes the call first (Authorizer; UNAUTHENTICATED or
// PERMISSION_DENIED), checks the request (INVALID_ARGUMENT naming the field), then either
// answers from the published snapshots (reads: get, list, watch) or posts the work to the
// reconcile loop and replies once the turn committed, so an OK reply means the change is durable.
//
// Replies run on the thread that produced them (the caller's, the loop's or an agent stream's):
// they must not block.
//
// Thread-safe: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/work_queue.h"
#include "server/agent_registry.h"
#include "server/authorizer.h"
#include "server/job_snapshots.h"
#include "server/peer_limits.h"
#include "server/project_secrets.h"
#include "server/reconcile_loop.h"
#include "server/tokens.h"
#include "server/transport_security.h"
#include "server/watch_hub.h"
#include "storage/job_archive.h"
#include "storage/log_store.h"
#include "storage/workdir_store.h"
#include "trainctl/v1/admin.pb.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {

// What a transport knows of one call's caller.
struct CallContext {
  // The "authorization" header's value ("Bearer tct_..."); nullopt when there is none.
  std::optional<std::string> authorization;
  // The caller's address as gRPC words it ("ipv4:127.0.0.1:5000"), for per-host limits.
  std::string peer;
};

template <class T>
using Reply = std::function<void(absl::StatusOr<T>)>;

struct ApiLimits {
  // The most log bytes one ReadLogs asks an agent for, so that its reply fits trainctld's
  // --max-request-bytes. Default: a 4 MiB message less room for the reply's other fields.
  int64_t max_log_chunk = (int64_t{4} << 20) - (int64_t{64} << 10);
  // WatchJob streams one host may hold at once (--max-watches-per-peer); 0: unlimited.
  int64_t max_watches_per_peer = 0;
};

// The reply of an operation on job `id`: the job the core returned, redacted; for an element
// of a job array that has not started (the core acts on the array's row and returns the
// array), that element as read from the array (job_arrays.h). api_arrays.cc.
absl::StatusOr<v1::Job> ElementReply(const std::string& id,
                                     const absl::StatusOr<const sched::Job*>& job,
                                     const SecretRedactor& redactor);

class Api {
 public:
  struct Parts {
    ReconcileLoop* loop = nullptr;
    // Log reads go to agents through it; null: ReadLogs is UNAVAILABLE.
    AgentRegistry* registry = nullptr;
    JobSnapshots* snapshots = nullptr;
    // The time queue statuses are computed for.
    ReconcileLoop::Clock clock;
    // Null allows every call (as an admin named ""), as in tests without authentication.
    const Authorizer* auth = nullptr;
    // For AuthService's calls; null: they are UNIMPLEMENTED.
    TokenRegistry* tokens = nullptr;
    // RevokeNode's certificates are refused through it once stored; may be null.
    CertificateRevocations* revoked = nullptr;
    ApiLimits limits;
    // The database's reader: events, and the logs of jobs the core no longer holds. Null:
    // ListEvents is UNAVAILABLE and such logs are NOT_FOUND.
    storage::JobArchive* archive = nullptr;
    // The agent protocol's version GetVersion reports; 0: it reports none.
    int32_t agent_protocol_version = 0;
    // The projects' secrets; null: SecretService is FAILED_PRECONDITION and so is a submit that
    // refers to a secret.
    ProjectSecrets* secrets = nullptr;
    // The uploaded working directories; null: WorkdirService is FAILED_PRECONDITION and so is a
    // submit with a workdir.
    storage::WorkdirStore* workdirs = nullptr;
    // The largest upload (--max-workdir-mb).
    int64_t max_workdir_bytes = int64_t{100} << 20;
    // trainctld's copy of the replicas' logs (server/central_logs.h); null: logs are read from
    // the agents only.
    storage::LogStore* logs = nullptr;
  };
  explicit Api(Parts parts);

  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  // --- JobService ---------------------------------------------------------------------------
  void CreateJob(const CallContext& call, const v1::CreateJobRequest& req, Reply<v1::Job> done);
  void GetJob(const CallContext& call, const v1::GetJobRequest& req, Reply<v1::Job> done);
  void ListJobs(const CallContext& call, const v1::ListJobsRequest& req,
                Reply<v1::ListJobsResponse> done);
  void CancelJob(const CallContext& call, const v1::CancelJobRequest& req, Reply<v1::Job> done);
  void ResizeJob(const CallContext& call, const v1::ResizeJobRequest& req, Reply<v1::Job> done);
  void DeleteJob(const CallContext& call, const v1::DeleteJobRequest& req,
                 Reply<v1::DeleteJobResponse> done);
  // Subscribes `watcher` to the job: it gets the job's state now and after every change. The
  // returned slot is the stream's place among its peer's watches: keep it while the stream
  // lasts. An error (unauthorized, too many watches, no such job) subscribes nothing.
  absl::StatusOr<PeerStreamLimiter::Slot> WatchJob(const CallContext& call,
                                                   const v1::WatchJobRequest& req,
                                                   std::shared_ptr<JobWatcher> watcher);
  void ReadLogs(const CallContext& call, const v1::ReadLogsRequest& req,
                Reply<v1::ReadLogsResponse> done);
  void GetStacks(const CallContext& call, const v1::GetStacksRequest& req,
                 Reply<v1::GetStacksResponse> done);
  void ReportProgress(const CallContext& call, const v1::ReportProgressRequest& req,
                      Reply<v1::ReportProgressResponse> done);
  // api_queue_ops.cc: a queued job held out of admission and released, a queued job's priority,
  // queueTimeout or labels changed, a placed job sent back to the queue. Each needs the cancel
  // permission in the job's project; its events name the caller.
  void HoldJob(const CallContext& call, const v1::HoldJobRequest& req, Reply<v1::Job> done);
  void ReleaseJob(const CallContext& call, const v1::ReleaseJobRequest& req, Reply<v1::Job> done);
  void UpdateJob(const CallContext& call, const v1::UpdateJobRequest& req, Reply<v1::Job> done);
  void RequeueJob(const CallContext& call, const v1::RequeueJobRequest& req, Reply<v1::Job> done);

  // --- QuotaService -------------------------------------------------------------------------
  void GetQuota(const CallContext& call, const v1::GetQuotaRequest& req, Reply<v1::Project> done);
  void SetQuota(const CallContext& call, const v1::SetQuotaRequest& req, Reply<v1::Project> done);
  void ListProjects(const CallContext& call, const v1::ListProjectsRequest& req,
                    Reply<v1::ListProjectsResponse> done);
  void ListQueue(const CallContext& call, const v1::ListQueueRequest& req,
                 Reply<v1::ListQueueResponse> done);

  // --- ClusterService -----------------------------------------------------------------------
  void ListNodes(const CallContext& call, const v1::ListNodesRequest& req,
                 Reply<v1::ListNodesResponse> done);
  void GetNode(const CallContext& call, const v1::GetNodeRequest& req, Reply<v1::Node> done);
  void ListEvents(const CallContext& call, const v1::ListEventsRequest& req,
                  Reply<v1::ListEventsResponse> done);
  void CordonNode(const CallContext& call, const v1::CordonNodeRequest& req, Reply<v1::Node> done);
  void UncordonNode(const CallContext& call, const v1::UncordonNodeRequest& req,
                    Reply<v1::Node> done);
  void DrainNode(const CallContext& call, const v1::DrainNodeRequest& req, Reply<v1::Node> done);
  void SetNodeMaintenance(const CallContext& call, const v1::SetNodeMaintenanceRequest& req,
                          Reply<v1::Node> done);
  void RevokeNode(const CallContext& call, const v1::RevokeNodeRequest& req, Reply<v1::Node> done);
  void DeleteNode(const CallContext& call, const v1::DeleteNodeRequest& req, Reply<v1::Node> done);
  // api_prepull.cc: asks the agents of the nodes to pull an image, and replies once each
  // answered or the request's deadline passed.
  void PrepullImage(const CallContext& call, const v1::PrepullImageRequest& req,
                    Reply<v1::PrepullImageResponse> done);

  // --- AuthService --------------------------------------------------------------------------
  void CreateToken(const CallContext& call, const v1::CreateTokenRequest& req,
                   Reply<v1::CreateTokenResponse> done);
  void ListTokens(const CallContext& call, const v1::ListTokensRequest& req,
                  Reply<v1::ListTokensResponse> done);
  void RevokeToken(const CallContext& call, const v1::RevokeTokenRequest& req,
                   Reply<v1::ApiToken> done);
  void WhoAmI(const CallContext& call, const v1::WhoAmIRequest& req, Reply<v1::ApiToken> done);

  // --- SecretService (api_secrets.cc) ------------------------------------------------------
  void SetSecret(const CallContext& call, const v1::SetSecretRequest& req, Reply<v1::Secret> done);
  void ListSecrets(const CallContext& call, const v1::ListSecretsRequest& req,
                   Reply<v1::ListSecretsResponse> done);
  void DeleteSecret(const CallContext& call, const v1::DeleteSecretRequest& req,
                    Reply<v1::Secret> done);

  // --- UsageService (api_usage.cc) -----------------------------------------------------------
  // Read off the loop from the database's reader; a member gets only their projects' rows.
  void GetUsage(const CallContext& call, const v1::GetUsageRequest& req,
                Reply<v1::GetUsageResponse> done);

  // --- WorkdirService (api_workdirs.cc; the upload's stream is the transport's) -------------
  void GetWorkdir(const CallContext& call, const v1::GetWorkdirRequest& req,
                  Reply<v1::Workdir> done);
  // Checks an upload's first message (project, digest, size) for `caller`: INVALID_ARGUMENT
  // naming the field, PERMISSION_DENIED outside the caller's projects.
  absl::Status CheckUpload(const Caller& caller, const v1::UploadWorkdirRequest& first) const;
  // Stores an upload whose bytes `next` yields (WorkdirStore::Put), checking them against the
  // first message's digest and size; the reply says whether the project held it already.
  absl::StatusOr<v1::Workdir> StoreUpload(
      const v1::UploadWorkdirRequest& first,
      const std::function<absl::StatusOr<bool>(std::string*)>& next) const;
  int64_t max_workdir_bytes() const { return parts_.max_workdir_bytes; }

  // --- AdminService (api_admin.cc; Backup streams a file and is the gRPC service's own) -----
  void GetVersion(const CallContext& call, const v1::GetVersionRequest& req,
                  Reply<v1::VersionInfo> done);

  // Authenticates the call and checks the route's permission (Authorizer::Authorize); every
  // call is allowed, as an admin, without an authorizer. For the operations a transport serves
  // itself (AdminService's Backup).
  absl::StatusOr<Caller> Authorize(const CallContext& call, Route route) const;

 private:
  // OK when this trainctld keeps secrets; FAILED_PRECONDITION saying how to make it.
  absl::Status SecretsKept() const;
  // Every secretRefs entry of `spec`, and each pool's imagePullSecret (with an image), names a
  // secret its project holds: INVALID_ARGUMENT naming the field otherwise.
  absl::Status CheckSecretRefs(const v1::JobSpec& spec) const;
  // A prepull's registry credentials: the value of its imagePullSecret in its project, which the
  // caller must be allowed to submit to; "" without a secret. INVALID_ARGUMENT naming the field,
  // PERMISSION_DENIED, NOT_FOUND for a secret the project does not hold.
  absl::StatusOr<std::string> PrepullCredentials(const Caller& caller,
                                                 const v1::PrepullImageRequest& req) const;
  // spec.workdir, when set, is a complete upload of the spec's project.
  absl::Status CheckWorkdir(const v1::JobSpec& spec) const;
  // Authorizer::CheckProject, or OK without an authorizer.
  absl::Status CheckProject(const Caller& caller, Permission p, const std::string& project) const;
  // Read off the loop: `caller` may read stored job `job_id` with `p` (its project's, and a
  // replica's token only its own job). NOT_FOUND for a job the database does not hold.
  absl::Status CheckStoredJob(const Caller& caller, Permission p, const std::string& job_id) const;
  // CheckProject for the project of job `job_id`, held by the core or only in the database (OK
  // when it is unknown: NOT_FOUND follows).
  absl::Status CheckJobProject(Turn& t, const Caller& caller, Permission p,
                               const std::string& job_id) const;
  // For a create with a request id that a job the core no longer holds took (within the request
  // window): that job (redacted), or ALREADY_EXISTS for another spec; nullopt otherwise.
  absl::StatusOr<std::optional<v1::Job>> FindCreated(Turn& t, const std::string& creator,
                                                     const sched::CreateRequestKey& key) const;
  // Before a job array is deleted: its elements, held by the core or only stored
  // (api_arrays.cc). OK for a job that is not an array; FAILED_PRECONDITION for an array that
  // has not ended.
  absl::Status DeleteArrayElements(Turn& t, const std::string& id, const std::string& why);
  // The job as the database has it (redacted); NOT_FOUND when it has none.
  absl::StatusOr<v1::Job> Stored(Turn& t, const std::string& id) const;
  // For CreateJob, in its turn: the end states of the jobs spec.depends_on names that the core
  // no longer holds, read from the database (Core::SubmitJob's `stored_ends`). INVALID_ARGUMENT
  // naming the field for a job the database does not hold either.
  absl::StatusOr<std::map<std::string, v1::JobState>> StoredDependencyEnds(
      Turn& t, const v1::JobSpec& spec) const;
  // The queue operations' common path (api_queue_ops.cc): authorizes `route`, then in a loop
  // turn checks the cancel permission in the job's project, runs `op` (its events name the
  // caller) and replies with the job once the turn committed. A job only the database holds (it
  // ended) is FAILED_PRECONDITION, saying so.
  void QueueOp(const CallContext& call, Route route, const std::string& id,
               std::function<absl::StatusOr<const sched::Job*>(Turn&, const std::string& actor)> op,
               Reply<v1::Job> done);
  // Log reads (api_logs.cc). A job the core no longer holds: its run from the archive, then
  // ServeLog. On log_readers_.
  void ReadStoredLogs(const Caller& caller, const v1::ReadLogsRequest& r,
                      Reply<v1::ReadLogsResponse> done);
  // Serves the log of run `run_id` on `node` (`finished`: the run ended) from the request's
  // offset (or its since/tail): from trainctld's copy when it holds the whole range asked for
  // (or the whole log) or the node is not connected, else from the node's agent. On
  // log_readers_.
  void ServeLog(const std::string& node, const std::string& run_id, bool finished,
                v1::ReadLogsRequest r, Reply<v1::ReadLogsResponse> done);
  // Reads trainctld's copy; says what is missing when the copy stops short and the node is away.
  void ReadCentralLog(const std::string& node, const std::string& run_id, bool finished,
                      bool connected, const v1::ReadLogsRequest& r,
                      Reply<v1::ReadLogsResponse> done);
  // Asks `node`'s agent for the log of `run_id`, from the request's offset; a node that went
  // away meanwhile is read from the copy.
  void RequestLog(const std::string& node, const std::string& run_id, bool finished,
                  const v1::ReadLogsRequest& r, Reply<v1::ReadLogsResponse> done);
  // GetStacks with `now`: asks the agents of the job's running replicas (api_stacks.cc).
  void StacksNow(const Caller& caller, const v1::GetStacksRequest& req,
                 Reply<v1::GetStacksResponse> done);
  // Runs `read` on log_readers_, or answers RESOURCE_EXHAUSTED when too many wait.
  void OnLogReader(std::function<void()> read, const Reply<v1::ReadLogsResponse>& done);
  // Authorizes, runs `op` in a loop turn (its events name the caller) and replies with its node
  // (or error) once the turn committed.
  void NodeCall(const CallContext& call, Route route,
                std::function<absl::StatusOr<v1::Node>(Turn&)> op, Reply<v1::Node> done);

  const Parts parts_;
  // When this Api was made: trainctld's start, as GetVersion reports it.
  const int64_t start_ms_;
  PeerStreamLimiter watches_;
  // Reads of trainctld's copy of the logs and of the database, off the outbox and gRPC threads.
  // Last: destroyed (and drained) first.
  WorkQueue log_readers_;
};

}  // namespace trainctl::server
