// A node's port pool (scheduler/port_pool.h): the cursor's order, wrap-around, exhaustion, a
// released port reused last, ports kept by a restarting replica, and a restore after a restart.
#include "scheduler/port_pool.h"

#include <catch2/catch.hpp>
#include <optional>
#include <set>
#include <vector>

namespace trainctl::sched {
namespace {

// The smallest pool --port-range allows: 20000..20063.
PortRange Small() { return PortRange{20000, 20063}; }

// Allocates `n` ports; REQUIREs each allocation to succeed.
std::vector<int32_t> Take(PortPool* pool, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    std::optional<int32_t> port = pool->Allocate();
    REQUIRE(port.has_value());
    out.push_back(*port);
  }
  return out;
}

TEST_CASE("PortPool: the cursor hands out ports in order from the start of the range") {
  PortPool pool(Small());
  CHECK(pool.free() == 64);
  CHECK(Take(&pool, 3) == std::vector<int32_t>{20000, 20001, 20002});
  CHECK(pool.used() == 3);
  CHECK(pool.free() == 61);
  CHECK(pool.cursor() == 20003);
  CHECK(pool.InUse(20001));
  CHECK_FALSE(pool.InUse(20003));
}

TEST_CASE("PortPool: a released port is reused last, after every other free port") {
  PortPool pool(Small());
  Take(&pool, 3);                                        // 20000..20002
  CHECK(pool.Release(20001));                            // its process may still hold it
  CHECK(Take(&pool, 1) == std::vector<int32_t>{20003});  // not 20001: the cursor goes on
  // 60 more ports reach the end of the range; then the cursor wraps and finds 20001, the only
  // free one.
  std::vector<int32_t> rest = Take(&pool, 60);
  CHECK(rest.front() == 20004);
  CHECK(rest.back() == 20063);
  CHECK(Take(&pool, 1) == std::vector<int32_t>{20001});
  CHECK(pool.free() == 0);
}

TEST_CASE("PortPool: allocation wraps around the end of the range, skipping ports in use") {
  PortPool pool(Small());
  std::vector<int32_t> all = Take(&pool, 64);
  CHECK(all.back() == 20063);
  CHECK(pool.cursor() == 20000);  // wrapped
  for (int32_t port : {20062, 20000, 20002}) CHECK(pool.Release(port));
  // From the cursor (20000): 20000, then 20001 is in use, so 20002; then past the end, 20062.
  CHECK(Take(&pool, 3) == std::vector<int32_t>{20000, 20002, 20062});
}

TEST_CASE("PortPool: an exhausted pool allocates nothing until a port is released") {
  PortPool pool(Small());
  std::vector<int32_t> all = Take(&pool, 64);
  CHECK(std::set<int32_t>(all.begin(), all.end()).size() == 64);  // never the same port twice
  CHECK_FALSE(pool.Allocate().has_value());
  CHECK(pool.free() == 0);
  CHECK(pool.Release(20030));
  CHECK(pool.Allocate() == std::optional<int32_t>(20030));
  CHECK_FALSE(pool.Allocate().has_value());
}

TEST_CASE("PortPool: Reserve takes a free port back and refuses one in use or out of range") {
  PortPool pool(Small());
  Take(&pool, 2);  // 20000, 20001
  CHECK(pool.Release(20001));
  CHECK(pool.Reserve(20001));        // a replica restarting in place takes its port back
  CHECK(pool.cursor() == 20002);     // the cursor does not move
  CHECK_FALSE(pool.Reserve(20001));  // in use
  CHECK_FALSE(pool.Reserve(19999));  // outside the range
  CHECK_FALSE(pool.Reserve(20064));
  CHECK(pool.Reserve(20040));
  CHECK(Take(&pool, 1) == std::vector<int32_t>{20002});
  CHECK(pool.used() == 4);
}

TEST_CASE("PortPool: Release frees only ports in use") {
  PortPool pool(Small());
  Take(&pool, 1);
  CHECK_FALSE(pool.Release(20005));  // never allocated
  CHECK_FALSE(pool.Release(80));     // out of range
  CHECK(pool.Release(20000));
  CHECK_FALSE(pool.Release(20000));  // twice
  CHECK(pool.used() == 0);
}

TEST_CASE("PortPool: restored ports are in use, and allocation goes on after the highest") {
  struct Row {
    const char* what;
    std::vector<int32_t> restored;  // in the order the jobs come back
    int32_t next;                   // the next port allocated
  };
  const Row rows[] = {
      {"nothing restored: from the start", {}, 20000},
      {"after the highest, whatever the order", {20010, 20003, 20007}, 20011},
      {"the highest is the last port: wraps to the first free", {20063, 20000, 20001}, 20002},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    PortPool pool(Small());
    for (int32_t port : row.restored) CHECK(pool.Restore(port));
    for (int32_t port : row.restored) CHECK(pool.InUse(port));
    CHECK(pool.used() == static_cast<int32_t>(row.restored.size()));
    CHECK(pool.Allocate() == std::optional<int32_t>(row.next));
  }
  PortPool pool(Small());
  CHECK(pool.Restore(20005));
  CHECK_FALSE(pool.Restore(20005));  // already in use
  CHECK_FALSE(pool.Restore(30000));  // given under another --port-range: not tracked
  CHECK(pool.used() == 1);
}

TEST_CASE("ValidatePortRange: 1024..65535, the first below the last, at least 64 ports") {
  struct Row {
    PortRange range;
    const char* error;  // nullptr: valid
  };
  const Row rows[] = {
      {PortRange{}, nullptr},  // the default, 20000-32767
      {PortRange{1024, 1087}, nullptr},
      {PortRange{65472, 65535}, nullptr},
      {PortRange{1023, 2000}, "ports must be within 1024..65535"},
      {PortRange{60000, 65536}, "ports must be within 1024..65535"},
      {PortRange{30000, 20000}, "the first port must be below the last"},
      {PortRange{30000, 30000}, "the first port must be below the last"},
      {PortRange{30000, 30062}, "the range must hold at least 64 ports, not 63"},
  };
  for (const Row& row : rows) {
    INFO(row.range.lo << "-" << row.range.hi);
    absl::Status s = ValidatePortRange(row.range);
    if (row.error == nullptr) {
      CHECK(s.ok());
    } else {
      CHECK(absl::IsInvalidArgument(s));
      CHECK(s.message() == row.error);
    }
  }
  CHECK(PortRange{}.size() == 12768);
}

}  // namespace
}  // namespace trainctl::sched
