#include "server/pki.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace trainctl::server {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;
using Bio = std::unique_ptr<BIO, Free>;

// OpenSSL's queued errors, oldest first, cleared.
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    absl::StrAppend(&out, out.empty() ? "" : "; ", buf);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

absl::Status SslError(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", OpenSslErrors()));
}

absl::StatusOr<Key> NewKey() {
  Key key(EVP_EC_gen("P-256"));
  if (key == nullptr) return SslError("generating a P-256 key");
  return key;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

absl::StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)) {
    return SslError("encoding a key");
  }
  return BioText(bio.get());
}

absl::StatusOr<std::string> CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_X509(bio.get(), cert)) return SslError("encoding a certificate");
  return BioText(bio.get());
}

absl::StatusOr<Key> LoadKey(const std::string& path) {
  TC_ASSIGN_OR_RETURN(std::string pem, ReadFile(path));
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) return SslError(absl::StrCat("reading the key ", path));
  return key;
}

absl::StatusOr<Cert> LoadCert(const std::string& pem, absl::string_view what) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(what, " holds no PEM certificate"));
  }
  return cert;
}

struct Subject {
  std::string common_name;
  std::string unit;
};

// Adds one v3 extension given in OpenSSL's configuration syntax.
absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, Free> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (ext == nullptr || !X509_add_ext(cert, ext.get(), -1)) {
    return SslError(absl::StrCat("adding the extension ", OBJ_nid2sn(nid), " = ", value));
  }
  return absl::OkStatus();
}

// A certificate for `key` and `subject`, valid from now for `days`, signed by `issuer_key`
// (self-signed when `issuer` is null) with the extensions given as (nid, value) pairs.
absl::StatusOr<Cert> MakeCert(EVP_PKEY* key, const Subject& subject, int days, X509* issuer,
                              EVP_PKEY* issuer_key,
                              const std::vector<std::pair<int, std::string>>& extensions) {
  Cert cert(X509_new());
  if (cert == nullptr || !X509_set_version(cert.get(), 2)) return SslError("a new certificate");
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) return SslError("a random serial number");
  serial[0] &= 0x7f;  // positive
  std::unique_ptr<BIGNUM, Free> bn(BN_bin2bn(serial, sizeof(serial), nullptr));
  if (bn == nullptr || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return SslError("setting the serial number");
  }
  // Valid from an hour ago, so hosts whose clocks lag a little accept it at once.
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), days, 0, nullptr) == nullptr) {
    return SslError("setting the validity");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  auto add = [&](const char* field, const std::string& value) {
    return X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                      reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                      0) == 1;
  };
  if (!add("O", "trainctl") || (!subject.unit.empty() && !add("OU", subject.unit)) ||
      !add("CN", subject.common_name)) {
    return SslError("setting the subject");
  }
  X509* signer = issuer != nullptr ? issuer : cert.get();
  if (!X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) ||
      !X509_set_pubkey(cert.get(), key)) {
    return SslError("setting the issuer");
  }
  for (const auto& [nid, value] : extensions) {
    TC_RETURN_IF_ERROR(AddExtension(cert.get(), signer, nid, value));
  }
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) <= 0) {
    return SslError("signing the certificate");
  }
  return cert;
}

// "DNS:name" or "IP:addr" for one host; INVALID_ARGUMENT when it is neither.
absl::StatusOr<std::string> AltName(const std::string& host) {
  unsigned char buf[16];
  if (inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1) {
    return absl::StrCat("IP:", host);
  }
  bool ok = !host.empty() && host.size() <= 253 && host.front() != '.' && host.back() != '.';
  for (char c : host) {
    ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.');
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hosts: '", host, "' is neither a DNS name nor an IP address"));
  }
  return absl::StrCat("DNS:", absl::AsciiStrToLower(host));
}

struct Ca {
  Cert cert;
  Key key;
};

absl::StatusOr<Ca> LoadCa(const std::string& dir) {
  const std::string key_path = dir + "/ca.key";
  if (access(key_path.c_str(), F_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " holds no CA (", key_path, "); create one with `trainctld pki init ", dir, "`"));
  }
  Ca ca;
  TC_ASSIGN_OR_RETURN(ca.key, LoadKey(key_path));
  TC_ASSIGN_OR_RETURN(std::string pem, ReadFile(dir + "/ca.crt"));
  TC_ASSIGN_OR_RETURN(ca.cert, LoadCert(pem, dir + "/ca.crt"));
  return ca;
}

// Writes PREFIX.crt and PREFIX.key (0600), the key first: a crash between the two leaves a new
// key with the old certificate, which an operator notices at once, never a certificate whose
// key is gone.
absl::Status WritePair(const std::string& prefix, X509* cert, EVP_PKEY* key) {
  TC_ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key));
  TC_ASSIGN_OR_RETURN(std::string cert_pem, CertPem(cert));
  TC_RETURN_IF_ERROR(WriteFileAtomically(prefix + ".key", key_pem, 0600));
  return WriteFileAtomically(prefix + ".crt", cert_pem, 0644);
}

