// Image pull reports in the core (ImagePulls): the launching replica's message while its image is
// pulled and once it is ready, one ImagePulling and one ImagePulled event per run (never one per
// progress report), rows written at most every 5 s, launchTimeout counted from the latest report,
// and reports of unknown, misplaced or running runs ignored.
#include "scheduler/image_pulls.h"

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "common/byte_size.h"
#include "common/time_util.h"
#include "scheduler/core.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace image_pulls_test {

using namespace testing;

constexpr char kImage[] = "127.0.0.1:5000/x:1";
constexpr char kDigest[] =
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

v1::ImagePull Pull(const std::string& run_id, int64_t bytes, bool done = false,
                   bool cached = false) {
  v1::ImagePull p;
  p.set_run_id(run_id);
  p.set_image(kImage);
  p.set_bytes_done(bytes);
  p.set_done(done);
  if (done) p.set_digest(kDigest);
  p.set_cached(cached);
  return p;
}

int Count(const Effects& fx, const std::string& type) {
  int n = 0;
  for (const Event& e : fx.events) n += e.type == type ? 1 : 0;
  return n;
}

TEST_CASE("image pulls: the replica's line and one event at the start and one at the end") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(0), &id);
  const std::string node = f.NodeOf(launches[0]);
  const std::string run = launches[0].run_id();

  Effects start;
  f.core.ImagePull(node, Pull(run, 0), FromMs(f.now += 1'000), &start);
  CHECK(f.Job(id).replicas(0).message() == "pulling image 127.0.0.1:5000/x:1");
  CHECK(HasEvent(start, "ImagePulling", "pulling image 127.0.0.1:5000/x:1 on " + node));
  CHECK(start.jobs.count(id) == 1);

  // Progress 1 s later: memory only, no event.
  Effects progress;
  f.core.ImagePull(node, Pull(run, 12'345'678), FromMs(f.now += 1'000), &progress);
  CHECK(f.Job(id).replicas(0).message() == "pulling image 127.0.0.1:5000/x:1 (12.3 MB so far)");
  CHECK(progress.events.empty());
  CHECK(progress.jobs.empty());
  // 5 s after the last write the row is written again, still without an event.
  Effects later;
  f.core.ImagePull(node, Pull(run, 2'500'000'000), FromMs(f.now += 5'000), &later);
  CHECK(f.Job(id).replicas(0).message() == "pulling image 127.0.0.1:5000/x:1 (2.5 GB so far)");
  CHECK(later.events.empty());
  CHECK(later.jobs.count(id) == 1);

  Effects done;
  f.core.ImagePull(node, Pull(run, 2'600'000'000, /*done=*/true), FromMs(f.now += 1'000), &done);
  CHECK(f.Job(id).replicas(0).message() == "image 127.0.0.1:5000/x:1 ready (sha256:0123456789ab…)");
  CHECK(Count(done, "ImagePulled") == 1);
  CHECK(HasEvent(done, "ImagePulled",
                 absl::StrCat("image 127.0.0.1:5000/x:1 pulled on ", node, ": ", kDigest,
                              ", 2.6 GB (2600000000 bytes)")));
  CHECK(done.jobs.count(id) == 1);

  // A repeated report of the end changes nothing.
  Effects repeated;
  f.core.ImagePull(node, Pull(run, 2'600'000'000, /*done=*/true), FromMs(f.now += 1'000),
                   &repeated);
  CHECK(repeated.events.empty());

  // Once it runs, reports are ignored: its line is its own.
  f.StartAll(launches);
  Effects running;
  f.core.ImagePull(node, Pull(run, 1), FromMs(f.now += 1'000), &running);
  CHECK(running.events.empty());
  CHECK(absl::StartsWith(f.Job(id).replicas(0).message(), "running on"));
}

TEST_CASE("image pulls: a cached image is ready at once, strangers' reports are ignored") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(0), &id);
  const std::string node = f.NodeOf(launches[0]);
  const std::string other = node == "node-a" ? "node-b" : "node-a";
  const std::string run = launches[0].run_id();

  Effects unknown;
  f.core.ImagePull(node, Pull("j-nope:1:chief-0:0", 10), FromMs(f.now += 1'000), &unknown);
  CHECK(unknown.events.empty());
  CHECK(unknown.jobs.empty());

  // From a node the run is not on: counted as an ignored report, nothing else.
  Effects misplaced;
  f.core.ImagePull(other, Pull(run, 10), FromMs(f.now += 1'000), &misplaced);
  CHECK(Count(misplaced, "ImagePulling") == 0);
  CHECK(HasEvent(misplaced, "NodeReportIgnored"));
  CHECK(absl::StartsWith(f.Job(id).replicas(0).message(), "launching on"));

  Effects cached;
  f.core.ImagePull(node, Pull(run, 700'000'000, /*done=*/true, /*cached=*/true),
                   FromMs(f.now += 1'000), &cached);
  CHECK(f.Job(id).replicas(0).message() ==
        "image 127.0.0.1:5000/x:1 ready (sha256:0123456789ab…, cached)");
  CHECK(Count(cached, "ImagePulling") == 0);
  CHECK(HasEvent(cached, "ImagePulled",
                 absl::StrCat("image 127.0.0.1:5000/x:1 was on ", node, " already (", kDigest,
                              ", 700.0 MB)")));
}

TEST_CASE("image pulls: launchTimeout counts from the latest report") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(0), &id);  // launchTimeout: 2m by default
  const std::string node = f.NodeOf(launches[0]);
  const int64_t sent = f.now;

  Effects fx;
  f.core.ImagePull(node, Pull(launches[0].run_id(), 1'000), FromMs(sent + 100'000), &fx);
  Effects tick;
  f.core.Tick(FromMs(sent + 150'000), &tick);
  CHECK(f.Job(id).replicas(0).state() == v1::REPLICA_STATE_STARTING);
  CHECK_FALSE(HasEvent(tick, "LaunchTimedOut"));
  // No report for 2m: the launch timed out after all.
  f.core.Tick(FromMs(sent + 100'000 + 120'000), &tick);
  CHECK(HasEvent(tick, "LaunchTimedOut"));
}

TEST_CASE("image pulls: sizes and digests as the replica's line shows them") {
  CHECK(FormatDecimalBytes(0) == "0 B");
  CHECK(FormatDecimalBytes(999) == "999 B");
  CHECK(FormatDecimalBytes(1'000) == "1.0 kB");
  CHECK(FormatDecimalBytes(12'345'678) == "12.3 MB");
  CHECK(FormatDecimalBytes(999'960) == "1.0 MB");
  CHECK(FormatDecimalBytes(1'500'000'000'000) == "1.5 TB");
  CHECK(ShortDigest(kDigest) == "sha256:0123456789ab…");
  CHECK(ShortDigest("sha256:abc") == "sha256:abc");
  CHECK(ShortDigest("") == "");
}

}  // namespace image_pulls_test
}  // namespace trainctl::sched
