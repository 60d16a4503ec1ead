// JobService.ReadLogs: a replica's output, from its node's agent while the agent can serve it and
// from trainctld's copy (server/central_logs.h) otherwise. Offsets are the log file's in both, so
// `trainctl logs -f` continues across a switch (the run ended, the node went away, trainctld
// restarted) without a gap or a repeat. When the copy is all there is and it stops short of what
// the node wrote, the answer says so and by how many bytes.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "server/api.h"

namespace trainctl::server {
namespace api_logs_internal {

// The most lines --tail may ask for.
constexpr int32_t kMaxTailLines = 1'000'000;

// The bytes a read of `r` returns at most: maxBytes (0: 1 MiB), within what fits an answer.
int64_t ChunkBytes(const v1::ReadLogsRequest& r, int64_t max_log_chunk) {
  return std::min<int64_t>(r.max_bytes() == 0 ? (1 << 20) : r.max_bytes(), max_log_chunk);
}

std::string MissingWords(int64_t missing) {
  return missing > 0 ? absl::StrCat(", at least ", FormatDecimalBytes(missing), " (", missing,
                                    " bytes) short of what the node wrote")
                     : "";
}

}  // namespace api_logs_internal

void Api::OnLogReader(std::function<void()> read, const Reply<v1::ReadLogsResponse>& done) {
  if (!log_readers_.Post(std::move(read))) {
    done(absl::ResourceExhaustedError("too many log reads at once; try again"));
  }
}

void Api::ReadLogs(const CallContext& call, const v1::ReadLogsRequest& req,
                   Reply<v1::ReadLogsResponse> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kReadLogs);
  if (!caller.ok()) return done(caller.status());
  if (req.max_bytes() < 0 || req.max_bytes() > (4 << 20) || req.offset() < 0) {
    return done(absl::InvalidArgumentError("maxBytes must be 0..4194304 and offset >= 0"));
  }
  if (req.since_ms() < 0) {
    return done(absl::InvalidArgumentError(
        absl::StrCat("sinceMs must be a Unix time in milliseconds, got ", req.since_ms())));
  }
  if (req.tail_lines() < 0 || req.tail_lines() > api_logs_internal::kMaxTailLines) {
    return done(absl::InvalidArgumentError(absl::StrCat(
        "tailLines must be 0..", api_logs_internal::kMaxTailLines, ", got ", req.tail_lines())));
  }
  if (parts_.registry == nullptr && parts_.logs == nullptr) {
    return done(absl::UnavailableError("this trainctld reads no logs"));
  }
  if (!parts_.snapshots->Holds(req.job_id()) && parts_.archive != nullptr) {
    // Ended long ago: the database knows its runs, and the loop is not asked.
    return OnLogReader([this, r = req, caller = *caller, done] { ReadStoredLogs(caller, r, done); },
                       done);
  }
  parts_.loop->PostRead(
      [this, r = req, caller = *caller, done](Turn& t) {
        std::string node, run_id;
        bool finished = false;
        // An unset restart means "latest"; `trainctl logs --restart 0` means run 0.
        const int32_t restart = r.has_restart() ? r.restart() : -1;
        const bool held = t.core.FindJob(r.job_id()) != nullptr;
        absl::Status located = CheckJobProject(t, caller, Permission::kReadLogs, r.job_id());
        if (located.ok() && held) {
          located = t.core.LocateRun(r.job_id(), r.replica(), r.attempt(), restart, &node, &run_id,
                                     &finished);
        }
        t.after_commit->push_back([this, located, held, node, run_id, finished, r, caller, done] {
          if (!located.ok()) return done(located);
          OnLogReader(
              [this, held, node, run_id, finished, r, caller, done] {
                // Forgotten since the check above: the database has it.
                if (!held) return ReadStoredLogs(caller, r, done);
                ServeLog(node, run_id, finished, r, done);
              },
              done);
        });
      },
      done);
}

absl::Status Api::CheckStoredJob(const Caller& caller, Permission p,
                                 const std::string& job_id) const {
  if (parts_.archive == nullptr) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  }
  if (!caller.job.empty() && caller.job != job_id) {
    return absl::PermissionDeniedError(
        absl::StrCat("a replica's token (job ", caller.job, ") reads its own job only"));
  }
  absl::StatusOr<std::optional<v1::Job>> job = parts_.archive->Get(job_id);
  if (!job.ok()) return job.status();
  if (!job->has_value()) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  return CheckProject(caller, p, (*job)->project());
}

void Api::ReadStoredLogs(const Caller& caller, const v1::ReadLogsRequest& r,
                         Reply<v1::ReadLogsResponse> done) {
  if (absl::Status allowed = CheckStoredJob(caller, Permission::kReadLogs, r.job_id());
      !allowed.ok()) {
    return done(allowed);
  }
  absl::StatusOr<storage::RunLocation> run = parts_.archive->LocateRun(
      r.job_id(), r.replica(), r.attempt(), r.has_restart() ? r.restart() : -1);
  if (!run.ok()) return done(run.status());
  ServeLog(run->node, run->run_id, run->finished, r, std::move(done));
}

