// trainctld's Daemon in process (server/daemon.h): start and clean stop, a port already taken, a
// store that is not trainctl's, a data dir in use, and a SIGHUP reload, with a real SQLite store
// and loopback listeners.
#include "server/daemon.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace trainctl::server {
namespace {

std::string MakeDir() {
  char tmpl[] = "/tmp/trainctl-daemon-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

// A listening TCP socket on 127.0.0.1; closed when it goes.
class TakenPort {
 public:
  // Port 0: a free one.
  explicit TakenPort(int port = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && listen(fd_, 4) == 0;
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~TakenPort() { close(fd_); }
  bool ok() const { return ok_; }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  bool ok_ = false;
  int port_ = 0;
};

// The flags of a trainctld on `data_dir`, loopback ports picked by the system, and `extra`.
std::vector<std::string> Args(const std::string& data_dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--data-dir",  data_dir,        "--listen",
                                   "127.0.0.1:0", "--http-listen", "127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::unique_ptr<Daemon> MakeDaemon(const std::vector<std::string>& args) {
  absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags(args);
  REQUIRE(flags.ok());
  sigset_t none;
  sigemptyset(&none);
  return std::make_unique<Daemon>(args, *flags, none);
}

int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

TEST_CASE("a daemon starts, announces its addresses and stops cleanly", "[daemon]") {
  const std::string dir = MakeDir();
  std::unique_ptr<Daemon> daemon = MakeDaemon(Args(dir));
  REQUIRE(daemon->Init().ok());
  CHECK(PortOf(daemon->address()) > 0);
  CHECK(PortOf(daemon->http_address()) > 0);
  // Serving is announced by Start, not Init.
  CHECK_FALSE(Exists(dir + "/trainctld.addr"));
  REQUIRE(daemon->Start().ok());
  std::string written;
  std::getline(std::ifstream(dir + "/trainctld.addr"), written);
  CHECK(written == daemon->address());
  CHECK(Exists(dir + "/trainctld.http-addr"));
  CHECK(Exists(dir + "/trainctld.running"));
  const int port = PortOf(daemon->address());
  daemon->Shutdown();
  daemon->Shutdown();                               // a second time does nothing
  CHECK_FALSE(Exists(dir + "/trainctld.running"));  // a clean stop
  daemon.reset();
  // Its port and data dir are free again.
  CHECK(TakenPort(port).ok());
  std::unique_ptr<Daemon> next = MakeDaemon(Args(dir));
  CHECK(next->Init().ok());
}

TEST_CASE("a port already taken fails Init, naming it, and leaves nothing open", "[daemon]") {
  const std::string dir = MakeDir();
  TakenPort taken;
  REQUIRE(taken.ok());
  const std::string listen = absl::StrCat("127.0.0.1:", taken.port());
  std::unique_ptr<Daemon> daemon =
      MakeDaemon({"--data-dir", dir, "--listen", listen, "--http-listen", "127.0.0.1:0"});
  const absl::Status s = daemon->Init();
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("cannot listen on " + listen + " (--listen): another process"));
  CHECK(daemon->ReportFailure(s) == 1);
  daemon->Shutdown();
  CHECK_FALSE(Exists(dir + "/trainctld.addr"));
  // Not a clean stop: the next start checks the database.
  CHECK(Exists(dir + "/trainctld.running"));
  daemon.reset();
  // The lock and the database are free: another daemon starts on the data dir.
  std::unique_ptr<Daemon> next = MakeDaemon(Args(dir));
  REQUIRE(next->Init().ok());
  CHECK(next->Start().ok());
}

TEST_CASE("a REST port already taken fails Init and the gRPC port bound is given back",
          "[daemon]") {
  const std::string dir = MakeDir();
  TakenPort taken;
  REQUIRE(taken.ok());
  std::unique_ptr<Daemon> daemon =
      MakeDaemon({"--data-dir", dir, "--listen", "127.0.0.1:0", "--http-listen",
                  absl::StrCat("127.0.0.1:", taken.port())});
  const absl::Status s = daemon->Init();
  REQUIRE_FALSE(s.ok());
  const int grpc_port = PortOf(daemon->address());
  REQUIRE(grpc_port > 0);
  daemon.reset();  // without Shutdown: the destructor stops what Init started
  CHECK(TakenPort(grpc_port).ok());
  CHECK_FALSE(Exists(dir + "/trainctld.addr"));
  CHECK_FALSE(Exists(dir + "/trainctld.http-addr"));
}

TEST_CASE("a database that is not trainctl's fails Init, naming the file", "[daemon]") {
  const std::string dir = MakeDir();
  const std::string db = dir + "/trainctl.db";
  SECTION("not SQLite") {
    std::ofstream(db) << std::string(8192, 'x');
    std::unique_ptr<Daemon> daemon = MakeDaemon(Args(dir));
    const absl::Status s = daemon->Init();
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(std::string(s.message()), Catch::Contains(db));
    CHECK(daemon->ReportFailure(s) == 1);
  }
  SECTION("another program's SQLite database") {
    sqlite3* other = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "CREATE TABLE songs(title TEXT)", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(other);
    std::unique_ptr<Daemon> daemon = MakeDaemon(Args(dir));
    const absl::Status s = daemon->Init();
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(std::string(s.message()),
               Catch::Contains(db + " is an SQLite database without trainctl's schema"));
  }
  SECTION("empty") {
    std::ofstream(db).close();
    std::unique_ptr<Daemon> daemon = MakeDaemon(Args(dir));
    const absl::Status s = daemon->Init();
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(std::string(s.message()), Catch::Contains(db + " is empty"));
  }
  CHECK_FALSE(Exists(dir + "/trainctld.addr"));
}

TEST_CASE("a data dir another daemon uses fails Init, TLS files missing are a usage error",
          "[daemon]") {
  const std::string dir = MakeDir();
  std::unique_ptr<Daemon> first = MakeDaemon(Args(dir));
  REQUIRE(first->Init().ok());
  std::unique_ptr<Daemon> second = MakeDaemon(Args(dir));
  const absl::Status in_use = second->Init();
  REQUIRE_FALSE(in_use.ok());
  CHECK_THAT(std::string(in_use.message()),
             Catch::Contains("another trainctld is already using " + dir));
  CHECK(second->ReportFailure(in_use) == 1);

  std::unique_ptr<Daemon> tls =
      MakeDaemon(Args(MakeDir(), {"--tls-cert", dir + "/none.pem", "--tls-key", dir + "/none.key",
                                  "--agent-ca", dir + "/none-ca.pem"}));
  const absl::Status usage = tls->Init();
  REQUIRE_FALSE(usage.ok());
  CHECK_THAT(std::string(usage.message()), Catch::Contains("none.pem"));
  CHECK(tls->ReportFailure(usage) == 2);
}

TEST_CASE("a reload takes a changed default quota into the options, other changes wait",
          "[daemon]") {
  const std::string dir = MakeDir();
  const std::string config = MakeDir() + "/trainctld.yaml";
  std::ofstream(config) << "default-quota-max-running-jobs: 0\n";
  std::unique_ptr<Daemon> daemon = MakeDaemon(Args(dir, {"--config", config}));
  REQUIRE(daemon->Init().ok());
  REQUIRE(daemon->Start().ok());
  CHECK(daemon->options().core.default_quota.max_running_jobs == 0);
  CHECK(daemon->options().core.nodes.flap_threshold == 3);

  std::ofstream(config) << "default-quota-max-running-jobs: 5\nflap-threshold: 7\n";
  const std::vector<ConfigChange> changes = daemon->Reload();
  CHECK(changes.size() == 2);
  CHECK(daemon->options().core.default_quota.max_running_jobs == 5);
  // flap-threshold needs a restart: the running value stays.
  CHECK(daemon->options().core.nodes.flap_threshold == 3);
  daemon->Shutdown();
}

}  // namespace
}  // namespace trainctl::server
