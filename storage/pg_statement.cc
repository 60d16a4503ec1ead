#include "storage/pg_statement.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "storage/pg_schema.h"

namespace trainctl::storage {
namespace {

// Type OIDs (PostgreSQL's catalog/pg_type.h, a server header; these never change).
constexpr Oid kBoolOid = 16;
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kTextOid = 25;
constexpr Oid kFloat4Oid = 700;
constexpr Oid kFloat8Oid = 701;

uint64_t BigEndian(const char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Where the URI points, without its password: "database DB at HOST".
std::string Where(PGconn* conn, const std::string& uri) {
  if (conn == nullptr) return "PostgreSQL";
  const char* db = PQdb(conn);
  const char* host = PQhost(conn);
  if (db == nullptr || host == nullptr) return absl::StrCat("PostgreSQL at ", uri);
  return absl::StrCat("PostgreSQL database ", db, " at ", host);
}

absl::StatusCode CodeOf(const char* sqlstate) {
  const std::string s = sqlstate ? sqlstate : "";
  if (absl::StartsWith(s, "08") || s == "57P01" || s == "57P02" || s == "57P03" || s == "53300") {
    return absl::StatusCode::kUnavailable;
  }
  if (s == "53100" || s == "53200") return absl::StatusCode::kResourceExhausted;
  if (s == "40001" || s == "40P01") return absl::StatusCode::kAborted;
  return absl::StatusCode::kInternal;
}

}  // namespace

std::string ToPgParameters(const char* sql) {
  std::string out;
  int next = 0;
  bool quoted = false;
  for (const char* p = sql; *p != '\0'; ++p) {
    if (*p == '\'') quoted = !quoted;
    if (quoted || *p != '?') {
      out += *p;
      continue;
    }
    int n = 0;
    while (p[1] >= '0' && p[1] <= '9') n = n * 10 + (*++p - '0');
    if (n == 0) n = next + 1;
    next = std::max(next, n);
    absl::StrAppend(&out, "$", n);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Connect(
    const std::string& uri, const std::string& application_name) {
  // Defaults the URI may override (its keywords are processed after these): a connection
  // attempt, and a dead peer on an idle or busy TCP connection, cost the loop seconds, not the
  // operating system's minutes or hours. The application name comes after the URI, which cannot
  // change it: a new leader finds a stuck one's sessions by it (storage/pg_lease.h).
  const char* keywords[] = {
      "connect_timeout",  "keepalives_idle", "keepalives_interval", "keepalives_count",
      "tcp_user_timeout", "dbname",          "application_name",    nullptr};
  const char* values[] = {"5",    "10", "5", "3", "30000", uri.c_str(), application_name.c_str(),
                          nullptr};
  PGconn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    std::string msg = conn ? PQerrorMessage(conn) : "out of memory";
    const std::string where = Where(conn, uri);
    PQfinish(conn);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return absl::UnavailableError(absl::StrCat("cannot connect to ", where, ": ", msg));
  }
  std::unique_ptr<PgConnection> c(new PgConnection(conn, Where(conn, uri)));
  // Notices (e.g. "relation already exists, skipping") are not errors; keep them off stderr.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return c;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

absl::Status PgConnection::EnsureConnected() {
  if (PQstatus(conn_) == CONNECTION_OK) return absl::OkStatus();
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn_);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return absl::UnavailableError(absl::StrCat("cannot reconnect to ", where_, ": ", msg));
  }
  ++session_;
  return absl::OkStatus();
}

absl::Status PgConnection::Error(const std::string& what, const pg_result* res) const {
  std::string msg = res ? PQresultErrorMessage(res) : "";
  if (msg.empty()) msg = PQerrorMessage(conn_);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  const char* sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  if (sqlstate != nullptr && std::strcmp(sqlstate, kFenceSqlState) == 0) {
    absl::Status fenced = absl::FailedPreconditionError(
        absl::StrCat("fenced: ", msg, "; this trainctld no longer leads and writes nothing"));
    fenced.SetPayload(kFencedPayload, absl::Cord(""));
    return fenced;
  }
  absl::StatusCode code = CodeOf(sqlstate);
  if (PQstatus(conn_) != CONNECTION_OK) code = absl::StatusCode::kUnavailable;
  if (code == absl::StatusCode::kUnavailable) {
    return absl::UnavailableError(absl::StrCat("lost the connection to ", where_, " (", what,
                                               "): ", msg, "; trainctld retries"));
  }
  return absl::Status(code, absl::StrCat(what, " in ", where_, ": ", msg));
}

absl::Status PgConnection::StartPipeline() {
  if (PQenterPipelineMode(conn_) != 1) return Error("entering pipeline mode", nullptr);
  pipelined_ = true;
  pending_ = 0;
  pipeline_error_ = absl::OkStatus();
  return absl::OkStatus();
}

void PgConnection::Sent() {
  ++pending_;
  // Each result is a few dozen bytes: a few hundred pending fit any socket buffer.
  if (pending_ >= 256) Drain();
}

void PgConnection::Drain() {
  if (PQpipelineSync(conn_) != 1) {
    if (pipeline_error_.ok()) pipeline_error_ = Error("sending a pipeline sync", nullptr);
    pending_ = 0;
    return;
  }
  // One result (then a null) per statement sent, then the sync's own.
  for (int i = 0; i <= pending_; ++i) {
    PGresult* res = PQgetResult(conn_);
    if (res == nullptr) {
      if (pipeline_error_.ok()) pipeline_error_ = Error("reading pipelined results", nullptr);
      break;
    }
    const ExecStatusType st = PQresultStatus(res);
    const bool sync = st == PGRES_PIPELINE_SYNC;
    if (st == PGRES_FATAL_ERROR && pipeline_error_.ok()) {
      pipeline_error_ = Error("running a statement", res);
    }
    PQclear(res);
    if (sync) break;
    PQclear(PQgetResult(conn_));  // the null that ends the statement's results
  }
  pending_ = 0;
}

absl::Status PgConnection::FinishPipeline() {
  Drain();
  pipelined_ = false;
  if (PQstatus(conn_) == CONNECTION_OK && PQexitPipelineMode(conn_) != 1 && pipeline_error_.ok()) {
    pipeline_error_ = Error("leaving pipeline mode", nullptr);
  }
  absl::Status s = pipeline_error_;
  pipeline_error_ = absl::OkStatus();
  return s;
}

void PgConnection::ForgetPrepared() {
  if (PQstatus(conn_) == CONNECTION_OK) Exec("DEALLOCATE ALL").IgnoreError();
  ++session_;
}

void PgConnection::RollBackOpen() {
  if (PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    Exec("ROLLBACK").IgnoreError();
  }
}

absl::Status PgConnection::CheckTables(const std::vector<std::string>& tables,
                                       const std::string& what) {
  TC_ASSIGN_OR_RETURN(
      std::optional<std::string> found,
      QueryValue(absl::StrCat("SELECT count(to_regclass(t))::text FROM unnest(ARRAY['",
                              absl::StrJoin(tables, "', '"), "']) AS t")));
  if (found != std::to_string(tables.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        where(), " has no ", what, ": open it with the store first, which migrates it"));
  }
  return absl::OkStatus();
}

absl::Status PgConnection::Exec(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  const ExecStatusType st = PQresultStatus(res);
  absl::Status s = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK
                       ? absl::OkStatus()
                       : Error(absl::StrCat("running ", sql.substr(0, 40)), res);
  PQclear(res);
  return s;
}

absl::StatusOr<std::optional<std::string>> PgConnection::QueryValue(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    absl::Status s = Error(absl::StrCat("running ", sql.substr(0, 40)), res);
    PQclear(res);
    return s;
  }
  std::optional<std::string> value;
  if (PQntuples(res) > 0 && PQnfields(res) > 0 && !PQgetisnull(res, 0, 0)) {
    value = std::string(PQgetvalue(res, 0, 0), static_cast<size_t>(PQgetlength(res, 0, 0)));
  }
  PQclear(res);
  return value;
}

