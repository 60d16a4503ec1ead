// trainctl's small PKI, made with OpenSSL: a cluster CA, the scheduler's server certificate and
// one client certificate per agent, whose common name is its node name. Also reads certificates
// back (their subject and SHA-256 fingerprint), for the agent service to bind a stream to a node.
//
//   trainctld pki init /etc/trainctl/pki --hosts sched.example,10.0.0.1
//     DIR/ca.crt  DIR/ca.key (0600)  DIR/server.crt  DIR/server.key (0600)
//   trainctld pki issue-agent /etc/trainctl/pki gpu-07
//     DIR/agents/gpu-07.crt  DIR/agents/gpu-07.key (0600)
//
// Keys are ECDSA P-256; certificates are X.509 v3 signed with SHA-256 and random 128-bit serial
// numbers. Every file is written to a temporary name and renamed into place, so a crash leaves
// either the old file or the new one. Nothing here is hand-rolled crypto: key generation,
// signing and digests are OpenSSL's.
//
// Thread-safe: the functions keep no state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainctl::server {

// Writes `content` to `path` with `mode`, through a temporary file (fsynced) renamed into place:
// a crash leaves the old file or the new one, never half of it.
absl::Status WriteFileAtomically(const std::string& path, const std::string& content, mode_t mode);

// The organizational unit of agent certificates: a certificate without it (the server's, say)
// is not an agent's.
inline constexpr char kAgentUnit[] = "trainctl-agent";

inline constexpr int kCaDays = 3650;
inline constexpr int kLeafDays = 825;

struct PkiInitOptions {
  // DNS names and IP addresses the server certificate is valid for; clients must connect by one
  // of them. Empty: localhost, 127.0.0.1, ::1 and this host's name.
  std::vector<std::string> hosts;
};

// Creates DIR (mode 0700) if needed and writes the CA and the server certificate.
// FAILED_PRECONDITION when DIR already holds a CA key (a second init would strand every
// certificate issued so far); INVALID_ARGUMENT for a malformed host.
absl::Status InitPki(const std::string& dir, const PkiInitOptions& options);

// Writes DIR/agents/NODE.crt and NODE.key, signed by DIR's CA; replaces an earlier pair (the
// way to rotate an agent's certificate, or to give a revoked node a new one).
// INVALID_ARGUMENT for a node name that is not a DNS label; FAILED_PRECONDITION without a CA.
absl::Status IssueAgentCertificate(const std::string& dir, const std::string& node);

// Writes DIR/server.crt and server.key again for `hosts` (rotation before expiry, or new names).
absl::Status IssueServerCertificate(const std::string& dir, const std::vector<std::string>& hosts);

struct CertificateInfo {
  std::string common_name;
  std::string organizational_unit;
  // "AB:CD:…": SHA-256 of the DER encoding, as `openssl x509 -fingerprint -sha256` prints it.
  std::string fingerprint;
  int64_t not_after_ms = 0;
  // The DNS names of its subject alternative names, in order.
  std::vector<std::string> dns_names;
};

// The first certificate of a PEM text. INVALID_ARGUMENT when there is none.
absl::StatusOr<CertificateInfo> ParseCertificate(const std::string& pem);

// The hosts a server certificate needs when none are given.
std::vector<std::string> DefaultServerHosts();

}  // namespace trainctl::server
