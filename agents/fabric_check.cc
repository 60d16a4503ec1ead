// The fabric check's listener, probe and program run (fabric_check.h): non-blocking sockets
// waited on with poll, so that every step of a probe or of a served connection has a deadline.
#include "agents/fabric_check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "agents/spawn.h"
#include "agents/tool_run.h"
#include "common/os_error.h"
#include "common/time_util.h"
#include "common/utf8.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace trainctl::agent {
namespace fabric_internal {

constexpr size_t kMagicSize = sizeof(kFabricMagic) - 1;
constexpr size_t kBulkChunk = size_t{256} << 10;
constexpr size_t kOutputTail = 512;

// How a read or write of a whole buffer ended.
struct Io {
  enum Kind { kOk, kEof, kTimeout, kError };
  Kind kind = kOk;
  int error = 0;
};

// Waits until `fd` is ready for `events` (or has an error to tell) or `deadline` passes; false
// then.
bool WaitFor(int fd, short events, absl::Time deadline) {
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p = {fd, events, 0};
    const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1)));
    const int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, INT_MAX)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return true;  // the next read or write says what is wrong
  }
}

// Reads exactly `size` bytes from the non-blocking `fd`; each wait ends at `deadline` or after
// `idle`, whichever comes first.
Io ReadFull(int fd, char* data, size_t size, absl::Time deadline, absl::Duration idle) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = read(fd, data + got, size - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      return {Io::kEof, 0};
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!WaitFor(fd, POLLIN, std::min(deadline, absl::Now() + idle))) return {Io::kTimeout, 0};
    } else if (errno != EINTR) {
      return {Io::kError, errno};
    }
  }
  return {};
}

// Writes all of `data` to the non-blocking socket `fd`, with ReadFull's waits.
Io WriteFull(int fd, const char* data, size_t size, absl::Time deadline, absl::Duration idle) {
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!WaitFor(fd, POLLOUT, std::min(deadline, absl::Now() + idle))) return {Io::kTimeout, 0};
    } else if (errno != EINTR) {
      return {Io::kError, errno};
    }
  }
  return {};
}

void PutCount(uint64_t count, char* out) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(count & 0xff);
    count >>= 8;
  }
}

uint64_t GetCount(const char* in) {
  uint64_t count = 0;
  for (int i = 0; i < 8; ++i) count = (count << 8) | static_cast<unsigned char>(in[i]);
  return count;
}

double MsBetween(std::chrono::steady_clock::time_point from,
                 std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// "10.0.0.2:7090" or "[fd00::2]:7090" split into its host (without brackets) and port.
bool SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  size_t colon;
  if (!address.empty() && address[0] == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return false;
    }
    *host = address.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = address.rfind(':');
    if (colon == std::string::npos) return false;
    *host = address.substr(0, colon);
  }
  *port = address.substr(colon + 1);
  int number = 0;
  return !host->empty() && absl::SimpleAtoi(*port, &number) && number > 0 && number <= 65535;
}

// Connects to `address` (one of getaddrinfo's) by `deadline`. Sets `error` to errno (0: the
// deadline passed) on failure.
UniqueFd ConnectBy(const addrinfo& address, absl::Time deadline, int* error) {
  UniqueFd fd(socket(address.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    *error = errno;
    return UniqueFd();
  }
  if (connect(fd.get(), address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      *error = errno;
      return UniqueFd();
    }
    if (!WaitFor(fd.get(), POLLOUT, deadline)) {
      *error = 0;
      return UniqueFd();
    }
    int so_error = 0;
    socklen_t length = sizeof(so_error);
    if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &length) != 0) so_error = errno;
    if (so_error != 0) {
      *error = so_error;
      return UniqueFd();
    }
  }
  const int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// The last line of `text` that is a JSON object with a numeric "gbps" member: its value.
std::optional<double> ReportedGbps(const std::string& text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const absl::string_view line = absl::StripAsciiWhitespace(*it);
    if (line.size() < 2 || line.front() != '{' || line.back() != '}') continue;
    google::protobuf::Struct object;
    if (!google::protobuf::util::JsonStringToMessage(std::string(line), &object).ok()) continue;
    auto gbps = object.fields().find("gbps");
    if (gbps == object.fields().end() ||
        gbps->second.kind_case() != google::protobuf::Value::kNumberValue ||
        !std::isfinite(gbps->second.number_value())) {
      continue;
    }
    return gbps->second.number_value();
  }
  return std::nullopt;
}

