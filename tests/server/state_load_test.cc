// LoadState, what trainctld's start and the reconcile loop's rebuild read: after a burst of jobs
// that ended at once, within the finished-job cache, it loads only the last ended ones it may
// keep in memory (--finished-job-cache-jobs), and the others stay readable from the store.
#include "server/state_load.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "model/model_proto.h"
#include "storage/sqlite_store.h"

namespace trainctl::server {
namespace {

v1::JobSpec QuickJob() {
  v1::JobSpec spec;
  spec.set_display_name("quick");
  v1::WorkerPool* pool = spec.add_worker_pools();
  pool->set_name("main");
  pool->set_replica_count(1);
  pool->add_command("/bin/false");
  return spec;
}

TEST_CASE("a load after a burst of ended jobs holds no more of them than the count kept") {
  char tmpl[] = "/tmp/trainctl-state-load-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto store = storage::SqliteStore::Open(dir + "/trainctl.db");
  REQUIRE(store.ok());
  sched::CoreOptions options;
  options.id_seed = 3;
  options.checkpoint_root = dir + "/checkpoints";
  constexpr int64_t kNow = 1'800'000'000'000;
  constexpr int kBurst = 500;
  std::vector<std::string> ended;
  std::string live;
  {
    // The jobs, as the loop commits them: one still queued, then a burst that ended within a
    // few seconds, each a millisecond after the one before.
    sched::Core core(options);
    sched::Effects fx;
    live = (*core.SubmitJob(QuickJob(), sched::FromMs(kNow), &fx))->id;
    for (int i = 0; i < kBurst; ++i) {
      ended.push_back((*core.SubmitJob(QuickJob(), sched::FromMs(kNow + i), &fx))->id);
      REQUIRE(core.CancelJob(ended.back(), sched::FromMs(kNow + i), &fx).ok());
    }
    storage::Batch b;
    for (const auto& [id, job] : core.jobs()) b.jobs.push_back(sched::ToProto(job));
    REQUIRE((*store)->Commit(b).ok());
  }
  const int64_t since = kNow - 10 * 60'000;  // every one ended within the cache time

  absl::StatusOr<LoadedState> state = LoadState(**store, options, since, /*max_ended=*/20);
  REQUIRE(state.ok());
  CHECK(state->core->jobs().size() == 21);
  CHECK(state->core->FindJob(live) != nullptr);
  // The 20 that ended last; the others only in the store.
  for (int i = 0; i < kBurst; ++i) {
    INFO(ended[i]);
    CHECK((state->core->FindJob(ended[i]) != nullptr) == (i >= kBurst - 20));
  }
  absl::StatusOr<std::optional<v1::Job>> first = (*store)->FindJob(ended[0]);
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK((*first)->state() == v1::JOB_STATE_CANCELLED);
  // Without a count, every one within the cache time.
  CHECK(LoadState(**store, options, since)->core->jobs().size() == kBurst + 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainctl::server
