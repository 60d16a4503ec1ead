#include "server/job_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_status.h"
#include "scheduler/job_validation.h"
#include "scheduler/model_proto.h"

namespace trainctl::server {
namespace {

// A WatchJob stream: sends the newest state of one job until a terminal state went out.
// Push and FinishWith run on the loop thread, the reactor callbacks on gRPC's threads; mu_ orders
// them. StartWrite and Finish are called with mu_ held, so that a write never starts after the
// stream finished.
class WatchReactor : public grpc::ServerWriteReactor<v1::Job>,
                     public JobWatcher,
                     public std::enable_shared_from_this<WatchReactor> {
 public:
  // The hub holds a shared_ptr while subscribed; the reactor keeps itself alive until OnDone.
  static std::shared_ptr<WatchReactor> Create() {
    auto w = std::shared_ptr<WatchReactor>(new WatchReactor());
    absl::MutexLock lock(&w->mu_);  // Uncontended: no other thread knows w yet.
    w->self_ = w;
    return w;
  }

  bool Push(const v1::Job& job) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (finished_) return false;
    pending_ = job;
    has_pending_ = true;
    if (!writing_) WriteNextLocked();
    return true;
  }

  void FinishWith(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (finished_) return;
    if (!ok) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "watch stream broken"));
      return;
    }
    if (IsTerminal(current_.state())) {
      finished_ = true;
      Finish(grpc::Status::OK);
      return;
    }
    if (has_pending_) WriteNextLocked();
  }

  void OnCancel() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    Finish(grpc::Status::CANCELLED);
  }

  void OnDone() override ABSL_LOCKS_EXCLUDED(mu_) {
    std::shared_ptr<WatchReactor> self;
    PeerStreamLimiter::Slot slot;
    {
      absl::MutexLock lock(&mu_);
      finished_ = true;
      self = std::move(self_);
      // The stream is over, though the hub may hold the reactor until the job changes.
      slot = std::move(slot_);
    }
    // `self` may be the last reference: *this is destroyed here, after the lock is released.
  }

  // Keeps `slot` (its place among the peer's watches) until the stream is done.
  void Hold(PeerStreamLimiter::Slot slot) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    slot_ = std::move(slot);
  }

 private:
  WatchReactor() = default;

  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    current_ = std::move(pending_);
    has_pending_ = false;
    writing_ = true;
    StartWrite(&current_);
  }

  absl::Mutex mu_;
  std::shared_ptr<WatchReactor> self_ ABSL_GUARDED_BY(mu_);
  // The job being written: gRPC reads it until OnWriteDone, so it changes only while !writing_.
  v1::Job current_ ABSL_GUARDED_BY(mu_);
  v1::Job pending_ ABSL_GUARDED_BY(mu_);
  bool has_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  PeerStreamLimiter::Slot slot_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::Status JobServiceImpl::CheckProject(const Caller& caller, Permission p,
                                          const std::string& project) const {
  if (auth_ == nullptr) return absl::OkStatus();
  return auth_->CheckProject(caller, p, project);
}

absl::Status JobServiceImpl::CheckJobProject(Turn& t, const Caller& caller, Permission p,
                                             const std::string& job_id) const {
  if (!caller.job.empty() && caller.job != job_id) {
    return absl::PermissionDeniedError(absl::StrCat("a replica's token (job ", caller.job,
                                                    ") reports progress for its own job only, not ",
                                                    job_id));
  }
  const sched::Job* job = t.core.FindJob(job_id);
  // An unknown job is the handler's NOT_FOUND.
  if (job == nullptr) return absl::OkStatus();
  return CheckProject(caller, p, job->spec.project());
}

grpc::ServerUnaryReactor* JobServiceImpl::CreateJob(grpc::CallbackServerContext* ctx,
                                                    const v1::CreateJobRequest* req,
                                                    v1::Job* resp) {
  auto* reactor = ctx->DefaultReactor();
  std::optional<Caller> caller = AuthorizeOrFinish(auth_, *ctx, Route::kCreateJob, reactor);
  if (!caller) return reactor;
  v1::JobSpec spec = req->spec();
  const std::string project = spec.project().empty() ? sched::kDefaultProject : spec.project();
  if (absl::Status allowed = CheckProject(*caller, Permission::kSubmit, project); !allowed.ok()) {
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  loop_->Post([this, reactor, resp, spec, name = caller->name](Turn& t) {
    const size_t first = t.fx->events.size();
    absl::StatusOr<const sched::Job*> job = t.core.SubmitJob(spec, t.now, t.fx, name);
    StampActor(t.fx, first, name);
    if (job.ok()) {
      *resp = sched::ToProto(**job);
      loop_->redactor().Redact(resp);
    }
    absl::Status status = job.status();
    t.after_commit->push_back([reactor, status] { reactor->Finish(ToGrpcStatus(status)); });
  });
  return reactor;
}

grpc::ServerUnaryReactor* JobServiceImpl::GetJob(grpc::CallbackServerContext* ctx,
                                                 const v1::GetJobRequest* req, v1::Job* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!AuthorizeOrFinish(auth_, *ctx, Route::kGetJob, reactor)) return reactor;
  absl::StatusOr<v1::Job> job = snapshots_->Get(req->id(), clock_());
  if (job.ok()) *resp = *std::move(job);
  reactor->Finish(ToGrpcStatus(job.status()));
  return reactor;
}