// The last ~512 bytes of the program's output: stdout, then stderr.
std::string OutputTail(const ToolOutcome& outcome) {
  std::string text(absl::StripTrailingAsciiWhitespace(outcome.stdout_text));
  const absl::string_view err = absl::StripTrailingAsciiWhitespace(outcome.stderr_text);
  if (!err.empty()) {
    if (!text.empty()) text += "\n";
    absl::StrAppend(&text, err);
  }
  if (text.size() > kOutputTail) text = "..." + text.substr(text.size() - kOutputTail);
  return SanitizeUtf8(absl::StripAsciiWhitespace(text));
}

std::string WithTail(std::string what, const std::string& tail) {
  if (tail.empty()) return what;
  return absl::StrCat(what, ": ", tail);
}

}  // namespace fabric_internal

std::string FormatMeasure(double value) {
  if (!(value > 0) || !std::isfinite(value)) return absl::StrCat(value > 0 ? value : 0.0);
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(value)));
  return absl::StrCat(std::round(value * scale) / scale);
}

// --- The listener ---

FabricListener::~FabricListener() { Stop(); }

absl::Status FabricListener::Start(int port) {
  const auto fail = [port](const char* what) {
    return absl::UnavailableError(absl::StrCat(what, " port ", port, ": ", ErrnoText(errno)));
  };
  const int one = 1;
  // IPv6 with IPv4-mapped addresses where the host has IPv6; IPv4 alone where not.
  UniqueFd fd(socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  bool bound = false;
  if (fd.get() >= 0) {
    const int zero = 0;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in6 any6 = {};
    any6.sin6_family = AF_INET6;
    any6.sin6_addr = in6addr_any;
    any6.sin6_port = htons(static_cast<uint16_t>(port));
    bound = bind(fd.get(), reinterpret_cast<const sockaddr*>(&any6), sizeof(any6)) == 0;
    if (!bound && errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL) return fail("bind");
  }
  if (!bound) {
    fd = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return fail("socket for");
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in any4 = {};
    any4.sin_family = AF_INET;
    any4.sin_addr.s_addr = htonl(INADDR_ANY);
    any4.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&any4), sizeof(any4)) != 0) {
      return fail("bind");
    }
  }
  if (listen(fd.get(), 128) != 0) return fail("listen on");
  sockaddr_storage local = {};
  socklen_t length = sizeof(local);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    return fail("getsockname of");
  }
  const uint16_t bound_port = local.ss_family == AF_INET6
                                  ? reinterpret_cast<const sockaddr_in6*>(&local)->sin6_port
                                  : reinterpret_cast<const sockaddr_in*>(&local)->sin_port;
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) return fail("pipe for");
  wake_read_ = UniqueFd(wake[0]);
  wake_write_ = UniqueFd(wake[1]);
  listen_fd_ = std::move(fd);
  port_ = ntohs(bound_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return absl::OkStatus();
}

int FabricListener::Active() const {
  absl::MutexLock lock(&mu_);
  int active = 0;
  for (const Connection& c : connections_) active += c.done ? 0 : 1;
  return active;
}

void FabricListener::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    // The fds stay open until their threads are joined: no number is reused meanwhile.
    for (Connection& c : connections_) shutdown(c.fd.get(), SHUT_RDWR);
  }
  if (wake_write_.get() >= 0) {
    const char byte = 0;
    [[maybe_unused]] ssize_t n = write(wake_write_.get(), &byte, 1);
  }
  if (acceptor_.joinable()) acceptor_.join();
  std::list<Connection> connections;
  {
    absl::MutexLock lock(&mu_);
    connections.swap(connections_);
  }
  for (Connection& c : connections) {
    if (c.thread.joinable()) c.thread.join();
  }
  listen_fd_.reset();
}

void FabricListener::ReapLocked() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (!it->done) {
      ++it;
      continue;
    }
    it->thread.join();  // it has marked itself done, its last step
    it = connections_.erase(it);
  }
}

void FabricListener::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    // Woken every second too, to join the threads of connections that ended.
    const int rc = poll(fds, 2, 1000);
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      ReapLocked();
    }
    if (rc <= 0 || (fds[0].revents & POLLIN) == 0) continue;
    UniqueFd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.get() < 0) {
      // Out of descriptors or memory: give the connections being served a moment to end.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        absl::SleepFor(absl::Milliseconds(50));
      }
      continue;
    }
    const int one = 1;  // the echoes go out at once
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    // Over the limit: closed at once (fd's destructor); the client sees the connection end.
    if (connections_.size() >= static_cast<size_t>(kFabricMaxConnections)) continue;
    connections_.emplace_back();
    Connection* connection = &connections_.back();
    connection->fd = std::move(fd);
    connection->thread = std::thread([this, connection] { Serve(connection); });
  }
}

