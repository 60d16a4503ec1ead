// The image cache's stateless parts (agents/image_pull.h): image references, the classification
// of skopeo's failures over stderr lines captured from skopeo 1.9.3 (Debian 12) against
// docker-registry 2.8, a 503 server, a closed port and an unknown host, the registry's answer as
// quoted to users, credentials files, manifests, image configs and the state file.
#include "agents/image_pull.h"

#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/time/clock.h"

namespace trainctl::agent {
namespace image_pull_test {

TEST_CASE("ParseImageRef splits registry, repository, tag and digest", "[image]") {
  const std::string digest = "sha256:" + std::string(64, 'a');
  struct Case {
    std::string text, registry, repository, tag, digest, key;
  };
  for (const Case& c : std::vector<Case>{
           {"127.0.0.1:5000/team/app:1", "127.0.0.1:5000", "127.0.0.1:5000/team/app", "1", "",
            "127.0.0.1:5000/team/app:1"},
           {"127.0.0.1:5000/team/app", "127.0.0.1:5000", "127.0.0.1:5000/team/app", "latest", "",
            "127.0.0.1:5000/team/app:latest"},
           {"ubuntu:22.04", "docker.io", "ubuntu", "22.04", "", "ubuntu:22.04"},
           {"library/ubuntu", "docker.io", "library/ubuntu", "latest", "", "library/ubuntu:latest"},
           {"localhost/app:2", "localhost", "localhost/app", "2", "", "localhost/app:2"},
           {"reg.example/app@" + digest, "reg.example", "reg.example/app", "", digest,
            "reg.example/app@" + digest},
           {"reg.example:443/app:1@" + digest, "reg.example:443", "reg.example:443/app", "1",
            digest, "reg.example:443/app@" + digest},
       }) {
    INFO(c.text);
    absl::StatusOr<ImageRef> ref = ParseImageRef(c.text);
    REQUIRE(ref.ok());
    CHECK(ref->text == c.text);
    CHECK(ref->registry == c.registry);
    CHECK(ref->repository == c.repository);
    CHECK(ref->tag == c.tag);
    CHECK(ref->digest == c.digest);
    CHECK(ref->Key() == c.key);
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "a b:1", "-x:1", "app:", "reg.example/app@sha256:12",
                                "app@md5:" + std::string(32, '0'), "reg:5000/", "a\"b"}) {
    INFO(bad);
    CHECK(ParseImageRef(bad).status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("ClassifyPullFailure over real skopeo stderr", "[image]") {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const auto kUnavailable = absl::StatusCode::kUnavailable;
  const auto kInternal = absl::StatusCode::kInternal;
  struct Case {
    const char* line;
    absl::StatusCode code;
  };
  for (
      const Case&
          c : std::
              vector<Case>{
                  // An unknown tag, an unknown repository, an unknown digest.
                  {R"x(time="2026-12-05T03:02:22Z" level=fatal msg="Error parsing image name \"docker://127.0.0.1:45123/test/busy:nope\": reading manifest nope in 127.0.0.1:45123/test/busy: manifest unknown: manifest unknown")x",
                   kInvalid},
                  {R"x(time="2026-12-05T03:02:22Z" level=fatal msg="Error parsing image name \"docker://127.0.0.1:45123/test/nothere:1\": reading manifest 1 in 127.0.0.1:45123/test/nothere: manifest unknown: manifest unknown")x",
                   kInvalid},
                  {R"x(time="2026-12-05T03:04:40Z" level=fatal msg="initializing source docker://127.0.0.1:45123/test/busy@sha256:0000000000000000000000000000000000000000000000000000000000000000: reading manifest sha256:0000000000000000000000000000000000000000000000000000000000000000 in 127.0.0.1:45123/test/busy: manifest unknown: manifest unknown")x",
                   kInvalid},
                  // No credentials, wrong ones (htpasswd registry).
                  {R"x(time="2026-12-05T03:04:40Z" level=fatal msg="Error parsing image name \"docker://127.0.0.1:45125/test/busy:1\": reading manifest 1 in 127.0.0.1:45125/test/busy: unauthorized: authentication required")x",
                   kInvalid},
                  {R"x(time="2026-12-05T03:04:40Z" level=fatal msg="initializing source docker://127.0.0.1:45125/test/busy:1: reading manifest 1 in 127.0.0.1:45125/test/busy: unauthorized: authentication required")x",
                   kInvalid},
                  // Docker Hub's refusal of a private repository.
                  {R"x(time="2026-12-05T03:10:00Z" level=fatal msg="initializing source docker://docker.io/team/private:1: reading manifest 1 in docker.io/team/private: requested access to the resource is denied")x",
                   kInvalid},
                  {R"x(time="2026-12-05T03:02:22Z" level=fatal msg="Error parsing image name \"docker://127.0.0.1:45123/Test/Busy:1\": invalid reference format: repository name must be lowercase")x",
                   kInvalid},
                  // Something that is no registry answers /v2/ with 404.
                  {R"x(time="2026-12-05T03:04:44Z" level=fatal msg="Error parsing image name \"docker://10.255.255.1:5000/x:1\": pinging container registry 10.255.255.1:5000: invalid status code from registry 404 (Not Found)")x",
                   kInvalid},
                  // Nothing listens; no such host; a 503; HTTPS against a plain-HTTP registry.
                  {R"x(time="2026-12-05T03:02:22Z" level=fatal msg="Error parsing image name \"docker://127.0.0.1:45124/test/busy:1\": pinging container registry 127.0.0.1:45124: Get \"http://127.0.0.1:45124/v2/\": dial tcp 127.0.0.1:45124: connect: connection refused")x",
                   kUnavailable},
                  {R"x(time="2026-12-05T03:04:40Z" level=fatal msg="initializing source docker://127.0.0.1:45124/test/busy:nope: pinging container registry 127.0.0.1:45124: Get \"http://127.0.0.1:45124/v2/\": dial tcp 127.0.0.1:45124: connect: connection refused")x",
                   kUnavailable},
                  {R"x(time="2026-12-05T03:02:22Z" level=fatal msg="Error parsing image name \"docker://nonexistent.invalid:5000/test/busy:1\": pinging container registry nonexistent.invalid:5000: Get \"http://nonexistent.invalid:5000/v2/\": dial tcp: lookup nonexistent.invalid on 10.255.255.53:53: no such host")x",
                   kUnavailable},
                  {R"x(time="2026-12-05T03:04:44Z" level=fatal msg="Error parsing image name \"docker://127.0.0.1:45126/test/busy:1\": reading manifest 1 in 127.0.0.1:45126/test/busy: received unexpected HTTP status: 503 Service Unavailable")x",
                   kUnavailable},
                  {R"x(time="2026-12-05T03:02:22Z" level=fatal msg="Error parsing image name \"docker://127.0.0.1:45123/test/busy:1\": pinging container registry 127.0.0.1:45123: Get \"https://127.0.0.1:45123/v2/\": http: server gave HTTP response to HTTPS client")x",
                   kUnavailable},
                  {R"x(time="2026-12-05T03:10:00Z" level=fatal msg="initializing source docker://reg.example/app:1: pinging container registry reg.example: Get \"https://reg.example/v2/\": x509: certificate signed by unknown authority")x", kUnavailable},
                  {R"x(time="2026-12-05T03:10:00Z" level=fatal msg="initializing source docker://docker.io/library/ubuntu:22.04: reading manifest 22.04 in docker.io/library/ubuntu: toomanyrequests: You have reached your pull rate limit.")x",
                   kUnavailable},
                  // Local trouble.
                  {R"x(time="2026-12-05T03:10:00Z" level=fatal msg="writing blob: open /var/lib/trainctl-agent/images/blobs/sha256/oci-put-blob123: no space left on device")x",
                   kInternal},
                  {R"x(time="2026-12-05T03:10:00Z" level=fatal msg="creating an updated image manifest: open /var/lib/x/index.json: permission denied")x",
                   kInternal},
                  {"", kInternal},
              }) {
    INFO(c.line);
    CHECK(ClassifyPullFailure(c.line) == c.code);
  }
  // The last line decides; warnings before it do not.
  CHECK(ClassifyPullFailure(
            "time=\"x\" level=warning msg=\"Failed to decode the keys: not found\"\n"
            "time=\"x\" level=fatal msg=\"dial tcp: connect: connection refused\"\n") ==
        kUnavailable);
}

