// Api: JobService's operations (see api.h).

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/array_ids.h"
#include "common/sha256.h"
#include "common/time_util.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "model/model_proto.h"
#include "scheduler/job_validation.h"
#include "server/api.h"

namespace trainctl::server {
namespace {

// The SHA-256 (hex) of the spec's deterministic encoding: equal specs give equal hashes.
std::string SpecHash(const v1::JobSpec& spec) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    spec.SerializeToCodedStream(&coded);
  }
  return Sha256Hex(bytes);
}

// The API view of a job the core returned, with its secrets redacted; or the core's error.
absl::StatusOr<v1::Job> JobReply(const absl::StatusOr<const sched::Job*>& job,
                                 const SecretRedactor& redactor) {
  if (!job.ok()) return job.status();
  v1::Job view = sched::ToProto(**job);
  redactor.Redact(&view);
  return view;
}

}  // namespace

Api::Api(Parts parts)
    : parts_(std::move(parts)),
      start_ms_(WallNowMs()),
      watches_("watch streams", "--max-watches-per-peer", parts_.limits.max_watches_per_peer),
      log_readers_(2, 256) {}

absl::StatusOr<Caller> Api::Authorize(const CallContext& call, Route route) const {
  if (parts_.auth == nullptr) return Caller{};
  std::optional<absl::string_view> header;
  if (call.authorization) header = *call.authorization;
  return parts_.auth->Authorize(header, route);
}

absl::Status Api::CheckProject(const Caller& caller, Permission p,
                               const std::string& project) const {
  if (parts_.auth == nullptr) return absl::OkStatus();
  return parts_.auth->CheckProject(caller, p, project);
}

absl::Status Api::CheckJobProject(Turn& t, const Caller& caller, Permission p,
                                  const std::string& job_id) const {
  if (!caller.job.empty() && caller.job != job_id) {
    return absl::PermissionDeniedError(absl::StrCat("a replica's token (job ", caller.job,
                                                    ") reaches its own job only, not ", job_id));
  }
  if (const sched::Job* job = t.core.FindJob(job_id)) {
    return CheckProject(caller, p, job->spec.project());
  }
  // An element of a job array that has not started: its array's project.
  if (const std::optional<ElementId> e = ParseElementId(job_id)) {
    if (const sched::Job* array = t.core.FindJob(e->array); array != nullptr && array->array) {
      return CheckProject(caller, p, array->spec.project());
    }
  }
  absl::StatusOr<std::optional<v1::Job>> stored = t.store.FindJob(job_id);
  if (!stored.ok()) return stored.status();
  // An unknown job is the handler's NOT_FOUND.
  if (!stored->has_value()) return absl::OkStatus();
  return CheckProject(caller, p, (*stored)->project());
}

absl::StatusOr<v1::Job> Api::Stored(Turn& t, const std::string& id) const {
  absl::StatusOr<std::optional<v1::Job>> stored = t.store.FindJob(id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  parts_.loop->redactor().Redact(&**stored);
  return **std::move(stored);
}

absl::StatusOr<std::optional<v1::Job>> Api::FindCreated(Turn& t, const std::string& creator,
                                                        const sched::CreateRequestKey& key) const {
  if (key.id.empty() || t.core.FindRequest(creator, key.id, t.now) != nullptr) return std::nullopt;
  // A job the core no longer holds (it ended a while ago) may have taken the request id.
  absl::StatusOr<std::optional<v1::Job>> stored = t.store.FindJobByRequest(
      creator, key.id, absl::ToUnixMillis(t.now - sched::RequestIndex::kWindow));
  if (!stored.ok() || !stored->has_value()) return stored;
  if ((*stored)->request_hash() != key.spec_hash) {
    return sched::RequestIdTaken(key.id, (*stored)->id());
  }
  parts_.loop->redactor().Redact(&**stored);
  return stored;
}

absl::StatusOr<std::map<std::string, v1::JobState>> Api::StoredDependencyEnds(
    Turn& t, const v1::JobSpec& spec) const {
  std::map<std::string, v1::JobState> ends;
  for (int i = 0; i < spec.depends_on_size(); ++i) {
    const std::string& id = spec.depends_on(i).job();
    // An empty id is the core's validation to refuse; a live job the core decides on itself.
    if (id.empty() || ends.count(id) > 0 || t.core.FindJob(id) != nullptr) continue;
    absl::StatusOr<std::optional<v1::Job>> stored = t.store.FindJob(id);
    if (!stored.ok()) return stored.status();
    if (!stored->has_value()) {
      // An element of a job array the core holds, not started yet: the core decides.
      if (const std::optional<ElementId> e = ParseElementId(id);
          e && t.core.FindJob(e->array) != nullptr) {
        continue;
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.dependsOn[", i, "].job: no job ", id,
          " (a job may depend only on jobs that exist: submit the job it waits for first)"));
    }
    ends[id] = (*stored)->state();
  }
  return ends;
}

