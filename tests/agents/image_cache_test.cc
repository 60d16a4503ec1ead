// ImageCache (agents/image_cache.h) against a real registry (docker-registry on 127.0.0.1) and
// tiny busybox images buildah builds and pushes (oci_registry_fixture.h): a pull and its config
// and root, a second Acquire that needs no registry, concurrent Acquires sharing one pull, the
// errors the scheduler tells apart (missing image, registry down or hanging, unpack failure,
// credentials), eviction with pins and shared layers, and what a crash left behind; an unpacked
// root serves as the lowerdir of two overlays at once. skopeo is a wrapper script that logs each
// run before it execs the real one, so that the tests can count pulls and check command lines.
// Skipped with a warning when not root or a tool is missing.
#include "agents/image_cache.h"

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "agents/spawn.h"
#include "agents/tool_run.h"
#include "tests/agents/oci_registry_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace image_cache_test {

using testing::ImageBuilder;
using testing::ImageSpec;
using testing::ReadFile;
using testing::TempDir;
using testing::TestRegistry;

#define TC_SKIP_WITHOUT_OCI()                                        \
  do {                                                               \
    const std::string why = testing::OciTestsUnavailable();          \
    if (!why.empty()) {                                              \
      WARN("skipped: " << why                                        \
                       << " (needs root, docker-registry, buildah, " \
                          "busybox-static, skopeo, umoci)");         \
      return;                                                        \
    }                                                                \
  } while (0)

// A skopeo that appends "PID ARGS" to <dir>/skopeo.log, then execs the real one.
std::string SkopeoWrapper(const std::string& dir) {
  absl::StatusOr<std::string> real =
      ResolveCommand("skopeo", SearchPathOf(CurrentEnvironment()), "/");
  REQUIRE(real.ok());
  const std::string path = dir + "/skopeo";
  std::ofstream(path) << "#!/bin/sh\necho \"$$ $*\" >> '" << dir << "/skopeo.log'\nexec '" << *real
                      << "' \"$@\"\n";
  chmod(path.c_str(), 0755);
  return path;
}

std::vector<std::string> LogLines(const std::string& dir) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(ReadFile(dir + "/skopeo.log"), '\n')) {
    if (!line.empty()) lines.emplace_back(line);
  }
  return lines;
}

int CountRuns(const std::string& dir, absl::string_view command) {
  int n = 0;
  for (const std::string& line : LogLines(dir)) {
    if (absl::StrContains(line, absl::StrCat(" ", command, " "))) ++n;
  }
  return n;
}