TEST_CASE("RegistryAnswer quotes the message of skopeo's last line", "[image]") {
  CHECK(
      RegistryAnswer(
          "time=\"x\" level=warning msg=\"w\"\n"
          R"x(time="2026-12-05T03:02:22Z" level=fatal msg="Error parsing image name \"docker://h/a:1\": reading manifest 1 in h/a: manifest unknown: manifest unknown")x"
          "\n\n") ==
      R"x(Error parsing image name "docker://h/a:1": reading manifest 1 in h/a: manifest unknown: manifest unknown)x");
  CHECK(RegistryAnswer("  plain text error  \n") == "plain text error");
  CHECK(RegistryAnswer(std::string(2000, 'x')).size() == 512);
  CHECK(RegistryAnswer("") == "");
}

TEST_CASE("AuthFileJson takes USER:PASSWORD or a Docker config", "[image]") {
  absl::StatusOr<std::string> basic = AuthFileJson("alice:pa:ss", "127.0.0.1:5000");
  REQUIRE(basic.ok());
  CHECK(*basic == "{\"auths\":{\"127.0.0.1:5000\":{\"auth\":\"" +
                      absl::Base64Escape("alice:pa:ss") + "\"}}}");
  const std::string config = R"x({"auths": {"reg.example": {"auth": "YTpi"}}})x";
  CHECK(*AuthFileJson("  " + config + "\n", "other") == config);
  for (const char* bad : {"alice", ":pw", "{not json", R"x({"credHelpers": {}})x"}) {
    INFO(bad);
    absl::StatusOr<std::string> json = AuthFileJson(bad, "r");
    CHECK(json.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(!absl::StrContains(json.status().message(), bad));
  }
}

TEST_CASE("ParseManifest and ParseImageConfig read what skopeo and buildah write", "[image]") {
  const std::string config_digest = "sha256:" + std::string(64, '1');
  const std::string layer_digest = "sha256:" + std::string(64, '2');
  absl::StatusOr<ManifestInfo> manifest = ParseManifest(
      R"x({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")x" +
      config_digest +
      R"x(","size":427},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":")x" +
      layer_digest + R"x(","size":1083767}]})x");
  REQUIRE(manifest.ok());
  CHECK(!manifest->is_index);
  CHECK(manifest->blobs == std::vector<std::string>{config_digest, layer_digest});
  CHECK(manifest->total_bytes == 427 + 1083767);
  absl::StatusOr<ManifestInfo> index = ParseManifest(
      R"x({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","manifests":[]})x");
  REQUIRE(index.ok());
  CHECK(index->is_index);
  CHECK(ParseManifest("[]").status().code() == absl::StatusCode::kInternal);
  CHECK(ParseManifest(R"x({"config":{"digest":"md5:x"}})x").status().code() ==
        absl::StatusCode::kInternal);

  absl::StatusOr<ImageConfig> config = ParseImageConfig(
      R"x({"created":"2026-12-05T03:02:06Z","architecture":"amd64","os":"linux","config":{"User":"1000:1000","Env":["PATH=/usr/bin","FOO=bar"],"Entrypoint":["/bin/sh","-c"],"Cmd":["echo","hi"],"WorkingDir":"/work"},"rootfs":{"type":"layers","diff_ids":[]}})x");
  REQUIRE(config.ok());
  CHECK(config->env == std::vector<std::string>{"PATH=/usr/bin", "FOO=bar"});
  CHECK(config->entrypoint == std::vector<std::string>{"/bin/sh", "-c"});
  CHECK(config->cmd == std::vector<std::string>{"echo", "hi"});
  CHECK(config->working_dir == "/work");
  CHECK(config->user == "1000:1000");
  absl::StatusOr<ImageConfig> bare = ParseImageConfig(R"x({"config":{"Entrypoint":null}})x");
  REQUIRE(bare.ok());
  CHECK(bare->entrypoint.empty());
}