absl::Status MakeDir(const std::string& dir, mode_t mode) {
  if (mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, const std::string& content, mode_t mode) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  unlink(tmp.c_str());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    return absl::InternalError(absl::StrCat("cannot create ", tmp, ": ", strerror(errno)));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string err = strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", err));
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", strerror(errno)));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

std::vector<std::string> DefaultServerHosts() {
  std::vector<std::string> hosts = {"localhost", "127.0.0.1", "::1"};
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0' &&
      std::string(name) != "localhost") {
    hosts.push_back(name);
  }
  return hosts;
}

absl::Status IssueServerCertificate(const std::string& dir, const std::vector<std::string>& hosts) {
  const std::vector<std::string>& names = hosts.empty() ? DefaultServerHosts() : hosts;
  std::vector<std::string> alt;
  for (const std::string& host : names) {
    TC_ASSIGN_OR_RETURN(std::string a, AltName(host));
    alt.push_back(std::move(a));
  }
  TC_ASSIGN_OR_RETURN(Ca ca, LoadCa(dir));
  TC_ASSIGN_OR_RETURN(Key key, NewKey());
  TC_ASSIGN_OR_RETURN(Cert cert, MakeCert(key.get(), {names.front(), "trainctld"}, kLeafDays,
                                          ca.cert.get(), ca.key.get(),
                                          {{NID_basic_constraints, "critical,CA:FALSE"},
                                           {NID_key_usage, "critical,digitalSignature"},
                                           {NID_ext_key_usage, "serverAuth"},
                                           {NID_subject_key_identifier, "hash"},
                                           {NID_authority_key_identifier, "keyid"},
                                           {NID_subject_alt_name, absl::StrJoin(alt, ",")}}));
  return WritePair(dir + "/server", cert.get(), key.get());
}

absl::Status InitPki(const std::string& dir, const PkiInitOptions& options) {
  for (const std::string& host : options.hosts) TC_RETURN_IF_ERROR(AltName(host).status());
  if (access((dir + "/ca.key").c_str(), F_OK) == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir,
                     " already holds a CA (ca.key); a new one would strand every "
                     "certificate it issued. Use `trainctld pki issue-agent` or "
                     "`trainctld pki issue-server`, or choose another directory"));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  chmod(dir.c_str(), 0700);
  TC_RETURN_IF_ERROR(MakeDir(dir + "/agents", 0700));
  TC_ASSIGN_OR_RETURN(Key key, NewKey());
  TC_ASSIGN_OR_RETURN(Cert cert,
                      MakeCert(key.get(), {"trainctl cluster CA", ""}, kCaDays, nullptr, nullptr,
                               {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                                {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                {NID_subject_key_identifier, "hash"}}));
  TC_RETURN_IF_ERROR(WritePair(dir + "/ca", cert.get(), key.get()));
  return IssueServerCertificate(dir, options.hosts);
}

absl::Status IssueAgentCertificate(const std::string& dir, const std::string& node) {
  if (!IsDnsLabel(node, 63)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node name '", node,
        "' must be a DNS label: lowercase letters, digits and '-', at most 63 characters"));
  }
  TC_ASSIGN_OR_RETURN(Ca ca, LoadCa(dir));
  TC_RETURN_IF_ERROR(MakeDir(dir + "/agents", 0700));
  TC_ASSIGN_OR_RETURN(Key key, NewKey());
  TC_ASSIGN_OR_RETURN(
      Cert cert, MakeCert(key.get(), {node, kAgentUnit}, kLeafDays, ca.cert.get(), ca.key.get(),
                          {{NID_basic_constraints, "critical,CA:FALSE"},
                           {NID_key_usage, "critical,digitalSignature"},
                           {NID_ext_key_usage, "clientAuth"},
                           {NID_subject_key_identifier, "hash"},
                           {NID_authority_key_identifier, "keyid"}}));
  return WritePair(absl::StrCat(dir, "/agents/", node), cert.get(), key.get());
}

absl::StatusOr<CertificateInfo> ParseCertificate(const std::string& pem) {
  TC_ASSIGN_OR_RETURN(Cert cert, LoadCert(pem, "the peer's certificate"));
  CertificateInfo info;
  X509_NAME* name = X509_get_subject_name(cert.get());
  auto field = [&](int nid) {
    int i = X509_NAME_get_index_by_NID(name, nid, -1);
    if (i < 0) return std::string();
    ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, data);
    if (n < 0) return std::string();
    std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
    return out;
  };
  info.common_name = field(NID_commonName);
  info.organizational_unit = field(NID_organizationalUnitName);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!X509_digest(cert.get(), EVP_sha256(), md, &n)) return SslError("a certificate digest");
  for (unsigned int i = 0; i < n; ++i) {
    absl::StrAppend(&info.fingerprint, i == 0 ? "" : ":", absl::Hex(md[i], absl::kZeroPad2));
  }
  absl::AsciiStrToUpper(&info.fingerprint);
  struct tm tm = {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &tm) == 1) {
    info.not_after_ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  }
  auto* alt = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; alt != nullptr && i < sk_GENERAL_NAME_num(alt); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(alt, i);
    if (g->type != GEN_DNS) continue;
    info.dns_names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                                static_cast<size_t>(ASN1_STRING_length(g->d.dNSName)));
  }
  GENERAL_NAMES_free(alt);
  return info;
}

}  // namespace trainctl::server