void Api::CreateJob(const CallContext& call, const v1::CreateJobRequest& req, Reply<v1::Job> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kCreateJob);
  if (!caller.ok()) return done(caller.status());
  const std::string project =
      req.spec().project().empty() ? sched::kDefaultProject : req.spec().project();
  if (absl::Status allowed = CheckProject(*caller, Permission::kSubmit, project); !allowed.ok()) {
    return done(allowed);
  }
  sched::CreateRequestKey key{req.request_id(), ""};
  if (!key.id.empty()) key.spec_hash = SpecHash(req.spec());
  // A database read: here, not in the loop's turn.
  if (absl::Status s = CheckWorkdir(req.spec()); !s.ok()) return done(s);
  parts_.loop->Post(
      [this, spec = req.spec(), key = std::move(key), name = caller->name, done](Turn& t) {
        absl::StatusOr<v1::Job> reply = absl::InternalError("no reply");
        absl::StatusOr<std::optional<v1::Job>> created = FindCreated(t, name, key);
        if (!created.ok() || created->has_value()) {
          reply = created.ok() ? **std::move(created) : absl::StatusOr<v1::Job>(created.status());
        } else if (absl::Status refs = CheckSecretRefs(spec); !refs.ok()) {
          reply = refs;
        } else if (absl::StatusOr<std::map<std::string, v1::JobState>> ends =
                       StoredDependencyEnds(t, spec);
                   !ends.ok()) {
          reply = ends.status();
        } else {
          const size_t first = t.fx->events.size();
          absl::StatusOr<const sched::Job*> job =
              t.core.SubmitJob(spec, t.now, t.fx, name, key, *ends);
          StampActor(t.fx, first, name);
          if (job.ok() && !(*job)->spec.workdir().empty()) {
            t.writes->workdir_uses.push_back(
                {(*job)->project, (*job)->spec.workdir(), (*job)->id, absl::ToUnixMillis(t.now)});
          }
          reply = JobReply(job, parts_.loop->redactor());
        }
        t.after_commit->push_back([reply = std::move(reply), done] { done(reply); });
      },
      done);
}

void Api::GetJob(const CallContext& call, const v1::GetJobRequest& req, Reply<v1::Job> done) {
  if (absl::StatusOr<Caller> caller = Authorize(call, Route::kGetJob); !caller.ok()) {
    return done(caller.status());
  }
  done(parts_.snapshots->Get(req.id(), parts_.clock()));
}

void Api::ListJobs(const CallContext& call, const v1::ListJobsRequest& req,
                   Reply<v1::ListJobsResponse> done) {
  if (absl::StatusOr<Caller> caller = Authorize(call, Route::kListJobs); !caller.ok()) {
    return done(caller.status());
  }
  done(parts_.snapshots->List(req, parts_.clock()));
}

void Api::CancelJob(const CallContext& call, const v1::CancelJobRequest& req, Reply<v1::Job> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kCancelJob);
  if (!caller.ok()) return done(caller.status());
  parts_.loop->Post(
      [this, id = req.id(), caller = *caller, done](Turn& t) {
        absl::StatusOr<v1::Job> reply = absl::InternalError("no reply");
        if (absl::Status allowed = CheckJobProject(t, caller, Permission::kCancel, id);
            !allowed.ok()) {
          reply = allowed;
        } else {
          const size_t first = t.fx->events.size();
          absl::StatusOr<const sched::Job*> job = t.core.CancelJob(id, t.now, t.fx);
          StampActor(t.fx, first, caller.name);
          reply = ElementReply(id, job, parts_.loop->redactor());
          if (absl::IsNotFound(reply.status())) reply = Stored(t, id);  // ended long ago: as is
        }
        t.after_commit->push_back([reply = std::move(reply), done] { done(reply); });
      },
      done);
}