void Api::ServeLog(const std::string& node, const std::string& run_id, bool finished,
                   v1::ReadLogsRequest r, Reply<v1::ReadLogsResponse> done) {
  const bool connected = parts_.registry != nullptr && parts_.registry->IsConnected(node);
  if (parts_.logs == nullptr) {
    if (parts_.registry == nullptr) return done(absl::UnavailableError("no log can be read"));
    return RequestLog(node, run_id, finished, r, std::move(done));
  }
  // --since and --tail start where trainctld's copy says; without a copy, at the start.
  absl::StatusOr<int64_t> start = r.offset();
  if (r.tail_lines() > 0) {
    start = parts_.logs->TailOffset(run_id, r.tail_lines());
  } else if (r.since_ms() > 0) {
    start = parts_.logs->OffsetSince(run_id, r.since_ms());
  }
  if (absl::IsNotFound(start.status())) start = r.offset();
  if (!start.ok()) return done(start.status());
  r.set_offset(*start);
  r.clear_tail_lines();
  r.clear_since_ms();
  absl::StatusOr<std::optional<storage::LogRunState>> state = parts_.logs->State(run_id);
  if (!state.ok()) {
    spdlog::warn("run {}: cannot read trainctld's copy of its log: {}", run_id,
                 state.status().ToString());
    if (connected) return RequestLog(node, run_id, finished, r, std::move(done));
    return done(state.status());
  }
  // A connected agent has every byte of its file; the copy serves the read when it holds all of
  // it (the whole range asked for, or the whole log), so that either answers the same.
  const int64_t want = api_logs_internal::ChunkBytes(r, parts_.limits.max_log_chunk);
  const bool central =
      state->has_value() && ((*state)->final || r.offset() + want <= (*state)->stored);
  if (central || !connected) {
    return ReadCentralLog(node, run_id, finished, connected, r, std::move(done));
  }
  RequestLog(node, run_id, finished, r, std::move(done));
}

void Api::ReadCentralLog(const std::string& node, const std::string& run_id, bool finished,
                         bool connected, const v1::ReadLogsRequest& r,
                         Reply<v1::ReadLogsResponse> done) {
  v1::ReadLogsResponse resp;
  resp.set_central(true);
  resp.set_next_offset(r.offset());
  const std::string where =
      absl::StrCat(finished ? "the run ended on node " : "the run is on node ", node,
                   ", which is not connected");
  absl::StatusOr<storage::LogSlice> slice = parts_.logs->Read(
      run_id, r.offset(), api_logs_internal::ChunkBytes(r, parts_.limits.max_log_chunk));
  if (absl::IsNotFound(slice.status())) {
    resp.set_incomplete(absl::StrCat(
        where, ", and none of its log reached trainctld: it can be read once its agent is back"));
    return done(std::move(resp));
  }
  if (!slice.ok()) return done(slice.status());
  const storage::LogRunState& st = slice->state;
  resp.set_next_offset(slice->next_offset);
  resp.set_data(std::move(slice->data));
  if (st.final) {
    resp.set_complete(resp.next_offset() >= st.stored);
  } else if (!connected && resp.next_offset() >= st.stored) {
    const int64_t missing = std::max<int64_t>(0, st.file_size - st.stored);
    resp.set_missing_bytes(missing);
    resp.set_incomplete(absl::StrCat(where, "; trainctld's copy of its log ends at byte ",
                                     st.stored, api_logs_internal::MissingWords(missing),
                                     ": the rest can be read once its agent is back"));
  }
  done(std::move(resp));
}

void Api::RequestLog(const std::string& node, const std::string& run_id, bool finished,
                     const v1::ReadLogsRequest& r, Reply<v1::ReadLogsResponse> done) {
  v1::ReadLog read;
  read.set_run_id(run_id);
  read.set_offset(r.offset());
  read.set_max_bytes(api_logs_internal::ChunkBytes(r, parts_.limits.max_log_chunk));
  parts_.registry->RequestLog(
      node, read, [this, node, run_id, finished, r, done](absl::StatusOr<v1::LogData> data) {
        if (absl::IsUnavailable(data.status()) && parts_.logs != nullptr) {
          // The node went away meanwhile: its copy is what there is.
          return OnLogReader(
              [this, node, run_id, finished, r, done] {
                ReadCentralLog(node, run_id, finished, /*connected=*/false, r, done);
              },
              done);
        }
        if (!data.ok()) return done(data.status());
        v1::ReadLogsResponse resp;
        resp.set_data(data->data());
        resp.set_next_offset(data->next_offset());
        resp.set_complete(data->complete());
        done(std::move(resp));
      });
}

}  // namespace trainctl::server
