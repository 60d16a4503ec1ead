// Agent: the connection to the scheduler (agent.h). Run() dials the address the SchedulerLink
// picks (scheduler_link.h: one of --scheduler's, or the leader a standby named), runs one stream
// from Register to its end (RunStream), and dials again: at once after a standby named the
// leader, else after a backoff. AckWatch leaves a stream whose acks are overdue. The log shipper
// (log_shipper.h) dials the scheduler the stream is registered with on a channel of its own.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/agent.h"
#include "common/leader_hint.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

using Stream =
    grpc::ClientReaderWriterInterface<trainctl::v1::AgentMessage, trainctl::v1::SchedulerMessage>;

// A channel of its own to `address` (a private subchannel pool, so no connection or backoff
// state is shared with earlier channels), whose reconnect backoff matches the agent's. Every
// address gets the same TLS credentials.
std::shared_ptr<grpc::Channel> MakeChannel(const Agent::Options& options,
                                           const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.initial_backoff)));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.initial_backoff)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.max_backoff)));
  // Finds a vanished scheduler host in ~15s rather than at TCP's retransmission timeout. trainctld
  // accepts pings every 5s or more (GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  if (options.tls_ca_pem.empty()) {
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = options.tls_ca_pem;
  tls.pem_cert_chain = options.tls_cert_pem;
  tls.pem_private_key = options.tls_key_pem;
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(tls), args);
}

}  // namespace

absl::Status Agent::FetchWorkdir(const std::string& job_id, const std::string& digest,
                                 const std::function<absl::Status(absl::string_view)>& sink) {
  std::string address;
  {
    absl::MutexLock lock(&mu_);
    address = stream_address_;
  }
  if (address.empty()) return absl::UnavailableError("no stream to a scheduler");
  std::unique_ptr<trainctl::v1::AgentService::Stub> stub =
      trainctl::v1::AgentService::NewStub(MakeChannel(options_, address));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
  trainctl::v1::FetchWorkdirRequest req;
  req.set_node(options_.node);
  req.set_job_id(job_id);
  req.set_digest(digest);
  std::unique_ptr<grpc::ClientReader<trainctl::v1::WorkdirChunk>> reader =
      stub->FetchWorkdir(&context, req);
  trainctl::v1::WorkdirChunk chunk;
  absl::Status written;
  while (written.ok() && reader->Read(&chunk)) written = sink(chunk.data());
  if (!written.ok()) {
    context.TryCancel();
    reader->Finish();
    return written;
  }
  const grpc::Status status = reader->Finish();
  if (status.ok()) return absl::OkStatus();
  const absl::Status why(static_cast<absl::StatusCode>(status.error_code()),
                         absl::StrCat("fetching the working directory of job ", job_id, " from ",
                                      address, ": ", status.error_message()));
  // The user's error stays the user's; anything else is the host's (retried as internal).
  return why.code() == absl::StatusCode::kInvalidArgument ? absl::UnavailableError(why.message())
                                                          : why;
}

void Agent::StartLogShipper() {
  LogShipper::Options shipping;
  shipping.node = options_.node;
  shipping.work_dir = options_.work_dir;
  shipping.interval = options_.log_ship_interval;
  shipping.initial_backoff = options_.initial_backoff;
  shipping.max_backoff = options_.max_backoff;
  shipping.metrics = options_.metrics;
  // The scheduler the agent's stream is registered with, as FetchWorkdir dials it; none between
  // streams.
  shipping.address = [this] {
    absl::MutexLock lock(&mu_);
    return registered_ && context_ != nullptr && !stream_broken_ ? stream_address_ : std::string();
  };
  shipping.channel = [this](const std::string& address) { return MakeChannel(options_, address); };
  // With no lock of the agent's held: the runtime takes its own.
  shipping.ended = [this](const std::string& run_id) { return runtime_->LogFinal(run_id); };
  log_shipper_ = std::make_unique<LogShipper>(std::move(shipping));
  log_shipper_->Start();
}

SchedulerLink Agent::MakeLink(const Options& options) {
  return SchedulerLink(options.scheduler, [&options](const std::string& address) {
    return MakeChannel(options, address);
  });
}