ImageCache::Options Options(const std::string& dir, const std::string& registry) {
  ImageCache::Options options;
  options.dir = dir + "/cache";
  options.insecure_registries = {registry};
  options.pull_timeout = absl::Seconds(120);
  options.skopeo = SkopeoWrapper(dir);
  return options;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

size_t CountEntries(const std::string& dir) {
  std::error_code ec;
  size_t n = 0;
  for (std::filesystem::directory_iterator it(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// A registry under `dir`/registry and a builder under `dir`/buildah.
struct Setup {
  explicit Setup(const std::string& dir, const std::string& htpasswd = "")
      : builder(dir + "/buildah") {
    absl::StatusOr<std::unique_ptr<TestRegistry>> started =
        TestRegistry::Start(dir + "/registry", htpasswd);
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    registry = *std::move(started);
  }
  std::string Push(const ImageSpec& spec, const std::string& name,
                   const std::string& credentials = "") {
    absl::StatusOr<std::string> digest =
        builder.BuildAndPush(spec, registry->host() + "/" + name, credentials);
    INFO(digest.status().ToString());
    REQUIRE(digest.ok());
    return *digest;
  }
  ImageBuilder builder;
  std::unique_ptr<TestRegistry> registry;
};

ImageSpec BusySpec(const std::string& id) {
  ImageSpec spec;
  spec.files["/etc/os-release"] = absl::StrCat("ID=", id, "\n");
  return spec;
}

// Two replicas' overlays on `rootfs` (lowerdir): each writes its own upper layer, the root stays
// as it was, and busybox runs in them (chroot).
void CheckOverlays(const std::string& dir, const std::string& rootfs) {
  const std::string original = ReadFile(rootfs + "/etc/os-release");
  std::vector<std::string> merged;
  for (int i = 0; i < 2; ++i) {
    const std::string base = absl::StrCat(dir, "/replica-", i);
    for (const char* sub : {"/upper", "/work", "/merged"}) {
      std::filesystem::create_directories(base + sub);
    }
    const std::string data =
        absl::StrCat("lowerdir=", rootfs, ",upperdir=", base, "/upper,workdir=", base, "/work");
    if (mount("overlay", (base + "/merged").c_str(), "overlay", 0, data.c_str()) != 0) {
      WARN("overlay check skipped: cannot mount an overlay here: " << std::strerror(errno));
      break;
    }
    merged.push_back(base + "/merged");
  }
  if (merged.size() == 2) {
    std::ofstream(merged[0] + "/etc/os-release") << "ID=replica-0\n";
    ToolRequest cat;
    cat.argv = {"chroot", merged[1], "/bin/cat", "/etc/os-release"};
    cat.env = CurrentEnvironment();
    cat.timeout = absl::Seconds(30);
    ToolOutcome outcome = RunTool(cat);
    INFO(outcome.Describe(cat.timeout));
    CHECK(outcome.ok());
    CHECK(outcome.stdout_text == original);
    CHECK(ReadFile(merged[0] + "/etc/os-release") == "ID=replica-0\n");
    CHECK(ReadFile(rootfs + "/etc/os-release") == original);
  }
  for (const std::string& m : merged) CHECK(umount2(m.c_str(), MNT_DETACH) == 0);
}

TEST_CASE("ImageCache pulls and unpacks an image, then serves it without the registry", "[image]") {
  TC_SKIP_WITHOUT_OCI();
  TempDir dir;
  Setup setup(dir.path());
  ImageSpec spec = BusySpec("trainctl-test");
  spec.env = {"FOO=bar"};
  spec.working_dir = "/work";
  spec.entrypoint = {"/bin/sh", "-c"};
  spec.cmd = {"echo hello"};
  spec.user = "1000:1000";
  const std::string host = setup.registry->host();
  const std::string ref = host + "/test/busy:1";
  const std::string pushed = setup.Push(spec, "test/busy:1");
  const ImageCache::Options options = Options(dir.path(), host);
  auto cache = std::make_unique<ImageCache>(options);

  std::vector<PullProgress> seen;
  const absl::Time start = absl::Now();
  absl::StatusOr<Image> image =
      cache->Acquire({ref}, [&](const PullProgress& p) { seen.push_back(p); });
  const absl::Duration took = absl::Now() - start;
  INFO(image.status().ToString());
  REQUIRE(image.ok());
  UNSCOPED_INFO("pull and unpack of the " << image->bytes << "-byte test image took "
                                          << absl::FormatDuration(took));
  CHECK(image->digest == pushed);
  CHECK(image->rootfs == options.dir + "/rootfs/" + pushed.substr(7));
  CHECK(absl::StrContains(ReadFile(image->rootfs + "/etc/os-release"), "ID=trainctl-test"));
  CHECK(std::filesystem::is_symlink(image->rootfs + "/bin/sh"));
  CHECK(std::find(image->env.begin(), image->env.end(), "FOO=bar") != image->env.end());
  CHECK(image->working_dir == "/work");
  CHECK(image->entrypoint == std::vector<std::string>{"/bin/sh", "-c"});
  CHECK(image->cmd == std::vector<std::string>{"echo hello"});
  CHECK(image->user == "1000:1000");
  CHECK(image->bytes > 1000000);  // busybox alone is about 2 MB.
  CHECK(CountRuns(dir.path(), "inspect") == 1);
  CHECK(CountRuns(dir.path(), "copy") == 1);
  // Progress: the download's last report has everything the manifest names.
  REQUIRE(!seen.empty());
  CHECK(seen.front().stage == PullProgress::kResolving);
  const PullProgress* downloaded = nullptr;
  for (const PullProgress& p : seen) {
    if (p.stage == PullProgress::kDownloading) downloaded = &p;
  }
  REQUIRE(downloaded != nullptr);
  CHECK(downloaded->bytes_total > 1000000);
  CHECK(downloaded->bytes_done == downloaded->bytes_total);
  CHECK(downloaded->ref == ref);
  CheckOverlays(dir.path(), image->rootfs);
  std::vector<CachedImage> list = cache->List();
  REQUIRE(list.size() == 1);
  CHECK(list[0].digest == pushed);
  CHECK(list[0].refs == std::vector<std::string>{ref});
  CHECK(list[0].pins == 1);
  cache->Release(pushed);
  CHECK(cache->List()[0].pins == 0);
  CHECK(CountEntries(options.dir + "/tmp") == 0);

  // The registry is gone: a tag or digest the cache has needs no network, kAlways does.
  setup.registry->Stop();
  const size_t runs = LogLines(dir.path()).size();
  absl::StatusOr<Image> again = cache->Acquire({ref});
  REQUIRE(again.ok());
  CHECK(again->digest == pushed);
  absl::StatusOr<Image> by_digest = cache->Acquire({host + "/test/busy@" + pushed});
  REQUIRE(by_digest.ok());
  CHECK(by_digest->rootfs == image->rootfs);
  CHECK(LogLines(dir.path()).size() == runs);
  absl::StatusOr<Image> always = cache->Acquire({ref, ImageRequest::kAlways});
  CHECK(always.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(always.status().message(), host));
  CHECK(absl::StrContains(always.status().message(), "connection refused"));
  absl::StatusOr<Image> uncached = cache->Acquire({host + "/test/other:1"});
  CHECK(uncached.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(uncached.status().message(), host));
  CHECK(cache->List()[0].pins == 2);
  cache->Release(pushed);
  cache->Release(pushed);

  // A new agent finds the image and the tag it was pulled as.
  cache.reset();
  cache = std::make_unique<ImageCache>(options);
  absl::StatusOr<Image> reopened = cache->Acquire({ref});
  REQUIRE(reopened.ok());
  CHECK(reopened->digest == pushed);
  CHECK(reopened->env == image->env);
  cache->Release(pushed);

  // One that died before it saved its state takes the image back, without the tag.
  cache.reset();
  std::filesystem::remove(options.dir + "/state.json");
  cache = std::make_unique<ImageCache>(options);
  list = cache->List();
  REQUIRE(list.size() == 1);
  CHECK(list[0].refs.empty());
  absl::StatusOr<Image> taken_back = cache->Acquire({host + "/test/busy@" + pushed});
  REQUIRE(taken_back.ok());
  CHECK(taken_back->entrypoint == image->entrypoint);
  CHECK(cache->Acquire({ref}).status().code() == absl::StatusCode::kUnavailable);
  CHECK(LogLines(dir.path()).size() == runs + 3);  // kAlways, other:1 and the tag just now.
}

TEST_CASE("ImageCache: concurrent Acquires of an image share one pull", "[image]") {
  TC_SKIP_WITHOUT_OCI();
  TempDir dir;
  Setup setup(dir.path());
  const std::string digest1 = setup.Push(BusySpec("one"), "test/busy:1");
  const std::string digest2 = setup.Push(BusySpec("two"), "test/busy:2");
  const std::string host = setup.registry->host();
  ImageCache cache(Options(dir.path(), host));

  std::vector<absl::StatusOr<Image>> results(4, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { results[i] = cache.Acquire({host + "/test/busy:1"}); });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::StatusOr<Image>& result : results) {
    INFO(result.status().ToString());
    REQUIRE(result.ok());
    CHECK(result->digest == digest1);
  }
  CHECK(CountRuns(dir.path(), "inspect") == 1);
  CHECK(CountRuns(dir.path(), "copy") == 1);
  REQUIRE(cache.List().size() == 1);
  CHECK(cache.List()[0].pins == 4);
  for (int i = 0; i < 4; ++i) cache.Release(digest1);
  CHECK(cache.List()[0].pins == 0);

  // A tag and its digest at once: one copy of the image.
  threads.clear();
  threads.emplace_back([&] { results[0] = cache.Acquire({host + "/test/busy:2"}); });
  threads.emplace_back([&] { results[1] = cache.Acquire({host + "/test/busy@" + digest2}); });
  for (std::thread& t : threads) t.join();
  REQUIRE(results[0].ok());
  REQUIRE(results[1].ok());
  CHECK(results[0]->rootfs == results[1]->rootfs);
  CHECK(CountRuns(dir.path(), "copy") == 2);

  // kAlways with the digest unchanged: resolved again, nothing copied.
  absl::StatusOr<Image> always = cache.Acquire({host + "/test/busy:1", ImageRequest::kAlways});
  REQUIRE(always.ok());
  CHECK(always->digest == digest1);
  CHECK(CountRuns(dir.path(), "inspect") == 3);
  CHECK(CountRuns(dir.path(), "copy") == 2);
}

TEST_CASE("ImageCache keys a Docker image by the registry's digest, not the converted one",
          "[image]") {
  TC_SKIP_WITHOUT_OCI();
  TempDir dir;
  Setup setup(dir.path());
  ImageSpec spec = BusySpec("docker");
  spec.format = "v2s2";
  spec.env = {"FROM=docker"};
  const std::string pushed = setup.Push(spec, "test/docker:1");
  const std::string host = setup.registry->host();
  ImageCache cache(Options(dir.path(), host));
  absl::StatusOr<Image> image = cache.Acquire({host + "/test/docker:1"});
  INFO(image.status().ToString());
  REQUIRE(image.ok());
  CHECK(image->digest == pushed);
  CHECK(absl::StrContains(ReadFile(image->rootfs + "/etc/os-release"), "ID=docker"));
  CHECK(std::find(image->env.begin(), image->env.end(), "FROM=docker") != image->env.end());
  // By that digest, without the registry.
  setup.registry->Stop();
  absl::StatusOr<Image> by_digest = cache.Acquire({host + "/test/docker@" + pushed});
  REQUIRE(by_digest.ok());
  CHECK(by_digest->rootfs == image->rootfs);
}

TEST_CASE("ImageCache: an image the registry does not have is the user's error", "[image]") {
  TC_SKIP_WITHOUT_OCI();
  TempDir dir;
  Setup setup(dir.path());
  const std::string host = setup.registry->host();
  ImageCache cache(Options(dir.path(), host));
  for (const std::string& ref : {host + "/test/busy:nope", host + "/test/nothere:1",
                                 host + "/test/busy@sha256:" + std::string(64, '0')}) {
    absl::StatusOr<Image> image = cache.Acquire({ref});
    INFO(ref << ": " << image.status().ToString());
    CHECK(image.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(image.status().message(), ref));
    CHECK(absl::StrContains(image.status().message(), "manifest unknown"));
  }
  CHECK(cache.Acquire({"not a reference"}).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(cache.Acquire({host + "/Test/Upper:1"}).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(cache.List().empty());
}

TEST_CASE("ImageCache: a registry that is down or hangs is unavailable", "[image]") {
  TC_SKIP_WITHOUT_OCI();
  TempDir dir;
  testing::SilentServer silent;
  REQUIRE(silent.port() != 0);
  const std::string hanging = absl::StrCat("127.0.0.1:", silent.port());
  const std::string refused = absl::StrCat("127.0.0.1:", testing::FreeLoopbackPort());
  ImageCache::Options options = Options(dir.path(), hanging);
  options.insecure_registries.push_back(refused);
  options.pull_timeout = absl::Seconds(2);
  ImageCache cache(options);

  absl::StatusOr<Image> down = cache.Acquire({refused + "/test/busy:1"});
  CHECK(down.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(down.status().message(), refused));

  std::vector<absl::Time> calls;
  const absl::Time start = absl::Now();
  absl::StatusOr<Image> hung = cache.Acquire(
      {hanging + "/test/busy:1"}, [&](const PullProgress&) { calls.push_back(absl::Now()); });
  const absl::Duration took = absl::Now() - start;
  INFO(hung.status().ToString());
  CHECK(hung.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(
      hung.status().message(),
      absl::StrCat("pulling ", hanging, "/test/busy:1 from ", hanging, " timed out after 2s")));
  CHECK(took >= absl::Seconds(2));
  CHECK(took < absl::Seconds(10));
  // Progress came throughout, at least every second.
  REQUIRE(calls.size() >= 3);
  absl::Time last = start;
  for (absl::Time t : calls) {
    CHECK(t - last < absl::Milliseconds(1500));
    last = t;
  }
  // The killed skopeo is gone (reaped, or a zombie of init's if anything).
  const std::vector<std::string> lines = LogLines(dir.path());
  REQUIRE(!lines.empty());
  const pid_t pid = std::stoi(lines.back().substr(0, lines.back().find(' ')));
  const std::string proc_stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  CHECK((proc_stat.empty() || absl::StrContains(proc_stat, ") Z ")));
  CHECK(CountEntries(options.dir + "/tmp") == 0);
}

TEST_CASE("ImageCache: a failed unpack is internal and leaves nothing", "[image]") {
  TC_SKIP_WITHOUT_OCI();
  TempDir dir;
  Setup setup(dir.path());
  setup.Push(BusySpec("x"), "test/busy:1");
  ImageCache::Options options = Options(dir.path(), setup.registry->host());
  options.umoci = "/bin/false";
  ImageCache cache(options);
  absl::StatusOr<Image> image = cache.Acquire({setup.registry->host() + "/test/busy:1"});
  INFO(image.status().ToString());
  CHECK(image.status().code() == absl::StatusCode::kInternal);
  CHECK(absl::StrContains(image.status().message(), "unpacking"));
  CHECK(cache.List().empty());
  CHECK(CountEntries(options.dir + "/rootfs") == 0);
  CHECK(CountEntries(options.dir + "/oci") == 0);
  CHECK(CountEntries(options.dir + "/tmp") == 0);
}

TEST_CASE("ImageCache evicts the least recently used unpinned image, keeping shared layers",
          "[image]") {
  TC_SKIP_WITHOUT_OCI();
  TempDir dir;
  Setup setup(dir.path());
  const std::string host = setup.registry->host();
  ImageSpec a = BusySpec("a");
  setup.Push(a, "test/a:1");
  setup.Push(BusySpec("b"), "test/b:1");
  ImageSpec c;
  c.base = host + "/test/a:1";
  c.busybox = false;
  c.files["/etc/c"] = "on a's layer\n";
  setup.Push(c, "test/c:1");
  setup.Push(BusySpec("d"), "test/d:1");
  ImageCache::Options options = Options(dir.path(), host);
  options.max_bytes = 1;  // Every pull leaves the cache over its limit.
  ImageCache cache(options);
  const std::string blobs = options.dir + "/blobs/sha256";

  absl::StatusOr<Image> image_a = cache.Acquire({host + "/test/a:1"});
  REQUIRE(image_a.ok());
  cache.Release(image_a->digest);
  absl::StatusOr<Image> image_b = cache.Acquire({host + "/test/b:1"});
  REQUIRE(image_b.ok());
  // a was unpinned and least recently used: gone, its root, layout and blobs.
  CHECK(!Exists(image_a->rootfs));
  CHECK(!Exists(options.dir + "/oci/" + image_a->digest.substr(7)));
  REQUIRE(cache.List().size() == 1);
  CHECK(CountEntries(blobs) == 3);  // b's manifest, config and layer.

  // Pinned images stay, over the limit.
  image_a = cache.Acquire({host + "/test/a:1"});
  REQUIRE(image_a.ok());
  std::vector<PullProgress> seen;
  absl::StatusOr<Image> image_c =
      cache.Acquire({host + "/test/c:1"}, [&](const PullProgress& p) { seen.push_back(p); });
  REQUIRE(image_c.ok());
  CHECK(cache.List().size() == 3);
  CHECK(absl::StrContains(ReadFile(image_c->rootfs + "/etc/os-release"), "ID=a"));
  CHECK(ReadFile(image_c->rootfs + "/etc/c") == "on a's layer\n");
  // a's layer was in the cache already: not downloaded again.
  REQUIRE(!seen.empty());
  CHECK(seen.back().bytes_total > 1000000);
  CHECK(seen.back().bytes_done < 100000);

  // a unpinned: evicted by the next pull, but not the layer c shares with it.
  cache.Release(image_a->digest);
  absl::StatusOr<Image> image_d = cache.Acquire({host + "/test/d:1"});
  REQUIRE(image_d.ok());
  CHECK(!Exists(image_a->rootfs));
  CHECK(Exists(image_b->rootfs));
  CHECK(Exists(image_c->rootfs));
  std::vector<std::string> left;
  for (const CachedImage& image : cache.List()) left.push_back(image.digest);
  std::sort(left.begin(), left.end());
  std::vector<std::string> want = {image_b->digest, image_c->digest, image_d->digest};
  std::sort(want.begin(), want.end());
  CHECK(left == want);
  CHECK(CountEntries(blobs) == 3 + 4 + 3);  // c: manifest, config, a's layer and its own.
  // c still unpacks from what is left.
  CHECK(absl::StrContains(ReadFile(image_c->rootfs + "/bin/busybox").substr(0, 4), "ELF"));
}

TEST_CASE("ImageCache removes what a crash left behind at construction", "[image]") {
  TempDir dir;
  const std::string root = dir.path() + "/cache";
  const std::string hex_a(64, 'a');
  const std::string hex_b(64, 'b');
  for (const std::string& d :
       {root + "/tmp/pull-AbCdEf/layout", root + "/rootfs/" + hex_a + "/etc",
        root + "/oci/" + hex_b, root + "/rootfs/not-a-digest", root + "/blobs/sha256"}) {
    std::filesystem::create_directories(d);
  }
  std::ofstream(root + "/tmp/pull-AbCdEf/layout/oci-put-blob123") << "partial";
  std::ofstream(root + "/tmp/pull-AbCdEf/auth.json") << "{}";
  std::ofstream(root + "/rootfs/" + hex_a + "/etc/os-release") << "ID=x\n";
  std::ofstream(root + "/oci/" + hex_b + "/index.json") << "{}";
  std::ofstream(root + "/blobs/sha256/" + std::string(64, 'c')) << "stray";
  std::ofstream(root + "/state.json") << "{not json";
  ImageCache::Options options;
  options.dir = root;
  ImageCache cache(options);
  CHECK(cache.List().empty());
  for (const char* sub : {"/tmp", "/rootfs", "/oci", "/blobs/sha256"}) {
    INFO(sub);
    CHECK(CountEntries(root + sub) == 0);
  }
  absl::StatusOr<std::vector<StoredImage>> state = ParseStateJson(ReadFile(root + "/state.json"));
  REQUIRE(state.ok());
  CHECK(state->empty());
  CHECK(testing::ModeOf(root + "/tmp") == 0700);
}

TEST_CASE("ImageCache pulls with credentials, never on a command line", "[image]") {
  TC_SKIP_WITHOUT_OCI();
  absl::StatusOr<std::string> htpasswd = testing::HtpasswdLine("alice", "s3cret-pw");
  if (!htpasswd.ok()) {
    WARN("skipped: no bcrypt for an htpasswd file: " << htpasswd.status().ToString());
    return;
  }
  TempDir dir;
  Setup setup(dir.path(), *htpasswd);
  const std::string host = setup.registry->host();
  const std::string ref = host + "/test/private:1";
  const std::string pushed = setup.Push(BusySpec("private"), "test/private:1", "alice:s3cret-pw");
  const ImageCache::Options options = Options(dir.path(), host);
  ImageCache cache(options);

  absl::StatusOr<Image> anonymous = cache.Acquire({ref});
  INFO(anonymous.status().ToString());
  CHECK(anonymous.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(anonymous.status().message(), ref));
  CHECK(absl::StrContains(anonymous.status().message(), "authentication required"));
  absl::StatusOr<Image> wrong =
      cache.Acquire({ref, ImageRequest::kIfNotPresent, "alice:not-the-pw"});
  CHECK(wrong.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(!absl::StrContains(wrong.status().message(), "not-the-pw"));
  CHECK(cache.Acquire({ref, ImageRequest::kIfNotPresent, "not credentials"}).status().code() ==
        absl::StatusCode::kInvalidArgument);

  absl::StatusOr<Image> right =
      cache.Acquire({ref, ImageRequest::kIfNotPresent, "alice:s3cret-pw"});
  INFO(right.status().ToString());
  REQUIRE(right.ok());
  CHECK(right->digest == pushed);
  const std::string docker_config = absl::StrCat(R"({"auths": {")", host, R"(": {"auth": ")",
                                                 absl::Base64Escape("alice:s3cret-pw"), R"("}}})");
  absl::StatusOr<Image> json = cache.Acquire({ref, ImageRequest::kAlways, docker_config});
  INFO(json.status().ToString());
  REQUIRE(json.ok());
  CHECK(json->digest == pushed);
  for (const std::string& line : LogLines(dir.path())) {
    CHECK(!absl::StrContains(line, "s3cret"));
    CHECK(!absl::StrContains(line, "not-the-pw"));
  }
  CHECK(CountEntries(options.dir + "/tmp") == 0);  // No credentials file left.
}

}  // namespace image_cache_test
}  // namespace trainctl::agent