void FabricListener::Serve(Connection* connection) {
  using fabric_internal::Io;
  const int fd = connection->fd.get();
  const absl::Time limit = absl::Now() + kFabricConnectionLimit;
  const absl::Duration idle = kFabricIdleTimeout;
  [&] {
    char magic[fabric_internal::kMagicSize];
    if (fabric_internal::ReadFull(fd, magic, sizeof(magic), limit, idle).kind != Io::kOk ||
        std::memcmp(magic, kFabricMagic, sizeof(magic)) != 0) {
      return;
    }
    for (int i = 0; i < kFabricPings; ++i) {
      char ping[kFabricPingBytes];
      if (fabric_internal::ReadFull(fd, ping, sizeof(ping), limit, idle).kind != Io::kOk ||
          fabric_internal::WriteFull(fd, ping, sizeof(ping), limit, idle).kind != Io::kOk) {
        return;
      }
    }
    std::vector<char> buffer(fabric_internal::kBulkChunk);
    uint64_t count = 0;
    while (true) {
      const ssize_t n = read(fd, buffer.data(), buffer.size());
      if (n > 0) {
        count += static_cast<uint64_t>(n);
      } else if (n == 0) {
        break;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!fabric_internal::WaitFor(fd, POLLIN, std::min(limit, absl::Now() + idle))) return;
      } else if (errno != EINTR) {
        return;
      }
    }
    char answer[8];
    fabric_internal::PutCount(count, answer);
    fabric_internal::WriteFull(fd, answer, sizeof(answer), limit, idle);
  }();
  absl::MutexLock lock(&mu_);
  connection->done = true;
}

// --- The probe ---

trainctl::v1::FabricProbe ProbeFabric(const std::string& host_port, absl::Time deadline,
                                      double min_gbps) {
  using fabric_internal::Io;
  using Clock = std::chrono::steady_clock;
  trainctl::v1::FabricProbe probe;
  const absl::Time start = absl::Now();
  const absl::Time end = std::min(deadline, start + kFabricProbeLimit);
  const auto fail = [&probe](std::string detail) {
    probe.set_ok(false);
    probe.set_detail(std::move(detail));
    return probe;
  };
  const auto no_answer = [&] {
    // The bound as a person set it: "5s", not "4.999s" (the deadline was taken a moment ago,
    // perhaps a few milliseconds on a loaded host).
    const absl::Duration bound =
        end - start >= absl::Milliseconds(900)
            ? absl::Floor(end - start + absl::Milliseconds(500), absl::Seconds(1))
            : absl::Ceil(end - start, absl::Milliseconds(1));
    return fail(
        absl::StrCat("no answer within ", FormatDuration(absl::ToInt64Milliseconds(bound))));
  };
  const auto io_failed = [&](const Io& io) {
    switch (io.kind) {
      case Io::kTimeout:
        return no_answer();
      case Io::kEof:
      case Io::kError:
        if (io.kind == Io::kError && io.error != ECONNRESET && io.error != EPIPE) {
          return fail(absl::StrCat("connection to ", host_port, " lost: ", ErrnoText(io.error)));
        }
        return fail(
            absl::StrCat(host_port,
                         " closed the connection before answering: not a fabric check listener, or "
                         "one busy with ",
                         kFabricMaxConnections, " other connections"));
      case Io::kOk:
        break;
    }
    return fail("internal error: a probe step failed without a reason");
  };
  if (end <= start) return fail("no time left for the probe: the check's deadline passed");

  std::string host;
  std::string port;
  if (!fabric_internal::SplitHostPort(host_port, &host, &port)) {
    return fail(absl::StrCat("bad listener address \"", host_port, "\": want HOST:PORT"));
  }
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return fail(absl::StrCat("resolve ", host, ": ", gai_strerror(rc)));
  }
  UniqueFd fd;
  int error = 0;
  for (const addrinfo* a = found; a != nullptr && fd.get() < 0; a = a->ai_next) {
    fd = fabric_internal::ConnectBy(*a, end, &error);
    if (error == 0 && fd.get() < 0) break;  // the deadline passed
  }
  freeaddrinfo(found);
  if (fd.get() < 0) {
    if (error == 0) return no_answer();
    return fail(absl::StrCat("connect to ", host_port, ": ", ErrnoText(error)));
  }

  const absl::Duration no_idle = absl::InfiniteDuration();
  if (Io io = fabric_internal::WriteFull(fd.get(), kFabricMagic, fabric_internal::kMagicSize, end,
                                         no_idle);
      io.kind != Io::kOk) {
    return io_failed(io);
  }
  std::vector<double> rtts;
  for (int i = 0; i < kFabricPings; ++i) {
    char ping[kFabricPingBytes];
    fabric_internal::PutCount(0x5452414943544c00ull + static_cast<uint64_t>(i), ping);
    char pong[kFabricPingBytes];
    const Clock::time_point sent = Clock::now();
    Io io = fabric_internal::WriteFull(fd.get(), ping, sizeof(ping), end, no_idle);
    if (io.kind == Io::kOk) {
      io = fabric_internal::ReadFull(fd.get(), pong, sizeof(pong), end, no_idle);
    }
    if (io.kind != Io::kOk) return io_failed(io);
    rtts.push_back(fabric_internal::MsBetween(sent, Clock::now()));
    if (std::memcmp(ping, pong, sizeof(ping)) != 0) {
      return fail("the peer does not speak the fabric check protocol");
    }
  }
  std::sort(rtts.begin(), rtts.end());
  probe.set_latency_ms((rtts[kFabricPings / 2 - 1] + rtts[kFabricPings / 2]) / 2);

  // The bandwidth sample: as much as goes in kFabricBulkTime, at most kFabricBulkBytes.
  const std::vector<char> chunk(fabric_internal::kBulkChunk, 'f');
  const Clock::time_point bulk_start = Clock::now();
  const absl::Time bulk_end = std::min(end, absl::Now() + kFabricBulkTime);
  int64_t sent = 0;
  while (sent < kFabricBulkBytes) {
    const size_t size = static_cast<size_t>(
        std::min<int64_t>(static_cast<int64_t>(chunk.size()), kFabricBulkBytes - sent));
    const ssize_t n = send(fd.get(), chunk.data(), size, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += n;
      if (absl::Now() >= bulk_end) break;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!fabric_internal::WaitFor(fd.get(), POLLOUT, bulk_end)) break;
    } else if (errno != EINTR) {
      return io_failed({Io::kError, errno});
    }
  }
  shutdown(fd.get(), SHUT_WR);
  char answer[8];
  if (Io io = fabric_internal::ReadFull(fd.get(), answer, sizeof(answer), end, no_idle);
      io.kind != Io::kOk) {
    return io_failed(io);
  }
  const double seconds = fabric_internal::MsBetween(bulk_start, Clock::now()) / 1000;
  const uint64_t received = fabric_internal::GetCount(answer);
  if (received > static_cast<uint64_t>(sent)) {
    return fail("the peer does not speak the fabric check protocol");
  }
  probe.set_gbps(seconds > 0 ? static_cast<double>(received) * 8 / seconds / 1e9 : 0);
  probe.set_ok(true);
  if (min_gbps > 0 && probe.gbps() < min_gbps) {
    return fail(absl::StrCat(FormatMeasure(probe.gbps()),
                             " Gbit/s, below --gang-check-min-tcp-gbps ", min_gbps));
  }
  return probe;
}