TEST_CASE("The image cache's state file round-trips", "[image]") {
  StoredImage image;
  image.digest = "sha256:" + std::string(64, 'e');
  image.refs = {"127.0.0.1:5000/a:1", "127.0.0.1:5000/a@" + image.digest};
  image.last_used = absl::FromUnixSeconds(1796000000);
  image.rootfs_bytes = int64_t{5} << 40;
  image.blobs = {image.digest, "sha256:" + std::string(64, 'f')};
  image.config.env = {"A=b c"};
  image.config.working_dir = "/w";
  image.config.entrypoint = {"/e"};
  image.config.cmd = {"x", "\"y\""};
  image.config.user = "u";
  StoredImage broken;
  broken.digest = "not a digest";
  absl::StatusOr<std::vector<StoredImage>> back = ParseStateJson(StateJson({image, broken}));
  REQUIRE(back.ok());
  REQUIRE(back->size() == 1);
  const StoredImage& b = (*back)[0];
  CHECK(b.digest == image.digest);
  CHECK(b.refs == image.refs);
  CHECK(b.last_used == image.last_used);
  CHECK(b.rootfs_bytes == image.rootfs_bytes);
  CHECK(b.blobs == image.blobs);
  CHECK(b.config.env == image.config.env);
  CHECK(b.config.working_dir == "/w");
  CHECK(b.config.entrypoint == image.config.entrypoint);
  CHECK(b.config.cmd == image.config.cmd);
  CHECK(b.config.user == "u");
  CHECK(ParseStateJson("{oops").status().code() == absl::StatusCode::kInternal);
}

}  // namespace image_pull_test
}  // namespace trainctl::agent
