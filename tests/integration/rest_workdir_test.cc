// trainctld's REST routes for working directories, against a real daemon and agent: a tar
// archive uploaded as the raw body (POST /v1/projects/{project}/workdirs?digest=...), read back
// by its digest (a path parameter with a colon, beside the routes' custom verbs), deduplicated,
// and run by a job submitted over REST; refused, with nothing kept, when its bytes do not hash to
// the digest, when it exceeds --max-workdir-mb (before the body is read: with
// `Expect: 100-continue` the body is never sent), without Content-Length or with another
// Content-Type; JSON routes keep --max-request-bytes, also for a chunked body.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/http_client.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace rest_workdir_test {

namespace pb = google::protobuf;

pb::Struct ParseJson(const std::string& text) {
  pb::Struct s;
  INFO(text);
  REQUIRE(pb::util::JsonStringToMessage(text, &s).ok());
  return s;
}

std::string StringField(const pb::Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "" : it->second.string_value();
}

// A tar archive (`tar -C DIR -cf`) of a directory holding ./train.sh, which prints its data
// file, and data/value.txt holding `value`; its bytes.
std::string TrainTar(const MiniCluster& c, const std::string& name, const std::string& value) {
  const std::string dir = c.dir() + "/" + name;
  std::filesystem::create_directories(dir + "/data");
  std::ofstream(dir + "/train.sh") << "#!/bin/sh\necho \"shipped data=$(cat data/value.txt)\"\n";
  REQUIRE(chmod((dir + "/train.sh").c_str(), 0755) == 0);
  std::ofstream(dir + "/data/value.txt") << value;
  const std::string tar = dir + ".tar";
  REQUIRE(std::system(absl::StrCat("tar -C '", dir, "' -cf '", tar, "' .").c_str()) == 0);
  return ReadTextFile(tar);
}

std::string DigestOf(const std::string& bytes) { return "sha256:" + Sha256Hex(bytes); }

std::string UploadPath(const std::string& project, const std::string& digest) {
  return absl::StrCat("/v1/projects/", project, "/workdirs?digest=", digest);
}

httplib::Result Upload(httplib::Client& http, const std::string& digest, const std::string& body) {
  return http.Post(UploadPath("default", digest), body, "application/x-tar");
}

// One HTTP/1.1 exchange on a socket of its own, for what httplib's client does not send
// (Expect: 100-continue).
class RawHttp {
 public:
  explicit RawHttp(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    timeval timeout{30, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  }
  ~RawHttp() { close(fd_); }

  void Send(const std::string& bytes) {
    for (size_t sent = 0; sent < bytes.size();) {
      const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      REQUIRE(n > 0);
      sent += static_cast<size_t>(n);
    }
  }

  // The next response, status line to body; "" when the connection ended first.
  std::string Response() {
    size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return "";
    }
    const std::string head = buffer_.substr(0, end + 4);
    size_t length = 0;
    if (size_t at = head.find("Content-Length: "); at != std::string::npos) {
      REQUIRE(absl::SimpleAtoi(head.substr(at + 16, head.find("\r\n", at) - at - 16), &length));
    }
    while (buffer_.size() < head.size() + length) {
      if (!Fill()) return "";
    }
    std::string out = buffer_.substr(0, head.size() + length);
    buffer_.erase(0, out.size());
    return out;
  }

