// A real OCI registry and real images for tests, offline: Debian's docker-registry (the
// distribution registry) serving plain HTTP on 127.0.0.1, optionally behind htpasswd basic auth,
// and tiny images that buildah builds from scratch (busybox-static's /bin/busybox, a few applet
// links, files of the test's choosing) and pushes to it. Used by the image cache's tests
// (image_cache_test.cc); whatever runs replicas in images can reuse it.
//
// Needs root (buildah's storage, umoci's unpack keeping owners) and the packages docker-registry,
// buildah, busybox-static (deploy/install-deps.sh); OciTestsUnavailable() says why not, for a
// test to skip with a WARN.
//
//   TempDir dir;
//   absl::StatusOr<std::unique_ptr<TestRegistry>> registry = TestRegistry::Start(dir.path());
//   ImageBuilder builder(dir.path() + "/buildah");
//   ImageSpec spec;
//   spec.files["/etc/os-release"] = "ID=trainctl-test\n";
//   spec.env = {"FOO=bar"};
//   absl::StatusOr<std::string> digest = builder.BuildAndPush(spec, (*registry)->host() +
//                                                             "/test/busy:1");
//   (*registry)->Stop();  // pulls now fail: connection refused
//
// Every process started here is stopped by its pid (its process group) on destruction.
// Thread-compatible.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace trainctl::agent::testing {

// Why the OCI tests cannot run here, or "" when they can: not root, a tool missing (runc too), or
// a kernel without overlayfs.
std::string OciTestsUnavailable();

// A line of an htpasswd file for `user` and `password` (bcrypt, libxcrypt's crypt).
absl::StatusOr<std::string> HtpasswdLine(const std::string& user, const std::string& password);

class TestRegistry {
 public:
  // Starts docker-registry with its storage and config under `dir` (created), on a free loopback
  // port; with `htpasswd_line`, only that user gets in. Returns once GET /v2/ answers.
  static absl::StatusOr<std::unique_ptr<TestRegistry>> Start(const std::string& dir,
                                                             const std::string& htpasswd_line = "");
  TestRegistry(const TestRegistry&) = delete;
  TestRegistry& operator=(const TestRegistry&) = delete;
  ~TestRegistry() { Stop(); }

  // "127.0.0.1:PORT".
  std::string host() const;
  int port() const { return port_; }
  // Stops the registry (SIGTERM, SIGKILL after 5 s) and reaps it. Idempotent.
  void Stop();

 private:
  TestRegistry(pid_t pid, int port) : pid_(pid), port_(port) {}
  pid_t pid_;
  int port_;
};

struct ImageSpec {
  // Paths in the image and their contents (directories are made).
  std::map<std::string, std::string> files;
  // With /bin/busybox and the links /bin/sh, /bin/cat, /bin/echo, /bin/ls.
  bool busybox = true;
  // Empty: not set.
  std::vector<std::string> env;
  std::string working_dir;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string user;
  // buildah push --format: "" (OCI), or "v2s2" (a Docker image, which skopeo converts when it
  // copies it into an OCI layout).
  std::string format;
  // Built on this image (one of this builder's, by the reference it was pushed as) instead of
  // from scratch: its layers are shared.
  std::string base;
};

// Builds images with buildah, storage under `dir` (vfs driver, so any file system does).
class ImageBuilder {
 public:
  explicit ImageBuilder(std::string dir);
  // Builds `spec` and pushes it to docker://`ref` over plain HTTP (with `credentials`
  // "USER:PASSWORD" when not empty). Returns the pushed manifest digest, "sha256:...".
  absl::StatusOr<std::string> BuildAndPush(const ImageSpec& spec, const std::string& ref,
                                           const std::string& credentials = "");

 private:
  absl::StatusOr<std::string> Buildah(std::vector<std::string> args);
  const std::string dir_;
  int seq_ = 0;
  // ref pushed -> the local image name it was committed as.
  std::map<std::string, std::string> local_;
};

// A TCP listener on 127.0.0.1 that accepts every connection and never answers: a registry that
// hangs. Closes them all on destruction.
class SilentServer {
 public:
  SilentServer();
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  ~SilentServer();
  // 0 when it could not listen.
  int port() const { return port_; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A loopback TCP port nothing listens on now.
int FreeLoopbackPort();

}  // namespace trainctl::agent::testing
