#include "server/job_service.h"

#include <spdlog/spdlog.h>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_status.h"
#include "common/job_states.h"
#include "server/grpc_unary.h"

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

grpc::ServerUnaryReactor* JobServiceImpl::CreateJob(grpc::CallbackServerContext* ctx,
                                                    const v1::CreateJobRequest* req,
                                                    v1::Job* resp) {
  return Unary(api_, &Api::CreateJob, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::GetJob(grpc::CallbackServerContext* ctx,
                                                 const v1::GetJobRequest* req, v1::Job* resp) {
  return Unary(api_, &Api::GetJob, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::ListJobs(grpc::CallbackServerContext* ctx,
                                                   const v1::ListJobsRequest* req,
                                                   v1::ListJobsResponse* resp) {
  return Unary(api_, &Api::ListJobs, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::CancelJob(grpc::CallbackServerContext* ctx,
                                                    const v1::CancelJobRequest* req,
                                                    v1::Job* resp) {
  return Unary(api_, &Api::CancelJob, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::ResizeJob(grpc::CallbackServerContext* ctx,
                                                    const v1::ResizeJobRequest* req,
                                                    v1::Job* resp) {
  return Unary(api_, &Api::ResizeJob, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::HoldJob(grpc::CallbackServerContext* ctx,
                                                  const v1::HoldJobRequest* req, v1::Job* resp) {
  return Unary(api_, &Api::HoldJob, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::ReleaseJob(grpc::CallbackServerContext* ctx,
                                                     const v1::ReleaseJobRequest* req,
                                                     v1::Job* resp) {
  return Unary(api_, &Api::ReleaseJob, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::UpdateJob(grpc::CallbackServerContext* ctx,
                                                    const v1::UpdateJobRequest* req,
                                                    v1::Job* resp) {
  return Unary(api_, &Api::UpdateJob, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::RequeueJob(grpc::CallbackServerContext* ctx,
                                                     const v1::RequeueJobRequest* req,
                                                     v1::Job* resp) {
  return Unary(api_, &Api::RequeueJob, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::DeleteJob(grpc::CallbackServerContext* ctx,
                                                    const v1::DeleteJobRequest* req,
                                                    v1::DeleteJobResponse* resp) {
  return Unary(api_, &Api::DeleteJob, ctx, req, resp);
}

grpc::ServerWriteReactor<v1::Job>* JobServiceImpl::WatchJob(grpc::CallbackServerContext* ctx,
                                                            const v1::WatchJobRequest* req) {
  std::shared_ptr<WatchReactor> w = WatchReactor::Create();
  absl::StatusOr<PeerStreamLimiter::Slot> slot = api_->WatchJob(CallContextOf(*ctx), *req, w);
  if (!slot.ok()) {
    w->FinishWith(ToGrpcStatus(slot.status()));
    return w.get();
  }
  w->Hold(*std::move(slot));
  return w.get();
}

grpc::ServerUnaryReactor* JobServiceImpl::GetStacks(grpc::CallbackServerContext* ctx,
                                                    const v1::GetStacksRequest* req,
                                                    v1::GetStacksResponse* resp) {
  return Unary(api_, &Api::GetStacks, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::ReadLogs(grpc::CallbackServerContext* ctx,
                                                   const v1::ReadLogsRequest* req,
                                                   v1::ReadLogsResponse* resp) {
  return Unary(api_, &Api::ReadLogs, ctx, req, resp);
}

grpc::ServerUnaryReactor* JobServiceImpl::ReportProgress(grpc::CallbackServerContext* ctx,
                                                         const v1::ReportProgressRequest* req,
                                                         v1::ReportProgressResponse* resp) {
  return Unary(api_, &Api::ReportProgress, ctx, req, resp);
}

}  // namespace trainctl::server