void Api::ResizeJob(const CallContext& call, const v1::ResizeJobRequest& req, Reply<v1::Job> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kResizeJob);
  if (!caller.ok()) return done(caller.status());
  parts_.loop->Post(
      [this, id = req.id(), caller = *caller, done](Turn& t) {
        absl::StatusOr<v1::Job> reply = absl::InternalError("no reply");
        if (absl::Status allowed = CheckJobProject(t, caller, Permission::kSubmit, id);
            !allowed.ok()) {
          reply = allowed;
        } else {
          const size_t first = t.fx->events.size();
          absl::StatusOr<const sched::Job*> job = t.core.ResizeJob(id, caller.name, t.now, t.fx);
          StampActor(t.fx, first, caller.name);
          reply = JobReply(job, parts_.loop->redactor());
          if (absl::IsNotFound(reply.status()) && Stored(t, id).ok()) {
            reply = absl::FailedPreconditionError(
                absl::StrCat("job ", id, " has ended: only a RUNNING job can be resized"));
          }
        }
        t.after_commit->push_back([reply = std::move(reply), done] { done(reply); });
      },
      done);
}

void Api::DeleteJob(const CallContext& call, const v1::DeleteJobRequest& req,
                    Reply<v1::DeleteJobResponse> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kDeleteJob);
  if (!caller.ok()) return done(caller.status());
  parts_.loop->Post(
      [this, id = req.id(), caller = *caller, done](Turn& t) {
        absl::Status deleted = CheckJobProject(t, caller, Permission::kDeleteJobs, id);
        if (deleted.ok()) {
          const size_t first = t.fx->events.size();
          const std::string why = caller.name.empty() ? "at a user's request" : "by " + caller.name;
          // A job array goes with its elements (api_arrays.cc).
          deleted = DeleteArrayElements(t, id, why);
          if (deleted.ok()) deleted = t.core.DeleteJob(id, why, t.now, t.fx);
          if (absl::IsNotFound(deleted)) {
            // Ended long ago: only the database has it.
            absl::StatusOr<v1::Job> stored = Stored(t, id);
            deleted =
                stored.ok() ? t.core.DeleteStoredJob(*stored, why, t.now, t.fx) : stored.status();
          }
          StampActor(t.fx, first, caller.name);
        }
        t.after_commit->push_back([deleted, done] {
          if (!deleted.ok()) return done(deleted);
          done(v1::DeleteJobResponse());
        });
      },
      done);
}

absl::StatusOr<PeerStreamLimiter::Slot> Api::WatchJob(const CallContext& call,
                                                      const v1::WatchJobRequest& req,
                                                      std::shared_ptr<JobWatcher> watcher) {
  absl::StatusOr<PeerStreamLimiter::Slot> slot = watches_.Acquire(call.peer);
  if (!slot.ok()) return slot.status();
  if (absl::StatusOr<Caller> caller = Authorize(call, Route::kWatchJob); !caller.ok()) {
    return caller.status();
  }
  if (absl::Status watched = parts_.snapshots->Watch(req.id(), std::move(watcher)); !watched.ok()) {
    return watched;
  }
  return slot;
}

void Api::ReportProgress(const CallContext& call, const v1::ReportProgressRequest& req,
                         Reply<v1::ReportProgressResponse> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kReportProgress);
  if (!caller.ok()) return done(caller.status());
  if (req.message().size() > 256 || req.step() < 0) {
    return done(absl::InvalidArgumentError("message must be at most 256 characters and step >= 0"));
  }
  parts_.loop->Post(
      [this, job_id = req.job_id(), replica = req.replica(), step = req.step(),
       checkpoint = req.checkpoint(), caller = *caller, done](Turn& t) {
        absl::Status status = CheckJobProject(t, caller, Permission::kReportProgress, job_id);
        if (status.ok())
          status = t.core.ReportProgress(job_id, replica, step, checkpoint, t.now, t.fx);
        t.after_commit->push_back([status, done] {
          if (!status.ok()) return done(status);
          done(v1::ReportProgressResponse());
        });
      },
      done);
}

}  // namespace trainctl::server