PgStatement::PgStatement(PgConnection* conn, std::string name, const char* sql)
    : conn_(conn), name_(std::move(name)), sql_(ToPgParameters(sql)) {}

PgStatement::~PgStatement() { Reset(); }

void PgStatement::Reset() {
  PQclear(result_);
  result_ = nullptr;
  row_ = -1;
}

absl::Status PgStatement::Bind(std::initializer_list<Value> values) {
  Reset();
  values_.clear();
  nulls_.clear();
  formats_.clear();
  const bool typed = types_.empty();  // the first bind types the parameters
  for (const Value& v : values) {
    bool null = false;
    int format = 0;
    Oid type = 0;
    std::string text;
    if (std::holds_alternative<Null>(v)) {
      null = true;
    } else if (const int64_t* n = std::get_if<int64_t>(&v)) {
      text = absl::StrCat(*n);
      type = kInt8Oid;
    } else if (const double* d = std::get_if<double>(&v)) {
      text = absl::StrFormat("%.17g", *d);
      type = kFloat8Oid;
    } else if (const std::string* s = std::get_if<std::string>(&v)) {
      text = *s;
      type = kTextOid;
    } else {
      text = std::get<Blob>(v).bytes;
      format = 1;  // bytea's binary form is its bytes
      type = kByteaOid;
    }
    values_.push_back(std::move(text));
    nulls_.push_back(null);
    formats_.push_back(format);
    if (typed) types_.push_back(type);
  }
  // libpq's arrays, once values_ holds every value (its strings no longer move).
  pointers_.resize(values_.size());
  lengths_.resize(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) {
    pointers_[i] = nulls_[i] ? nullptr : values_[i].data();
    lengths_[i] = static_cast<int>(values_[i].size());
  }
  return absl::OkStatus();
}

