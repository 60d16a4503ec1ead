// The reconcile loop's Outbox: what turns hand it is delivered in order, on its own thread, and
// Stop delivers everything handed over before it returns.
#include "server/outbox.h"

#include <catch2/catch.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "server/agent_registry.h"

namespace trainctl::server {
namespace {

TEST_CASE("the outbox runs each turn's callbacks in the order the turns handed them over") {
  AgentRegistry registry;
  Outbox outbox(&registry);
  outbox.Start();
  std::mutex mu;
  std::vector<int> ran;
  std::thread::id loop = std::this_thread::get_id();
  bool elsewhere = true;
  absl::Notification hold;
  // The first turn's callback waits, so the later turns queue up behind it.
  Outbox::Batch first;
  first.after_commit.push_back([&] {
    hold.WaitForNotification();
    std::lock_guard<std::mutex> lock(mu);
    ran.push_back(0);
    elsewhere = elsewhere && std::this_thread::get_id() != loop;
  });
  outbox.Deliver(std::move(first));
  for (int turn = 1; turn <= 3; ++turn) {
    Outbox::Batch b;
    // A command for a node no agent serves is dropped, and the callbacks still run.
    b.commands.push_back({"node-gone", v1::SchedulerMessage()});
    for (int i = 0; i < 2; ++i) {
      b.after_commit.push_back([&, n = turn * 10 + i] {
        std::lock_guard<std::mutex> lock(mu);
        ran.push_back(n);
      });
    }
    outbox.Deliver(std::move(b));
  }
  outbox.Deliver({});  // nothing to deliver
  hold.Notify();
  outbox.Stop();  // returns once everything handed over ran
  CHECK(ran == std::vector<int>{0, 10, 11, 20, 21, 30, 31});
  CHECK(elsewhere);
}

}  // namespace
}  // namespace trainctl::server