grpc::ServerUnaryReactor* JobServiceImpl::ListJobs(grpc::CallbackServerContext* ctx,
                                                   const v1::ListJobsRequest* req,
                                                   v1::ListJobsResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!AuthorizeOrFinish(auth_, *ctx, Route::kListJobs, reactor)) return reactor;
  absl::StatusOr<v1::ListJobsResponse> page = snapshots_->List(*req, clock_());
  if (page.ok()) *resp = *std::move(page);
  reactor->Finish(ToGrpcStatus(page.status()));
  return reactor;
}

grpc::ServerUnaryReactor* JobServiceImpl::CancelJob(grpc::CallbackServerContext* ctx,
                                                    const v1::CancelJobRequest* req,
                                                    v1::Job* resp) {
  auto* reactor = ctx->DefaultReactor();
  std::optional<Caller> caller = AuthorizeOrFinish(auth_, *ctx, Route::kCancelJob, reactor);
  if (!caller) return reactor;
  std::string id = req->id();
  loop_->Post([this, reactor, resp, id, caller = *caller](Turn& t) {
    absl::Status status = CheckJobProject(t, caller, Permission::kCancel, id);
    if (status.ok()) {
      const size_t first = t.fx->events.size();
      absl::StatusOr<const sched::Job*> job = t.core.CancelJob(id, t.now, t.fx);
      StampActor(t.fx, first, caller.name);
      if (job.ok()) {
        *resp = sched::ToProto(**job);
        loop_->redactor().Redact(resp);
      }
      status = job.status();
    }
    t.after_commit->push_back([reactor, status] { reactor->Finish(ToGrpcStatus(status)); });
  });
  return reactor;
}

grpc::ServerWriteReactor<v1::Job>* JobServiceImpl::WatchJob(grpc::CallbackServerContext* ctx,
                                                            const v1::WatchJobRequest* req) {
  std::shared_ptr<WatchReactor> w = WatchReactor::Create();
  absl::StatusOr<PeerStreamLimiter::Slot> slot = watches_.Acquire(ctx->peer());
  if (!slot.ok()) {
    w->FinishWith(ToGrpcStatus(slot.status()));
    return w.get();
  }
  w->Hold(*std::move(slot));
  if (auth_ != nullptr) {
    if (absl::StatusOr<Caller> caller = auth_->Authorize(*ctx, Route::kWatchJob); !caller.ok()) {
      w->FinishWith(ToGrpcStatus(caller.status()));
      return w.get();
    }
  }
  absl::Status watched = snapshots_->Watch(req->id(), w);
  if (!watched.ok()) w->FinishWith(ToGrpcStatus(watched));
  return w.get();
}

grpc::ServerUnaryReactor* JobServiceImpl::ReadLogs(grpc::CallbackServerContext* ctx,
                                                   const v1::ReadLogsRequest* req,
                                                   v1::ReadLogsResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  std::optional<Caller> caller = AuthorizeOrFinish(auth_, *ctx, Route::kReadLogs, reactor);
  if (!caller) return reactor;
  if (req->max_bytes() < 0 || req->max_bytes() > (4 << 20) || req->offset() < 0) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "maxBytes must be 0..4194304 and offset >= 0"));
    return reactor;
  }
  v1::ReadLogsRequest r = *req;
  AgentRegistry* registry = registry_;
  loop_->Post([this, reactor, resp, r, registry, caller = *caller](Turn& t) {
    std::string node, run_id;
    bool finished = false;
    // An unset restart means "latest"; `trainctl logs --restart 0` means run 0.
    int32_t restart = r.has_restart() ? r.restart() : -1;
    absl::Status located = CheckJobProject(t, caller, Permission::kReadLogs, r.job_id());
    if (located.ok()) {
      located = t.core.LocateRun(r.job_id(), r.replica(), r.attempt(), restart, &node, &run_id,
                                 &finished);
    }
    t.after_commit->push_back([=] {
      if (!located.ok()) {
        reactor->Finish(ToGrpcStatus(located));
        return;
      }
      v1::ReadLog read;
      read.set_run_id(run_id);
      read.set_offset(r.offset());
      read.set_max_bytes(
          std::min<int64_t>(r.max_bytes() == 0 ? (1 << 20) : r.max_bytes(), max_log_chunk_));
      registry->RequestLog(node, read, [reactor, resp](absl::StatusOr<v1::LogData> data) {
        if (!data.ok()) {
          reactor->Finish(ToGrpcStatus(data.status()));
          return;
        }
        resp->set_data(data->data());
        resp->set_next_offset(data->next_offset());
        resp->set_complete(data->complete());
        reactor->Finish(grpc::Status::OK);
      });
    });
  });
  return reactor;
}

grpc::ServerUnaryReactor* JobServiceImpl::ReportProgress(grpc::CallbackServerContext* ctx,
                                                         const v1::ReportProgressRequest* req,
                                                         v1::ReportProgressResponse* resp) {
  (void)resp;
  auto* reactor = ctx->DefaultReactor();
  std::optional<Caller> caller = AuthorizeOrFinish(auth_, *ctx, Route::kReportProgress, reactor);
  if (!caller) return reactor;
  if (req->message().size() > 256 || req->step() < 0) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "message must be at most 256 characters and step >= 0"));
    return reactor;
  }
  std::string job_id = req->job_id();
  std::string replica = req->replica();
  loop_->Post([this, reactor, job_id, replica, caller = *caller](Turn& t) {
    absl::Status status = CheckJobProject(t, caller, Permission::kReportProgress, job_id);
    if (status.ok()) status = t.core.ReportProgress(job_id, replica, t.now, t.fx);
    t.after_commit->push_back([reactor, status] { reactor->Finish(ToGrpcStatus(status)); });
  });
  return reactor;
}

}  // namespace trainctl::server