// --- The program ---

trainctl::v1::FabricProgramRun RunFabricProgram(const FabricProgramRequest& request) {
  trainctl::v1::FabricProgramRun run;
  ToolRequest tool;
  tool.argv = {"/bin/sh", "-c", request.command};
  tool.env = MergeEnvironment(CurrentEnvironment(), request.env);
  tool.timeout = std::max(request.deadline - absl::Now(), absl::ZeroDuration());
  tool.cancelled = request.cancelled;
  const ToolOutcome outcome = RunTool(tool);
  *run.mutable_took() = MsToDuration(absl::ToInt64Milliseconds(outcome.elapsed));
  const std::optional<double> gbps = fabric_internal::ReportedGbps(outcome.stdout_text);
  if (gbps) run.set_gbps(*gbps);
  const std::string tail = fabric_internal::OutputTail(outcome);
  std::string detail;
  switch (outcome.end) {
    case ToolOutcome::End::kExited:
      if (outcome.exit_code != 0) {
        detail =
            fabric_internal::WithTail(absl::StrCat("exited with status ", outcome.exit_code), tail);
      } else if (request.min_gbps > 0 && !gbps) {
        detail = absl::StrCat("printed no {\"gbps\": N} line, and --gang-check-min-gbps is ",
                              request.min_gbps);
      } else if (request.min_gbps > 0 && *gbps < request.min_gbps) {
        detail = absl::StrCat("reported ", FormatMeasure(*gbps),
                              " Gbit/s, below --gang-check-min-gbps ", request.min_gbps);
      }
      break;
    case ToolOutcome::End::kSignaled:
      detail = fabric_internal::WithTail(absl::StrCat("killed by signal ", outcome.signal), tail);
      break;
    case ToolOutcome::End::kTimedOut:
      detail = absl::StrCat("killed at the check's deadline (",
                            FormatDuration(absl::ToInt64Milliseconds(request.check_timeout)), ")");
      break;
    case ToolOutcome::End::kCancelled:
      detail = "killed: the agent is stopping";
      break;
    case ToolOutcome::End::kNotStarted:
      detail = absl::StrCat("not started: ", outcome.error);
      break;
  }
  run.set_ok(detail.empty());
  run.set_detail(SanitizeUtf8(detail));
  return run;
}

}  // namespace trainctl::agent
