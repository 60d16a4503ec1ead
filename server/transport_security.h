// trainctld's side of TLS: the server credentials its flags ask for, the verified client
// certificate of an agent stream, and the set of revoked agent certificates.
//
// One port serves the CLI and the agents. With --tls-cert the server asks every peer for a
// client certificate and verifies one that is presented against --agent-ca, but requires none:
// the CLI has none. The agent service then refuses a stream without a verified agent
// certificate, and binds the stream to the node its certificate names (see agent_service.h).
//
//   absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds = ServerCredentials(flags);
//
// Thread-safety: the functions keep no state; CertificateRevocations is thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/daemon_flags.h"
#include "server/pki.h"

namespace trainctl::server {

// TLS credentials from --tls-cert, --tls-key and --agent-ca, or insecure ones without them.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const DaemonFlags& f);

// The client certificate the call's peer presented and gRPC verified, or nothing (plaintext, or
// no certificate).
std::optional<CertificateInfo> VerifiedPeerCertificate(const grpc::ServerContextBase& context);

// Fingerprints of revoked agent certificates (Node.revoked_certificates, loaded at start and
// added to by RevokeNode).
class CertificateRevocations {
 public:
  void Add(const std::string& fingerprint) ABSL_LOCKS_EXCLUDED(mu_);
  bool Contains(const std::string& fingerprint) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  std::set<std::string> revoked_ ABSL_GUARDED_BY(mu_);
};

// How the agent service authenticates agents.
struct AgentAuth {
  // True with TLS: a stream must present a verified agent certificate for its node.
  bool required = false;
  // Not owned; may be null when !required.
  CertificateRevocations* revoked = nullptr;
};

}  // namespace trainctl::server
