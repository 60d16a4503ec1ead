// LogShipper (log_shipper.h): the thread, its streams to trainctld, and their backoff.
#include "agents/log_shipper.h"

#include <grpc/compression.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::agent {
namespace log_shipper_internal {

LogShipState::Options StateOptions(const LogShipper::Options& options) {
  LogShipState::Options state;
  state.work_dir = options.work_dir;
  state.max_request_bytes = options.max_request_bytes;
  state.max_probes = options.max_probes;
  state.retry_after = options.retry_after;
  return state;
}

// Whether `code` says the scheduler does not take logs at all (an older trainctld, or one that
// keeps no copy), rather than that this stream failed.
bool Unsupported(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNIMPLEMENTED || code == grpc::StatusCode::FAILED_PRECONDITION;
}

}  // namespace log_shipper_internal

LogShipper::LogShipper(Options options)
    : options_(std::move(options)), state_(log_shipper_internal::StateOptions(options_)) {}

LogShipper::~LogShipper() { Stop(); }

void LogShipper::Start() {
  absl::MutexLock lock(&join_mu_);
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void LogShipper::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  absl::MutexLock lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

void LogShipper::Registered(const std::string& address) {
  absl::MutexLock lock(&mu_);
  woken_ = true;
  if (context_ != nullptr && stream_address_ != address) {
    cancelled_ = absl::StrCat("the agent is registered with ", address, " now");
    context_->TryCancel();
  }
}

bool LogShipper::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool LogShipper::Wait(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || woken_; };
  mu_.AwaitWithTimeout(absl::Condition(&done), d);
  woken_ = false;
  return stopping_;
}

bool LogShipper::Backoff(absl::Duration d, const std::string& from) {
  const absl::Time until = absl::Now() + d;
  while (true) {
    const absl::Duration left = until - absl::Now();
    if (left <= absl::ZeroDuration()) return Stopping();
    // Looks at the registered address at least every second, so a failover ends a long wait.
    if (Wait(std::min(left, absl::Seconds(1)))) return true;
    const std::string now = options_.address();
    if (!now.empty() && now != from) return false;
  }
}

void LogShipper::UpdateBacklog() {
  const int64_t backlog = state_.BacklogBytes();
  backlog_.store(backlog, std::memory_order_relaxed);
  if (options_.metrics != nullptr) options_.metrics->SetLogShipBacklog(backlog);
}

void LogShipper::ScanOnly() {
  state_.Scan();
  UpdateBacklog();
}

void LogShipper::Loop() {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  absl::Duration backoff = options_.initial_backoff;
  // Streams in a row that failed before an answer: only some of them are logged.
  int failures = 0;
  bool warned_unsupported = false;
  while (!Stopping()) {
    const std::string address = options_.address();
    if (address.empty()) {
      // No registered stream to a scheduler: nowhere to ship yet.
      ScanOnly();
      Wait(options_.interval);
      continue;
    }
    Outcome outcome = RunStream(address);
    // Whatever the next stream's scheduler holds, it says so: every run is probed again.
    state_.Resync();
    if (Stopping()) {
      if (outcome.answered) spdlog::info("log shipping to {} ended: the agent stops", address);
      break;
    }
    if (outcome.answered) {
      backoff = options_.initial_backoff;
      failures = 0;
    }
    const grpc::StatusCode code = outcome.status.error_code();
    if (outcome.left.empty() && !outcome.answered && log_shipper_internal::Unsupported(code)) {
      if (!warned_unsupported) {
        spdlog::warn(
            "the scheduler at {} takes no logs ({}): the replicas' logs stay on this node "
            "only; trying again every {}",
            address, outcome.status.error_message(),
            absl::FormatDuration(options_.unsupported_retry));
        warned_unsupported = true;
      }
      if (Backoff(options_.unsupported_retry, address)) break;
      continue;
    }
    if (outcome.failed) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      if (options_.metrics != nullptr) options_.metrics->OnLogShipError();
    }
    const absl::Duration delay = absl::Trunc(backoff * jitter(rng), absl::Milliseconds(1));
    backoff = std::min(backoff * 2, options_.max_backoff);
    const std::string why =
        !outcome.left.empty()
            ? outcome.left
            : absl::StrCat(outcome.status.error_message().empty() ? "stream closed"
                                                                  : outcome.status.error_message(),
                           " (code ", static_cast<int>(code), ")");
    ++failures;
    if (outcome.answered || failures == 1 || failures % 20 == 0) {
      spdlog::info("log shipping to {} ended: {}; again in {}", address, why,
                   absl::FormatDuration(delay));
    } else {
      spdlog::debug("log shipping to {} failed: {}; again in {}", address, why,
                    absl::FormatDuration(delay));
    }
    if (Backoff(delay, address)) break;
  }
}

