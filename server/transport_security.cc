#include "server/transport_security.h"

#include "absl/strings/str_cat.h"
#include "common/pem_file.h"
#include "common/status_macros.h"

namespace trainctl::server {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const DaemonFlags& f) {
  if (!f.tls()) return grpc::InsecureServerCredentials();
  TC_ASSIGN_OR_RETURN(std::string cert, ReadPemFile("--tls-cert", f.tls_cert));
  TC_ASSIGN_OR_RETURN(std::string key, ReadPemFile("--tls-key", f.tls_key));
  TC_ASSIGN_OR_RETURN(std::string ca, ReadPemFile("--agent-ca", f.agent_ca));
  if (absl::StatusOr<CertificateInfo> info = ParseCertificate(cert); !info.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", f.tls_cert, ": ", info.status().message()));
  }
  if (absl::StatusOr<CertificateInfo> info = ParseCertificate(ca); !info.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--agent-ca ", f.agent_ca, ": ", info.status().message()));
  }
  // Asked of every peer, verified when presented, required of none: the CLI has none; the agent
  // service refuses an agent without one.
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = ca;
  options.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(options);
}

std::optional<CertificateInfo> VerifiedPeerCertificate(const grpc::ServerContextBase& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return std::nullopt;
  std::vector<grpc::string_ref> pem = auth->FindPropertyValues("x509_pem_cert");
  if (pem.empty()) return std::nullopt;
  absl::StatusOr<CertificateInfo> info =
      ParseCertificate(std::string(pem.front().data(), pem.front().size()));
  if (!info.ok()) return std::nullopt;
  return *std::move(info);
}

void CertificateRevocations::Add(const std::string& fingerprint) {
  absl::MutexLock lock(&mu_);
  revoked_.insert(fingerprint);
}

bool CertificateRevocations::Contains(const std::string& fingerprint) {
  absl::MutexLock lock(&mu_);
  return revoked_.count(fingerprint) > 0;
}

}  // namespace trainctl::server