void Agent::Run() {
  absl::Duration backoff = options_.initial_backoff;
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  int failed_connects = 0;
  // The startup script runs when the agent starts, and again once a registered stream is lost
  // (the host may have been away), but not before every dial while the scheduler is down.
  bool startup_due = true;
  while (true) {
    if (startup_due) {
      RunStartupScript();
      startup_due = false;
      // Periodic checks start once the startup script has prepared the host (it may mount what
      // they look at).
      if (!health_checker_.joinable()) {
        health_checker_ = std::thread([this] { HealthCheckLoop(); });
      }
    }
    const std::string from = link_.address();
    StreamOutcome outcome = RunStream();
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) break;
    }
    if (outcome.registered) {
      backoff = options_.initial_backoff;
      startup_due = true;
    }
    const SchedulerLink::Dial dial =
        link_.Next({outcome.connected, outcome.registered, outcome.status, outcome.leader});
    // A standby named the leader: there at once (SchedulerLink logs it).
    if (dial == SchedulerLink::Dial::kLeader) continue;
    // Refused for who it is (a certificate for another node, a revoked one): retrying soon
    // changes nothing until an operator acts, so wait the longest backoff.
    const grpc::StatusCode code = outcome.status.error_code();
    // So is one for the protocol it speaks (an agent newer or older than trainctld accepts).
    if (code == grpc::StatusCode::PERMISSION_DENIED || code == grpc::StatusCode::UNAUTHENTICATED ||
        (code == grpc::StatusCode::FAILED_PRECONDITION && !outcome.registered)) {
      backoff = options_.max_backoff;
      spdlog::error("the scheduler at {} refused this agent: {}", from,
                    outcome.status.error_message());
    }
    // The list has addresses left to try in this round: the next one at once.
    const bool at_once = dial == SchedulerLink::Dial::kNext;
    const absl::Duration delay =
        at_once ? absl::ZeroDuration() : absl::Trunc(backoff * jitter(rng), absl::Milliseconds(1));
    std::string then = absl::StrCat("retrying in ", absl::FormatDuration(delay));
    if (at_once) {
      then = absl::StrCat("trying ", link_.address(), " now");
    } else if (link_.address() != from) {
      absl::StrAppend(&then, " at ", link_.address());
    }
    const std::string why = !outcome.left.empty() ? outcome.left
                            : outcome.status.error_message().empty()
                                ? "stream closed"
                                : outcome.status.error_message();
    failed_connects = outcome.connected ? 0 : failed_connects + 1;
    if (outcome.connected) {
      spdlog::warn("lost the stream to the scheduler at {}: {} (code {}); {}", from, why,
                   static_cast<int>(code), then);
    } else if (failed_connects == 1 || failed_connects % 20 == 0) {
      spdlog::warn("cannot reach the scheduler at {} ({} attempts): {}; {}", from, failed_connects,
                   why, then);
    } else {
      spdlog::info("cannot reach the scheduler at {}: {}; {}", from, why, then);
    }
    if (at_once) continue;
    SleepUnlessStopped(delay);
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
  spdlog::info("agent stopped");
}

void Agent::SleepUnlessStopped(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  auto stopped = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_; };
  mu_.AwaitWithTimeout(absl::Condition(&stopped), d);
}

Agent::StreamOutcome Agent::RunStream() {
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return {};
    context_ = &context;
    stream_address_ = link_.address();
  }
  const std::string address = link_.address();
  std::unique_ptr<Stream> stream = link_.stub().Connect(&context);
  trainctl::v1::AgentMessage reg = StartStream();
  size_t runs = reg.register_().runs_size();
  bool wrote = stream->Write(reg);
  std::thread reader;
  if (wrote) {
    spdlog::info("connected to the scheduler at {}; registering node {} with {} known runs",
                 address, options_.node, runs);
    reader = std::thread([this, &stream] { ReadLoop(stream.get()); });
    // Leaves the stream when an ack is overdue, even while a Write waits on a scheduler that
    // stopped reading.
    std::thread ack_watch([this, &context] { AckWatch(&context); });
    WriteLoop(stream.get());
    {
      absl::MutexLock lock(&mu_);
      stream_broken_ = true;  // ends the watch
    }
    ack_watch.join();
  } else {
    // The call ended before the Register went out (a write fails only then): drain it as the
    // reader would and leave it uncancelled, so that Finish() returns why it ended, e.g. a
    // standby naming the leader.
    trainctl::v1::SchedulerMessage unread;
    while (stream->Read(&unread)) {
    }
    absl::MutexLock lock(&mu_);
    reader_done_ = true;
  }
  {
    // A stream the scheduler ended is left alone, so Finish() returns its status; otherwise
    // (shutdown, a write failure mid-stream, a stream the agent leaves) the reader must be
    // woken.
    absl::MutexLock lock(&mu_);
    if (!reader_done_) context.TryCancel();
  }
  if (reader.joinable()) reader.join();
  StreamOutcome outcome;
  outcome.connected = wrote;
  outcome.status = stream->Finish();
  outcome.leader = LeaderHint(outcome.status, &context);
  absl::MutexLock lock(&mu_);
  context_ = nullptr;
  outcome.registered = registered_;
  outcome.left = left_;
  return outcome;
}

void Agent::AckWatch(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  while (!stream_broken_ && !stopped_) {
    const absl::Time deadline = ack_.Deadline();
    const absl::Time now = MonotonicNow();
    if (now < deadline) {
      // Wakes when the stream ends, and when an ack (or a heartbeat sent) moves the deadline.
      auto changed = [this, deadline]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stream_broken_ || stopped_ || ack_.Deadline() != deadline;
      };
      mu_.AwaitWithTimeout(absl::Condition(&changed), deadline - now);
      continue;
    }
    left_ = absl::StrCat("no heartbeat ack from the scheduler at ", stream_address_, " for ",
                         absl::FormatDuration(absl::Trunc(ack_.Waited(now), absl::Seconds(1))));
    spdlog::warn("{}; reconnecting", left_);
    stream_broken_ = true;
    context->TryCancel();
    return;
  }
}

}  // namespace trainctl::agent