LogShipper::Outcome LogShipper::RunStream(const std::string& address) {
  Outcome outcome;
  std::unique_ptr<trainctl::v1::AgentService::Stub> stub =
      trainctl::v1::AgentService::NewStub(options_.channel(address));
  grpc::ClientContext context;
  context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return outcome;
    context_ = &context;
    stream_address_ = address;
  }
  std::unique_ptr<
      grpc::ClientReaderWriter<trainctl::v1::ShipLogsRequest, trainctl::v1::ShipLogsResponse>>
      stream = stub->ShipLogs(&context);
  bool first = true;
  // Whether the call ended by itself (a failed Write or Read): then Finish says why.
  bool ended = false;
  absl::Time last_retry_log = absl::InfinitePast();
  while (true) {
    if (Stopping()) {
      outcome.left = "the agent stops";
      break;
    }
    const std::string now_address = options_.address();
    if (now_address != address) {
      outcome.left = now_address.empty()
                         ? "the agent's stream to the scheduler ended"
                         : absl::StrCat("the agent is registered with ", now_address, " now");
      break;
    }
    state_.Scan();
    bool more = false;
    trainctl::v1::ShipLogsRequest request;
    for (trainctl::v1::LogPiece& piece : state_.NextPieces(options_.ended, absl::Now(), &more)) {
      *request.add_pieces() = std::move(piece);
    }
    UpdateBacklog();
    // The first request goes even without pieces: it names the node, and the answer shows the
    // scheduler serves ShipLogs.
    if (request.pieces().empty() && !first) {
      Wait(options_.interval);
      continue;
    }
    if (first) request.set_node(options_.node);
    trainctl::v1::ShipLogsResponse response;
    if (!stream->Write(request) || !stream->Read(&response)) {
      ended = true;
      break;
    }
    if (first) {
      spdlog::info("log shipping to {}: stream open", address);
      outcome.answered = true;
      first = false;
    }
    absl::StatusOr<LogShipState::Applied> applied =
        state_.Apply(request.pieces(), response, absl::Now());
    if (!applied.ok()) {
      outcome.left = std::string(applied.status().message());
      outcome.failed = true;
      break;
    }
    if (applied->shipped_bytes > 0 && options_.metrics != nullptr) {
      options_.metrics->OnLogShipped(applied->shipped_bytes);
    }
    for (const auto& [run_id, why] : applied->refused) {
      spdlog::warn("run {}: the scheduler keeps no copy of its log ({}); not shipping it", run_id,
                   why);
    }
    if (!applied->retry.empty() && absl::Now() - last_retry_log >= absl::Minutes(1)) {
      spdlog::warn("log shipping to {}: the scheduler asks to ship again later: {}", address,
                   applied->retry);
      last_retry_log = absl::Now();
    }
    UpdateBacklog();
    if (!more) Wait(options_.interval);
  }
  if (!ended) context.TryCancel();
  outcome.status = stream->Finish();
  absl::MutexLock lock(&mu_);
  if (outcome.left.empty() && !cancelled_.empty()) outcome.left = cancelled_;
  if (outcome.left.empty() && stopping_) outcome.left = "the agent stops";
  if (outcome.left.empty()) outcome.failed = true;
  cancelled_.clear();
  context_ = nullptr;
  stream_address_.clear();
  return outcome;
}

}  // namespace trainctl::agent
