// The PKI of `trainctld pki`: real OpenSSL keys and certificates in a temporary directory.
#include "server/pki.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"

namespace trainctl::server {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/trainctl-pki-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

mode_t Mode(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

TEST_CASE("pki init writes a CA and a server certificate, keys private", "[pki]") {
  const std::string root = TempDir();
  const std::string dir = root + "/pki";
  REQUIRE(InitPki(dir, {{"sched.example", "10.0.0.1"}}).ok());
  CHECK(Mode(dir) == 0700);
  CHECK(Mode(dir + "/ca.key") == 0600);
  CHECK(Mode(dir + "/server.key") == 0600);
  CHECK(Mode(dir + "/ca.crt") == 0644);
  absl::StatusOr<CertificateInfo> server = ParseCertificate(Read(dir + "/server.crt"));
  REQUIRE(server.ok());
  CHECK(server->common_name == "sched.example");
  CHECK(server->organizational_unit == "trainctld");
  CHECK(server->dns_names == std::vector<std::string>{"sched.example"});
  CHECK(server->not_after_ms > 0);
  // "AB:CD:..." : 32 bytes.
  CHECK(server->fingerprint.size() == 32 * 3 - 1);

  // A second init would strand every certificate issued so far.
  absl::Status again = InitPki(dir, {});
  CHECK(absl::IsFailedPrecondition(again));
  CHECK(absl::StrContains(again.message(), "already holds a CA"));
  std::filesystem::remove_all(root);
}

TEST_CASE("agent certificates name their node and differ on every issue", "[pki]") {
  const std::string dir = TempDir();
  REQUIRE(InitPki(dir, {}).ok());
  REQUIRE(IssueAgentCertificate(dir, "node-a").ok());
  CHECK(Mode(dir + "/agents/node-a.key") == 0600);
  absl::StatusOr<CertificateInfo> first = ParseCertificate(Read(dir + "/agents/node-a.crt"));
  REQUIRE(first.ok());
  CHECK(first->common_name == "node-a");
  CHECK(first->organizational_unit == kAgentUnit);
  REQUIRE(IssueAgentCertificate(dir, "node-a").ok());
  absl::StatusOr<CertificateInfo> second = ParseCertificate(Read(dir + "/agents/node-a.crt"));
  REQUIRE(second.ok());
  CHECK(second->fingerprint != first->fingerprint);
  std::filesystem::remove_all(dir);
}

TEST_CASE("bad PKI input is refused with what to do", "[pki]") {
  const std::string dir = TempDir();
  CHECK(absl::IsFailedPrecondition(IssueAgentCertificate(dir, "node-a")));
  CHECK(absl::StrContains(IssueAgentCertificate(dir, "node-a").message(), "pki init"));
  absl::Status host = InitPki(dir + "/x", {{"bad host!"}});
  CHECK(absl::IsInvalidArgument(host));
  CHECK(absl::StrContains(host.message(), "'bad host!'"));
  CHECK_FALSE(std::filesystem::exists(dir + "/x"));  // nothing half-written
  REQUIRE(InitPki(dir + "/p", {}).ok());
  CHECK(absl::IsInvalidArgument(IssueAgentCertificate(dir + "/p", "Node_A")));
  CHECK(absl::IsInvalidArgument(IssueAgentCertificate(dir + "/p", "../x")));
  CHECK(absl::IsInvalidArgument(ParseCertificate("not a certificate").status()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainctl::server
