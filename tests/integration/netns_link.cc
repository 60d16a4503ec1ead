#include "tests/integration/netns_link.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace trainctl::testing {
namespace {

constexpr char kPrefix[] = "trainctl-part-";
// The nft table the one-way cuts live in.
constexpr char kTable[] = "trainctl_partition";

struct Result {
  int status = -1;
  std::string output;
};

// Runs argv (found on PATH) to its end, stdout and stderr together.
Result Run(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  Result r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid) r.status = status;
  return r;
}

// REQUIREs that argv succeeds.
void Must(const std::vector<std::string>& argv) {
  const Result r = Run(argv);
  INFO(absl::StrJoin(argv, " ") << ": " << r.output);
  REQUIRE(r.status == 0);
}

// Deletes the namespaces of test processes that are gone (their veth pairs go with them).
void DeleteLeftovers() {
  const Result list = Run({"ip", "netns", "list"});
  for (absl::string_view line : absl::StrSplit(list.output, '\n', absl::SkipEmpty())) {
    absl::string_view name = line.substr(0, line.find(' '));
    if (!absl::ConsumePrefix(&name, kPrefix)) continue;
    int pid = 0;
    if (!absl::SimpleAtoi(name.substr(0, name.find('-')), &pid) || pid <= 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    Run({"ip", "netns", "del", absl::StrCat(kPrefix, name)});
  }
}

// Where `ip` is: Exec() must name it by path (MiniCluster execs without a PATH search).
std::string IpPath() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "ip";
}

}  // namespace

std::string NetnsLink::Unavailable() {
  if (geteuid() != 0) return "network partition tests need root (ip netns add); skipped";
  const std::string probe = absl::StrCat("trainctl-probe-", getpid());
  const Result added = Run({"ip", "netns", "add", probe});
  if (added.status != 0) {
    return absl::StrCat("`ip netns add` is not permitted here (", added.output, "); skipped");
  }
  Run({"ip", "netns", "del", probe});
  return "";
}

std::string NetnsLink::NftUnavailable() {
  const Result r = Run({"nft", "--version"});
  if (r.status != 0) {
    return "the one-way cut needs nft (Debian's nftables, deploy/install-deps.sh); skipped";
  }
  return "";
}

NetnsLink::NetnsLink() {
  static std::atomic<int> counter{0};
  const int n = counter++;
  DeleteLeftovers();
  const int pid = static_cast<int>(getpid());
  name_ = absl::StrCat(kPrefix, pid, "-", n);
  // Interface names have at most 15 characters.
  host_if_ = absl::StrCat("tc", pid % 1000000, "-", n % 100, "h");
  ns_if_ = absl::StrCat("tc", pid % 1000000, "-", n % 100, "n");
  // One /30 of 10.213.0.0/16 (16384 of them), by process and counter.
  const int block = (pid * 16 + n) % 16384;
  const std::string net = absl::StrCat("10.213.", block / 64, ".");
  host_address_ = absl::StrCat(net, (block % 64) * 4 + 1);
  ns_address_ = absl::StrCat(net, (block % 64) * 4 + 2);
  Must({"ip", "netns", "add", name_});
  Must({"ip", "link", "add", host_if_, "type", "veth", "peer", "name", ns_if_});
  Must({"ip", "link", "set", ns_if_, "netns", name_});
  Must({"ip", "addr", "add", host_address_ + "/30", "dev", host_if_});
  Must({"ip", "link", "set", host_if_, "up"});
  Must({"ip", "-n", name_, "addr", "add", ns_address_ + "/30", "dev", ns_if_});
  Must({"ip", "-n", name_, "link", "set", ns_if_, "up"});
  Must({"ip", "-n", name_, "link", "set", "lo", "up"});
}

NetnsLink::~NetnsLink() {
  // Deleting the namespace deletes its end of the pair, and with it the host end; the host end
  // is deleted as well in case a process still holds the namespace open.
  Run({"ip", "link", "del", host_if_});
  Run({"ip", "netns", "del", name_});
}

std::vector<std::string> NetnsLink::Exec() const { return {IpPath(), "netns", "exec", name_}; }

void NetnsLink::Down() { Must({"ip", "link", "set", host_if_, "down"}); }

void NetnsLink::Up() { Must({"ip", "link", "set", host_if_, "up"}); }

void NetnsLink::DropOutgoing() { Drop("output", {"ip", "daddr", host_address_}); }

void NetnsLink::DropIncoming() { Drop("input", {"ip", "saddr", host_address_}); }

void NetnsLink::DropTcpPort(int port) { Drop("input", {"tcp", "dport", absl::StrCat(port)}); }

void NetnsLink::Drop(const std::string& hook, const std::vector<std::string>& rule) {
  const std::vector<std::string> nft = {"ip", "netns", "exec", name_, "nft"};
  auto in_ns = [&](std::vector<std::string> args) {
    args.insert(args.begin(), nft.begin(), nft.end());
    return args;
  };
  Must(in_ns({"add", "table", "inet", kTable}));
  Must(in_ns({"add", "chain", "inet", kTable, hook,
              absl::StrCat("{ type filter hook ", hook, " priority 0 ; }")}));
  std::vector<std::string> add = {"add", "rule", "inet", kTable, hook};
  add.insert(add.end(), rule.begin(), rule.end());
  add.push_back("drop");
  Must(in_ns(add));
}

void NetnsLink::Heal() {
  Run({"ip", "netns", "exec", name_, "nft", "delete", "table", "inet", kTable});
  Up();
}

}  // namespace trainctl::testing