 private:
  bool Fill() {
    char chunk[4096];
    const ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buffer_;
};

// The request line and headers of an upload of `size` bytes that asks before sending them.
std::string ExpectingUpload(int port, const std::string& digest, size_t size) {
  return absl::StrCat("POST ", UploadPath("default", digest), " HTTP/1.1\r\nHost: 127.0.0.1:", port,
                      "\r\nContent-Type: application/x-tar\r\nContent-Length: ", size,
                      "\r\nExpect: 100-continue\r\n\r\n");
}

TEST_CASE("a workdir is uploaded, read back and run by a job over REST",
          "[integration][rest][workdir]") {
  MiniCluster c(1);
  auto http = Http(c);
  const std::string tar = TrainTar(c, "src", "from-rest");
  const std::string digest = DigestOf(tar);
  const std::string path = "/v1/projects/default/workdirs/" + digest;

  httplib::Result before = http->Get(path);
  REQUIRE(before);
  CHECK(before->status == 404);
  CHECK_THAT(before->body, Catch::Contains("holds no upload " + digest));

  httplib::Result uploaded = Upload(*http, digest, tar);
  REQUIRE(uploaded);
  INFO(uploaded->body);
  REQUIRE(uploaded->status == 200);
  pb::Struct w = ParseJson(uploaded->body);
  CHECK(StringField(w, "digest") == digest);
  CHECK(StringField(w, "project") == "default");
  CHECK(StringField(w, "sizeBytes") == std::to_string(tar.size()));
  CHECK_FALSE(w.fields().at("deduplicated").bool_value());

  // The digest's colon in the path, as it is or escaped.
  for (const std::string& p :
       {path, "/v1/projects/default/workdirs/sha256%3A" + digest.substr(7)}) {
    httplib::Result got = http->Get(p);
    REQUIRE(got);
    INFO(p << ": " << got->body);
    CHECK(got->status == 200);
    CHECK(StringField(ParseJson(got->body), "sizeBytes") == std::to_string(tar.size()));
  }
  // The same bytes again: held already.
  httplib::Result again = Upload(*http, digest, tar);
  REQUIRE(again);
  REQUIRE(again->status == 200);
  CHECK(ParseJson(again->body).fields().at("deduplicated").bool_value());

  // A job submitted over REST runs ./train.sh from it.
  httplib::Result created = http->Post(
      "/v1/jobs",
      absl::StrCat(R"({"displayName":"rest-workdir","workdir":")", digest,
                   R"(","workerPools":[{"name":"main","replicaCount":1,"command":["./train.sh"],)"
                   R"("resources":{"cpu":0.1,"memoryMb":64}}]})"),
      "application/json");
  REQUIRE(created);
  INFO(created->body);
  REQUIRE(created->status == 200);
  const std::string id = StringField(ParseJson(created->body), "id");
  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED, std::chrono::seconds(60));
  CHECK(job.spec().workdir() == digest);
  CliResult logs = c.Cli({"logs", id});
  INFO(logs.out << logs.err);
  CHECK(absl::StrContains(logs.out, "shipped data=from-rest"));

  // Custom verbs still win over a parameter with a colon, and a misspelt one is no route.
  httplib::Result watched = http->Get(absl::StrCat("/v1/jobs/", id, ":watch"));
  REQUIRE(watched);
  CHECK(watched->status == 200);
  CHECK(absl::StartsWith(watched->body, "data: "));
  httplib::Result misspelt =
      http->Post(absl::StrCat("/v1/jobs/", id, ":cancle"), "{}", "application/json");
  REQUIRE(misspelt);
  CHECK(misspelt->status == 404);
  CHECK_THAT(misspelt->body, Catch::Contains("no route POST"));
}

