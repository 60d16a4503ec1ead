// What the LogStore tests (tests/storage/log_store_test.cc, file_log_store_test.cc) share: the
// backend under test (FileLogStore in a temporary directory, or PgLogStore on the test
// PostgreSQL server when TestStore is PostgreSQL: tests/storage/test_store.h), and pieces.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "storage/file_log_store.h"
#include "storage/log_store.h"
#include "storage/pg_log_store.h"
#include "storage/store.h"
#include "tests/storage/temp_dir.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage::log_testing {

// The backend of this run: a FileLogStore in logs/ of a temporary directory, or a PgLogStore on
// a fresh database that the store migrated.
struct TestLogs {
  TestStore db;
  TempDir dir;
  std::unique_ptr<Store> main;

  std::string path() const { return dir.path + "/logs"; }

  absl::StatusOr<std::unique_ptr<LogStore>> TryOpen(
      size_t max_cached_runs = FileLogStore::kDefaultMaxCachedRuns) {
    if (db.postgres()) {
      if (main == nullptr) main = db.Open();
      auto opened = PgLogStore::Open(db.location());
      if (!opened.ok()) return opened.status();
      return std::unique_ptr<LogStore>(*std::move(opened));
    }
    auto opened = FileLogStore::Open(path(), max_cached_runs);
    if (!opened.ok()) return opened.status();
    return std::unique_ptr<LogStore>(*std::move(opened));
  }

  std::unique_ptr<LogStore> Open(size_t max_cached_runs = FileLogStore::kDefaultMaxCachedRuns) {
    absl::StatusOr<std::unique_ptr<LogStore>> store = TryOpen(max_cached_runs);
    INFO(store.status().ToString());
    REQUIRE(store.ok());
    return *std::move(store);
  }
};

inline std::string JobOf(const std::string& run_id) { return run_id.substr(0, run_id.find('/')); }

// Written bytes `data` at `offset`, read at `time_ms`, the file then ending after them.
inline v1::LogPiece Piece(const std::string& run_id, int64_t offset, const std::string& data,
                          int64_t time_ms = 1'000) {
  v1::LogPiece p;
  p.set_run_id(run_id);
  p.set_offset(offset);
  p.set_next_offset(offset + static_cast<int64_t>(data.size()));
  p.set_data(data);
  p.set_time_ms(time_ms);
  p.set_file_size(p.next_offset());
  return p;
}

// The range [offset, next_offset) dropped, with `marker` in its place.
inline v1::LogPiece GapPiece(const std::string& run_id, int64_t offset, int64_t next_offset,
                             const std::string& marker, int64_t time_ms = 1'000) {
  v1::LogPiece p = Piece(run_id, offset, marker, time_ms);
  p.set_next_offset(next_offset);
  p.set_gap(true);
  p.set_file_size(next_offset);
  return p;
}

inline v1::LogPiece Probe(const std::string& run_id, int64_t offset, int64_t file_size) {
  v1::LogPiece p;
  p.set_run_id(run_id);
  p.set_offset(offset);
  p.set_next_offset(offset);
  p.set_file_size(file_size);
  return p;
}

inline v1::LogPiece Final(v1::LogPiece p) {
  p.set_final(true);
  return p;
}

// Appends `piece` from `node`; REQUIREs OK.
inline LogRunState Take(LogStore& store, const v1::LogPiece& piece,
                        const std::string& node = "node-a") {
  absl::StatusOr<LogRunState> state = store.Append(node, JobOf(piece.run_id()), piece);
  INFO(state.status().ToString());
  REQUIRE(state.ok());
  return *state;
}

inline LogSlice ReadOk(LogStore& store, const std::string& run_id, int64_t offset,
                       int64_t max_bytes = 1 << 20) {
  absl::StatusOr<LogSlice> slice = store.Read(run_id, offset, max_bytes);
  INFO(slice.status().ToString());
  REQUIRE(slice.ok());
  return *std::move(slice);
}

// Everything a reader gets from `offset` to the copy's end, `max_bytes` at a time (gaps' markers
// in their place).
inline std::string ReadAll(LogStore& store, const std::string& run_id, int64_t offset = 0,
                           int64_t max_bytes = 1 << 20) {
  std::string out;
  for (int reads = 0; reads < 100'000; ++reads) {
    LogSlice slice = ReadOk(store, run_id, offset, max_bytes);
    if (slice.next_offset == offset) break;
    REQUIRE(slice.next_offset > offset);
    out += slice.data;
    offset = slice.next_offset;
  }
  return out;
}

inline std::optional<LogRunState> StateOf(LogStore& store, const std::string& run_id) {
  absl::StatusOr<std::optional<LogRunState>> state = store.State(run_id);
  INFO(state.status().ToString());
  REQUIRE(state.ok());
  return *state;
}

inline bool Same(const LogRunState& a, const LogRunState& b) {
  return a.job_id == b.job_id && a.node == b.node && a.stored == b.stored &&
         a.file_size == b.file_size && a.final == b.final && a.last_ms == b.last_ms &&
         a.bytes == b.bytes;
}

}  // namespace trainctl::storage::log_testing
