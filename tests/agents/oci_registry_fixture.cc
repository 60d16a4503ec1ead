// The test registry, image builder and silent server of oci_registry_fixture.h.
#include "tests/agents/oci_registry_fixture.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "agents/spawn.h"
#include "agents/tool_run.h"
#include "common/json_text.h"

namespace trainctl::agent::testing {
namespace oci_fixture_internal {

constexpr char kRegistryBinary[] = "/usr/bin/docker-registry";
constexpr char kBusybox[] = "/bin/busybox";

// Whether the registry on 127.0.0.1:`port` answers GET /v2/ with `token` among its headers (not
// another test's registry that took the port in the meantime).
bool AnswersV2(int port, const std::string& token) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const char request[] = "GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, request, sizeof(request) - 1) == static_cast<ssize_t>(sizeof(request) - 1)) {
      std::string reply;
      char buf[1024];
      ssize_t n;
      while (reply.size() < 8192 && (n = read(fd, buf, sizeof(buf))) > 0) {
        reply.append(buf, static_cast<size_t>(n));
      }
      ok = reply.rfind("HTTP/1.", 0) == 0 && reply.find(token) != std::string::npos;
    }
  }
  close(fd);
  return ok;
}

void Write(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

std::string JsonArray(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back(JsonQuoted(item));
  return absl::StrCat("[", absl::StrJoin(quoted, ","), "]");
}

}  // namespace oci_fixture_internal

std::string OciTestsUnavailable() {
  if (geteuid() != 0) return "not root";
  for (const char* tool : {"/usr/bin/docker-registry", "/usr/bin/buildah", "/bin/busybox"}) {
    if (access(tool, X_OK) != 0) return absl::StrCat(tool, " is missing");
  }
  for (const char* tool : {"skopeo", "umoci", "runc"}) {
    if (!ResolveCommand(tool, SearchPathOf(CurrentEnvironment()), "/").ok()) {
      return absl::StrCat(tool, " is missing");
    }
  }
  // Agents run images only on a kernel with overlayfs (container_runtime.h).
  std::ifstream filesystems("/proc/filesystems");
  for (std::string line; std::getline(filesystems, line);) {
    if (line.size() >= 8 && line.compare(line.size() - 8, 8, "\toverlay") == 0) return "";
  }
  return "the kernel has no overlayfs";
}

absl::StatusOr<std::string> HtpasswdLine(const std::string& user, const std::string& password) {
  // Cost 4, bcrypt's least: the registry checks it on every request.
  const char* salt = crypt_gensalt("$2b$", 4, nullptr, 0);
  if (salt == nullptr) return absl::InternalError("crypt_gensalt: no bcrypt");
  auto data = std::make_unique<crypt_data>();
  const char* hash = crypt_r(password.c_str(), salt, data.get());
  if (hash == nullptr || hash[0] == '*') return absl::InternalError("crypt_r failed");
  return absl::StrCat(user, ":", hash);
}

absl::StatusOr<std::unique_ptr<TestRegistry>> TestRegistry::Start(const std::string& dir,
                                                                  const std::string& htpasswd) {
  namespace oci = oci_fixture_internal;
  std::filesystem::create_directories(dir + "/storage");
  absl::Status last = absl::InternalError("not started");
  for (int attempt = 0; attempt < 3; ++attempt) {  // Another process may take the free port.
    const int port = FreeLoopbackPort();
    const std::string token = absl::StrCat("registry-", getpid(), "-", port, "-", attempt, "-",
                                           std::hash<std::string>()(dir));
    std::string config =
        absl::StrCat("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n",
                     "storage:\n  filesystem:\n    rootdirectory: ", dir, "/storage\n",
                     "  delete:\n    enabled: true\n", "http:\n  addr: 127.0.0.1:", port, "\n",
                     "  headers:\n    X-Trainctl-Test: [", token, "]\n");
    if (!htpasswd.empty()) {
      oci::Write(dir + "/htpasswd", htpasswd + "\n");
      absl::StrAppend(&config, "auth:\n  htpasswd:\n    realm: trainctl-test\n    path: ", dir,
                      "/htpasswd\n");
    }
    oci::Write(dir + "/config.yml", config);
    const std::string log = dir + "/registry.log";
    int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    SpawnRequest request;
    request.argv = {oci::kRegistryBinary, "serve", dir + "/config.yml"};
    request.env = CurrentEnvironment();
    request.working_dir = dir;
    request.output_fd = log_fd;
    absl::StatusOr<pid_t> pid = SpawnProcess(request);
    close(log_fd);
    if (!pid.ok()) return pid.status();
    std::unique_ptr<TestRegistry> registry(new TestRegistry(*pid, port));
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      if (oci::AnswersV2(port, token)) return registry;
      int status;
      if (waitpid(*pid, &status, WNOHANG) == *pid) {  // It died: the port was taken?
        registry->pid_ = -1;
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    registry->Stop();
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    last = absl::InternalError(
        absl::StrCat("docker-registry did not answer on port ", port, ": ", LastLine(text)));
  }
  return last;
}

std::string TestRegistry::host() const { return absl::StrCat("127.0.0.1:", port_); }

void TestRegistry::Stop() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  int status;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  kill(-pid_, SIGKILL);  // Anything it left in its group.
  pid_ = -1;
}