absl::Status PgStatement::Execute() {
  Reset();
  if (prepared_session_ != conn_->session()) {
    PGresult* res = PQprepare(conn_->raw(), name_.c_str(), sql_.c_str(),
                              static_cast<int>(types_.size()), types_.data());
    const bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    absl::Status s = ok ? absl::OkStatus() : conn_->Error("preparing a statement", res);
    PQclear(res);
    if (!ok) return s;
    prepared_session_ = conn_->session();
  }
  result_ = PQexecPrepared(conn_->raw(), name_.c_str(), static_cast<int>(pointers_.size()),
                           pointers_.data(), lengths_.data(), formats_.data(), /*resultFormat=*/1);
  const ExecStatusType st = PQresultStatus(result_);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    absl::Status s = conn_->Error("running a statement", result_);
    Reset();
    return s;
  }
  row_ = -1;
  return absl::OkStatus();
}

absl::Status PgStatement::Run(std::initializer_list<Value> values) {
  absl::Status s = Bind(values);
  if (s.ok()) s = conn_->pipelined() ? Send() : Execute();
  Reset();
  return s;
}

absl::Status PgStatement::Send() {
  PGconn* conn = conn_->raw();
  if (prepared_session_ != conn_->session()) {
    if (PQsendPrepare(conn, name_.c_str(), sql_.c_str(), static_cast<int>(types_.size()),
                      types_.data()) != 1) {
      return conn_->Error("sending a statement", nullptr);
    }
    conn_->Sent();
    prepared_session_ = conn_->session();
  }
  if (PQsendQueryPrepared(conn, name_.c_str(), static_cast<int>(pointers_.size()), pointers_.data(),
                          lengths_.data(), formats_.data(),
                          /*resultFormat=*/1) != 1) {
    return conn_->Error("sending a statement", nullptr);
  }
  conn_->Sent();
  return absl::OkStatus();
}

absl::StatusOr<bool> PgStatement::Step() {
  if (result_ == nullptr) {
    absl::Status s = Execute();
    if (!s.ok()) return s;
  }
  if (row_ + 1 >= PQntuples(result_)) {
    row_ = PQntuples(result_);
    return false;
  }
  ++row_;
  return true;
}

bool PgStatement::IsNull(int col) const { return PQgetisnull(result_, row_, col) != 0; }

int64_t PgStatement::Int(int col) const {
  if (IsNull(col)) return 0;
  const char* p = PQgetvalue(result_, row_, col);
  switch (PQftype(result_, col)) {
    case kInt8Oid:
      return static_cast<int64_t>(BigEndian(p, 8));
    case kInt4Oid:
      return static_cast<int32_t>(BigEndian(p, 4));
    case kInt2Oid:
      return static_cast<int16_t>(BigEndian(p, 2));
    case kBoolOid:
      return p[0] != 0;
    default:
      return static_cast<int64_t>(Double(col));
  }
}

double PgStatement::Double(int col) const {
  if (IsNull(col)) return 0;
  const char* p = PQgetvalue(result_, row_, col);
  switch (PQftype(result_, col)) {
    case kFloat8Oid: {
      const uint64_t bits = BigEndian(p, 8);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
    case kFloat4Oid: {
      const uint32_t bits = static_cast<uint32_t>(BigEndian(p, 4));
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case kInt8Oid:
    case kInt4Oid:
    case kInt2Oid:
    case kBoolOid:
      return static_cast<double>(Int(col));
    default:
      return 0;
  }
}

std::string PgStatement::Text(int col) const {
  if (IsNull(col)) return std::string();
  return std::string(PQgetvalue(result_, row_, col),
                     static_cast<size_t>(PQgetlength(result_, row_, col)));
}

absl::StatusOr<PgStatement*> PgStatementCache::Get(const char* sql) {
  std::unique_ptr<PgStatement>& st = cached_[sql];
  if (st == nullptr) {
    st = std::make_unique<PgStatement>(conn_, absl::StrCat("tc_", cached_.size()), sql);
  }
  return st.get();
}

void PgStatementCache::ResetAll() {
  for (auto& [sql, st] : cached_) st->Reset();
}

}  // namespace trainctl::storage
