// Api: JobService's queue operations (see api.h): HoldJob and ReleaseJob keep a queued job out of
// admission and let it back in, UpdateJob changes a queued job's priority, queueTimeout or labels,
// and RequeueJob sends a placed job back to the queue. The core decides each (Core::HoldJob, ...);
// here each call is authorized with the cancel permission in the job's project, checked, run in a
// reconcile-loop turn with its events naming the caller, and answered once the turn committed.

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "model/model_proto.h"
#include "server/api.h"

namespace trainctl::server {
namespace {

// HoldJobRequest.reason and RequeueJobRequest.reason: at most this many characters.
constexpr size_t kMaxReasonChars = 1024;

// The request's job id, and its reason when it has one, as a person can fix them.
absl::Status CheckIdAndReason(const std::string& id, const std::string* reason) {
  if (id.empty()) return absl::InvalidArgumentError("id is required: the job's id, e.g. j-1a2b3c");
  if (reason != nullptr && reason->size() > kMaxReasonChars) {
    return absl::InvalidArgumentError(absl::StrCat("reason must be at most ", kMaxReasonChars,
                                                   " characters, got ", reason->size()));
  }
  return absl::OkStatus();
}

// What a queue operation on a job that has ended is told: "only a QUEUED job can be held".
const char* WhenEnded(Route route) {
  switch (route) {
    case Route::kHoldJob:
      return "only a QUEUED job can be held";
    case Route::kReleaseJob:
      return "only a held QUEUED job can be released";
    case Route::kUpdateJob:
      return "only a QUEUED job can be updated";
    default:
      return "only a PENDING or RUNNING job can be requeued";
  }
}

}  // namespace

void Api::QueueOp(const CallContext& call, Route route, const std::string& id,
                  std::function<absl::StatusOr<const sched::Job*>(Turn&, const std::string&)> op,
                  Reply<v1::Job> done) {
  absl::StatusOr<Caller> caller = Authorize(call, route);
  if (!caller.ok()) return done(caller.status());
  parts_.loop->Post(
      [this, route, id, op = std::move(op), caller = *caller, done](Turn& t) {
        absl::StatusOr<v1::Job> reply = absl::InternalError("no reply");
        if (absl::Status allowed = CheckJobProject(t, caller, Permission::kCancel, id);
            !allowed.ok()) {
          reply = allowed;
        } else {
          const size_t first = t.fx->events.size();
          absl::StatusOr<const sched::Job*> job = op(t, caller.name);
          StampActor(t.fx, first, caller.name);
          reply = ElementReply(id, job, parts_.loop->redactor());
          if (absl::IsNotFound(reply.status())) {
            // The core forgets jobs a while after they end; the database keeps them.
            absl::StatusOr<v1::Job> stored = Stored(t, id);
            if (stored.ok()) {
              reply = absl::FailedPreconditionError(absl::StrCat("job ", id, " has ended (",
                                                                 EnumShortName(stored->state()),
                                                                 "): ", WhenEnded(route)));
            }
          }
        }
        t.after_commit->push_back([reply = std::move(reply), done] { done(reply); });
      },
      done);
}

void Api::HoldJob(const CallContext& call, const v1::HoldJobRequest& req, Reply<v1::Job> done) {
  if (absl::Status s = CheckIdAndReason(req.id(), &req.reason()); !s.ok()) return done(s);
  QueueOp(
      call, Route::kHoldJob, req.id(),
      [id = req.id(), reason = req.reason()](Turn& t, const std::string& actor) {
        return t.core.HoldJob(id, actor, reason, t.now, t.fx);
      },
      std::move(done));
}

void Api::ReleaseJob(const CallContext& call, const v1::ReleaseJobRequest& req,
                     Reply<v1::Job> done) {
  if (absl::Status s = CheckIdAndReason(req.id(), nullptr); !s.ok()) return done(s);
  QueueOp(
      call, Route::kReleaseJob, req.id(),
      [id = req.id()](Turn& t, const std::string& actor) {
        return t.core.ReleaseJob(id, actor, t.now, t.fx);
      },
      std::move(done));
}

void Api::UpdateJob(const CallContext& call, const v1::UpdateJobRequest& req, Reply<v1::Job> done) {
  if (absl::Status s = CheckIdAndReason(req.id(), nullptr); !s.ok()) return done(s);
  QueueOp(
      call, Route::kUpdateJob, req.id(),
      [req](Turn& t, const std::string& actor) {
        return t.core.UpdateJob(req, actor, t.now, t.fx);
      },
      std::move(done));
}

void Api::RequeueJob(const CallContext& call, const v1::RequeueJobRequest& req,
                     Reply<v1::Job> done) {
  if (absl::Status s = CheckIdAndReason(req.id(), &req.reason()); !s.ok()) return done(s);
  QueueOp(
      call, Route::kRequeueJob, req.id(),
      [id = req.id(), reason = req.reason()](Turn& t, const std::string& actor) {
        return t.core.RequeueJob(id, actor, reason, t.now, t.fx);
      },
      std::move(done));
}

}  // namespace trainctl::server