TEST_CASE("a workdir upload over REST that does not match or fit is refused, nothing kept",
          "[integration][rest][workdir]") {
  ClusterOptions opts;
  opts.agents = 0;
  opts.daemon_args = {"--max-workdir-mb", "1"};
  MiniCluster c(opts);
  auto http = Http(c);
  const std::string tar = TrainTar(c, "src", "v1");
  const std::string digest = DigestOf(tar);
  auto held = [&](const std::string& d) {
    httplib::Result got = http->Get("/v1/projects/default/workdirs/" + d);
    REQUIRE(got);
    return got->status == 200;
  };

  // Bytes that hash to another digest.
  const std::string wrong = "sha256:" + std::string(64, '0');
  httplib::Result mismatch = Upload(*http, wrong, tar);
  REQUIRE(mismatch);
  INFO(mismatch->body);
  CHECK(mismatch->status == 400);
  CHECK_THAT(mismatch->body, Catch::Contains(R"("code":3)") &&
                                 Catch::Contains("not the announced " + wrong) &&
                                 Catch::Contains(digest));
  CHECK_FALSE(held(wrong));
  CHECK_FALSE(held(digest));

  // Over --max-workdir-mb: refused before the body is read.
  const std::string big(2 << 20, 'x');
  httplib::Result too_big = Upload(*http, DigestOf(big), big);
  REQUIRE(too_big);
  INFO(too_big->body);
  CHECK(too_big->status == 400);
  CHECK_THAT(too_big->body, Catch::Contains("--max-workdir-mb") && Catch::Contains("got 2097152"));
  CHECK_FALSE(held(DigestOf(big)));
  // A client that asks first (Expect: 100-continue) is refused without sending the body ...
  {
    RawHttp raw(HttpPort(c));
    raw.Send(ExpectingUpload(HttpPort(c), DigestOf(big), big.size()));
    const std::string refused = raw.Response();
    INFO(refused);
    CHECK(absl::StartsWith(refused, "HTTP/1.1 400"));
    CHECK(absl::StrContains(refused, "--max-workdir-mb"));
  }
  // ... and one that fits is asked for it.
  {
    RawHttp raw(HttpPort(c));
    raw.Send(ExpectingUpload(HttpPort(c), digest, tar.size()));
    const std::string go_on = raw.Response();
    INFO(go_on);
    REQUIRE(absl::StartsWith(go_on, "HTTP/1.1 100"));
    raw.Send(tar);
    const std::string stored = raw.Response();
    INFO(stored);
    CHECK(absl::StartsWith(stored, "HTTP/1.1 200"));
    CHECK(absl::StrContains(stored, digest));
  }
  CHECK(held(digest));

  // Another Content-Type, no Content-Length (chunked), a malformed digest, another parameter.
  httplib::Result as_json = http->Post(UploadPath("default", digest), tar, "application/json");
  REQUIRE(as_json);
  CHECK(as_json->status == 415);
  CHECK_THAT(as_json->body, Catch::Contains("needs Content-Type: application/x-tar"));
  httplib::Result chunked = http->Post(
      UploadPath("default", digest),
      [&](size_t offset, httplib::DataSink& sink) {
        if (offset < tar.size()) return sink.write(tar.data() + offset, tar.size() - offset);
        sink.done();
        return true;
      },
      "application/x-tar");
  REQUIRE(chunked);
  CHECK(chunked->status == 400);
  CHECK_THAT(chunked->body, Catch::Contains("Content-Length: required"));
  httplib::Result malformed = Upload(*http, "sha256:abc", tar);
  REQUIRE(malformed);
  CHECK(malformed->status == 400);
  CHECK_THAT(malformed->body, Catch::Contains("digest: must be"));
  httplib::Result extra =
      http->Post(UploadPath("default", digest) + "&sizeBytes=3", tar, "application/x-tar");
  REQUIRE(extra);
  CHECK(extra->status == 400);
  CHECK_THAT(extra->body, Catch::Contains("unknown parameter \\\"sizeBytes\\\""));

  // JSON routes keep --max-request-bytes (4 MiB), with a Content-Length or chunked.
  const std::string json(5 << 20, ' ');
  httplib::Result json_big = http->Post("/v1/jobs", json, "application/json");
  REQUIRE(json_big);
  CHECK(json_big->status == 413);
  CHECK_THAT(json_big->body, Catch::Contains("--max-request-bytes"));
  httplib::Result json_chunked = http->Post(
      "/v1/jobs",
      [&](size_t offset, httplib::DataSink& sink) {
        if (offset < json.size()) {
          return sink.write(json.data() + offset, std::min<size_t>(1 << 16, json.size() - offset));
        }
        sink.done();
        return true;
      },
      "application/json");
  REQUIRE(json_chunked);
  CHECK(json_chunked->status == 413);
  CHECK_THAT(json_chunked->body, Catch::Contains("--max-request-bytes"));
  // The server serves on.
  httplib::Result nodes = Http(c)->Get("/v1/nodes");
  REQUIRE(nodes);
  CHECK(nodes->status == 200);
}

}  // namespace rest_workdir_test
}  // namespace trainctl::testing