ImageBuilder::ImageBuilder(std::string dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_ + "/tmp");
}

absl::StatusOr<std::string> ImageBuilder::Buildah(std::vector<std::string> args) {
  ToolRequest request;
  request.argv = {"/usr/bin/buildah", "--root",           dir_ + "/root", "--runroot",
                  dir_ + "/run",      "--storage-driver", "vfs"};
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  request.env = MergeEnvironment(CurrentEnvironment(), {{"TMPDIR", dir_ + "/tmp"}});
  request.timeout = absl::Seconds(120);
  ToolOutcome outcome = RunTool(request);
  if (!outcome.ok()) {
    return absl::InternalError(absl::StrCat("buildah ", absl::StrJoin(args, " "), ": ",
                                            outcome.Describe(request.timeout)));
  }
  return LastLine(outcome.stdout_text);
}

absl::StatusOr<std::string> ImageBuilder::BuildAndPush(const ImageSpec& spec,
                                                       const std::string& ref,
                                                       const std::string& credentials) {
  namespace oci = oci_fixture_internal;
  const int n = ++seq_;
  const std::string stage = absl::StrCat(dir_, "/stage-", n);
  std::filesystem::remove_all(stage);
  std::filesystem::create_directories(stage);
  if (spec.busybox) {
    std::filesystem::create_directories(stage + "/bin");
    std::filesystem::copy_file(oci::kBusybox, stage + "/bin/busybox");
    for (const char* applet : {"sh", "cat", "echo", "ls"}) {
      std::filesystem::create_symlink("busybox", stage + "/bin/" + applet);
    }
  }
  for (const auto& [path, content] : spec.files) oci::Write(stage + path, content);

  std::string base = "scratch";
  if (!spec.base.empty()) {
    auto it = local_.find(spec.base);
    if (it == local_.end()) return absl::InvalidArgumentError("unknown base " + spec.base);
    base = it->second;
  }
  absl::StatusOr<std::string> container = Buildah({"from", "--pull-never", base});
  if (!container.ok()) return container.status();
  std::vector<std::string> config = {"config"};
  for (const std::string& env : spec.env) {
    config.push_back("--env");
    config.push_back(env);
  }
  if (!spec.working_dir.empty()) config.insert(config.end(), {"--workingdir", spec.working_dir});
  if (!spec.entrypoint.empty()) {
    config.insert(config.end(), {"--entrypoint", oci::JsonArray(spec.entrypoint)});
  }
  if (!spec.cmd.empty()) config.insert(config.end(), {"--cmd", oci::JsonArray(spec.cmd)});
  if (!spec.user.empty()) config.insert(config.end(), {"--user", spec.user});
  config.push_back(*container);
  const std::string local = absl::StrCat("localhost/trainctl-test-", n, ":latest");
  const std::string digest_file = absl::StrCat(dir_, "/digest-", n);
  std::vector<std::string> push = {"push", "--tls-verify=false", "--digestfile", digest_file};
  if (!credentials.empty()) push.insert(push.end(), {"--creds", credentials});
  if (!spec.format.empty()) push.insert(push.end(), {"--format", spec.format});
  push.insert(push.end(), {local, "docker://" + ref});
  for (std::vector<std::string> args :
       {std::vector<std::string>{"copy", *container, stage, "/"}, config,
        std::vector<std::string>{"commit", "--quiet", *container, local},
        std::vector<std::string>{"rm", *container}, push}) {
    absl::StatusOr<std::string> ran = Buildah(args);
    if (!ran.ok()) return ran.status();
  }
  local_[ref] = local;
  std::ifstream in(digest_file);
  std::string digest;
  in >> digest;
  if (digest.rfind("sha256:", 0) != 0) return absl::InternalError("buildah wrote no digest");
  return digest;
}

SilentServer::SilentServer() {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 16) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return;
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] {
    std::vector<int> held;
    while (!stop_.load()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) == 1) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) held.push_back(fd);  // Read nothing, answer nothing.
      }
    }
    for (int fd : held) close(fd);
  });
}

SilentServer::~SilentServer() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

}  // namespace trainctl::agent::testing
