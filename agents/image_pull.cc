// The image cache's stateless parts (image_pull.h). JSON is read and written through
// google.protobuf.Struct, the one JSON parser every part of trainctl links.
#include "agents/image_pull.h"

#include <sys/stat.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agents/tool_run.h"
#include "common/json_text.h"
#include "common/utf8.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace trainctl::agent {
namespace image_pull_internal {

namespace pb = google::protobuf;

constexpr size_t kMaxAnswer = 512;

bool ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return !in.bad();
}

bool ParseJsonObject(absl::string_view json, pb::Struct* out) {
  return pb::util::JsonStringToMessage(std::string(json), out).ok();
}

const pb::Value* Field(const pb::Struct& object, const std::string& name) {
  auto it = object.fields().find(name);
  return it == object.fields().end() ? nullptr : &it->second;
}

std::string StringField(const pb::Struct& object, const std::string& name) {
  const pb::Value* v = Field(object, name);
  return v != nullptr && v->kind_case() == pb::Value::kStringValue ? v->string_value() : "";
}

int64_t NumberField(const pb::Struct& object, const std::string& name) {
  const pb::Value* v = Field(object, name);
  return v != nullptr && v->kind_case() == pb::Value::kNumberValue
             ? static_cast<int64_t>(v->number_value())
             : 0;
}

const pb::Struct* ObjectField(const pb::Struct& object, const std::string& name) {
  const pb::Value* v = Field(object, name);
  return v != nullptr && v->kind_case() == pb::Value::kStructValue ? &v->struct_value() : nullptr;
}

const pb::ListValue* ListField(const pb::Struct& object, const std::string& name) {
  const pb::Value* v = Field(object, name);
  return v != nullptr && v->kind_case() == pb::Value::kListValue ? &v->list_value() : nullptr;
}

std::vector<std::string> StringsField(const pb::Struct& object, const std::string& name) {
  std::vector<std::string> out;
  if (const pb::ListValue* list = ListField(object, name)) {
    for (const pb::Value& v : list->values()) {
      if (v.kind_case() == pb::Value::kStringValue) out.push_back(v.string_value());
    }
  }
  return out;
}

pb::Value StringValue(const std::string& s) {
  pb::Value v;
  v.set_string_value(s);
  return v;
}

pb::Value NumberValue(double n) {
  pb::Value v;
  v.set_number_value(n);
  return v;
}

pb::Value StringsValue(const std::vector<std::string>& strings) {
  pb::Value v;
  pb::ListValue* list = v.mutable_list_value();
  for (const std::string& s : strings) *list->add_values() = StringValue(s);
  return v;
}

// The HTTP status after "status" in `text` (lower case): "...HTTP status: 503 Service..." and
// "invalid status code from registry 404 (Not Found)". 0 when there is none.
int HttpStatusIn(absl::string_view text) {
  size_t at = 0;
  while ((at = text.find("status", at)) != absl::string_view::npos) {
    at += 6;
    size_t i = at;
    const size_t end = std::min(text.size(), at + 30);
    while (i < end && !std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i + 3 <= text.size() && std::isdigit(static_cast<unsigned char>(text[i])) &&
        std::isdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(text[i + 2])) &&
        (i + 3 == text.size() || !std::isdigit(static_cast<unsigned char>(text[i + 3])))) {
      const int code = (text[i] - '0') * 100 + (text[i + 1] - '0') * 10 + (text[i + 2] - '0');
      if (code >= 100 && code < 600) return code;
    }
  }
  return 0;
}

bool ContainsAny(absl::string_view text, std::initializer_list<absl::string_view> needles) {
  for (absl::string_view needle : needles) {
    if (absl::StrContains(text, needle)) return true;
  }
  return false;
}

}  // namespace image_pull_internal

namespace ipi = image_pull_internal;

bool IsSha256Digest(absl::string_view digest) {
  if (!absl::ConsumePrefix(&digest, "sha256:") || digest.size() != 64) return false;
  for (char c : digest) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

absl::StatusOr<ImageRef> ParseImageRef(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("image reference ", JsonQuoted(SanitizeUtf8(text)), " ", why));
  };
  if (text.empty()) return absl::InvalidArgumentError("the image reference is empty");
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == '"' || c == '\'' || c == '\\') {
      return bad("has a character no image reference has");
    }
  }
  if (text[0] == '-') return bad("starts with '-'");
  ImageRef ref;
  ref.text = std::string(text);
  std::string rest = ref.text;
  if (const size_t at = rest.find('@'); at != std::string::npos) {
    ref.digest = rest.substr(at + 1);
    rest.resize(at);
    if (!IsSha256Digest(ref.digest)) return bad("has a digest that is not sha256:<64 hex digits>");
  }
  const size_t slash = rest.rfind('/');
  const size_t colon = rest.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    ref.tag = rest.substr(colon + 1);
    rest.resize(colon);
    if (ref.tag.empty()) return bad("has an empty tag");
  }
  if (ref.digest.empty() && ref.tag.empty()) ref.tag = "latest";
  if (rest.empty() || rest.back() == '/') return bad("names no repository");
  ref.repository = rest;
  const size_t first_slash = rest.find('/');
  const std::string first = rest.substr(0, first_slash);
  const bool is_host =
      first_slash != std::string::npos &&
      (absl::StrContains(first, '.') || absl::StrContains(first, ':') || first == "localhost");
  ref.registry = is_host ? first : "docker.io";
  return ref;
}

std::string RegistryAnswer(absl::string_view skopeo_stderr) {
  std::string line = LastLine(skopeo_stderr);
  const size_t msg = line.find("msg=\"");
  if (msg != std::string::npos) {
    std::string unescaped;
    for (size_t i = msg + 5; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      unescaped.push_back(line[i]);
    }
    line = std::move(unescaped);
  }
  line = std::string(absl::StripAsciiWhitespace(line));
  if (line.size() > ipi::kMaxAnswer) line.resize(ipi::kMaxAnswer);
  return SanitizeUtf8(line);
}

absl::StatusCode ClassifyPullFailure(absl::string_view skopeo_stderr) {
  const std::string line = absl::AsciiStrToLower(RegistryAnswer(skopeo_stderr));
  if (line.empty()) return absl::StatusCode::kInternal;
  const int status = ipi::HttpStatusIn(line);
  if (status >= 500 || status == 429 ||
      ipi::ContainsAny(line, {"connection refused",
                              "connection reset",
                              "no such host",
                              "timeout",
                              "timed out",
                              "tls:",
                              "x509:",
                              "certificate",
                              "handshake",
                              "server gave http response to https client",
                              "network is unreachable",
                              "no route to host",
                              "temporary failure in name resolution",
                              "server misbehaving",
                              "broken pipe",
                              "toomanyrequests",
                              "too many requests",
                              ": eof",
                              "unexpected eof",
                              "service unavailable",
                              "bad gateway"})) {
    return absl::StatusCode::kUnavailable;
  }
  if (status == 401 || status == 403 || status == 404 ||
      ipi::ContainsAny(line, {"manifest unknown", "name unknown", "not found", "unauthorized",
                              "authentication required", "denied", "forbidden",
                              "invalid reference format", "repository name must",
                              "invalid username/password", "incorrect username or password"})) {
    // A local file's "permission denied" is the host's problem, not the registry's refusal.
    if (absl::StrContains(line, "permission denied") &&
        !ipi::ContainsAny(line, {"denied:", "requested access"})) {
      return absl::StatusCode::kInternal;
    }
    return absl::StatusCode::kInvalidArgument;
  }
  return absl::StatusCode::kInternal;
}

absl::StatusOr<ManifestInfo> ParseManifest(absl::string_view json) {
  ipi::pb::Struct manifest;
  if (!ipi::ParseJsonObject(json, &manifest)) {
    return absl::InternalError("the manifest is not a JSON object");
  }
  ManifestInfo info;
  if (ipi::ListField(manifest, "manifests") != nullptr) {
    info.is_index = true;
    return info;
  }
  const ipi::pb::Struct* config = ipi::ObjectField(manifest, "config");
  if (config == nullptr || !IsSha256Digest(ipi::StringField(*config, "digest"))) {
    return absl::InternalError("the manifest names no sha256 config blob");
  }
  info.blobs.push_back(ipi::StringField(*config, "digest"));
  info.total_bytes += ipi::NumberField(*config, "size");
  if (const ipi::pb::ListValue* layers = ipi::ListField(manifest, "layers")) {
    for (const ipi::pb::Value& layer : layers->values()) {
      if (layer.kind_case() != ipi::pb::Value::kStructValue) continue;
      const std::string digest = ipi::StringField(layer.struct_value(), "digest");
      if (!IsSha256Digest(digest)) {
        return absl::InternalError(absl::StrCat("the manifest names a layer of digest ",
                                                JsonQuoted(SanitizeUtf8(digest))));
      }
      info.blobs.push_back(digest);
      info.total_bytes += ipi::NumberField(layer.struct_value(), "size");
    }
  }
  return info;
}

absl::StatusOr<ImageConfig> ParseImageConfig(absl::string_view json) {
  ipi::pb::Struct blob;
  if (!ipi::ParseJsonObject(json, &blob)) {
    return absl::InternalError("the image config is not a JSON object");
  }
  ImageConfig config;
  if (const ipi::pb::Struct* c = ipi::ObjectField(blob, "config")) {
    config.env = ipi::StringsField(*c, "Env");
    config.working_dir = ipi::StringField(*c, "WorkingDir");
    config.entrypoint = ipi::StringsField(*c, "Entrypoint");
    config.cmd = ipi::StringsField(*c, "Cmd");
    config.user = ipi::StringField(*c, "User");
  }
  return config;
}

std::string BlobPath(const std::string& blob_dir, absl::string_view digest) {
  absl::ConsumePrefix(&digest, "sha256:");
  return absl::StrCat(blob_dir, "/sha256/", digest);
}

absl::StatusOr<LayoutImage> ReadLayoutImage(const std::string& index_path,
                                            const std::string& blob_dir, const std::string& tag) {
  std::string text;
  ipi::pb::Struct index;
  if (!ipi::ReadWholeFile(index_path, &text) || !ipi::ParseJsonObject(text, &index)) {
    return absl::InternalError(absl::StrCat("cannot read the OCI index ", index_path));
  }
  LayoutImage image;
  if (const ipi::pb::ListValue* manifests = ipi::ListField(index, "manifests")) {
    for (const ipi::pb::Value& m : manifests->values()) {
      if (m.kind_case() != ipi::pb::Value::kStructValue) continue;
      const ipi::pb::Struct* annotations = ipi::ObjectField(m.struct_value(), "annotations");
      if (annotations != nullptr &&
          ipi::StringField(*annotations, "org.opencontainers.image.ref.name") == tag) {
        image.manifest_digest = ipi::StringField(m.struct_value(), "digest");
      }
    }
  }
  if (!IsSha256Digest(image.manifest_digest)) {
    return absl::InternalError(absl::StrCat(index_path, " names no sha256 image ", tag));
  }
  if (!ipi::ReadWholeFile(BlobPath(blob_dir, image.manifest_digest), &text)) {
    return absl::InternalError(absl::StrCat("cannot read manifest ", image.manifest_digest));
  }
  absl::StatusOr<ManifestInfo> manifest = ParseManifest(text);
  if (!manifest.ok()) return manifest.status();
  if (manifest->is_index) {
    return absl::InternalError(absl::StrCat(image.manifest_digest, " is an index, not an image"));
  }
  if (!ipi::ReadWholeFile(BlobPath(blob_dir, manifest->blobs[0]), &text)) {
    return absl::InternalError(absl::StrCat("cannot read image config ", manifest->blobs[0]));
  }
  absl::StatusOr<ImageConfig> config = ParseImageConfig(text);
  if (!config.ok()) return config.status();
  image.config = *std::move(config);
  image.blobs.push_back(image.manifest_digest);
  image.blobs.insert(image.blobs.end(), manifest->blobs.begin(), manifest->blobs.end());
  return image;
}

absl::StatusOr<std::string> AuthFileJson(absl::string_view credentials,
                                         absl::string_view registry) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(credentials);
  if (absl::StartsWith(trimmed, "{")) {
    ipi::pb::Struct config;
    if (!ipi::ParseJsonObject(trimmed, &config) || ipi::ObjectField(config, "auths") == nullptr) {
      return absl::InvalidArgumentError(
          "the registry credentials are JSON but not a Docker config with an \"auths\" object");
    }
    return std::string(trimmed);
  }
  const size_t colon = credentials.find(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(
        "the registry credentials are neither USER:PASSWORD nor a Docker config JSON");
  }
  return absl::StrCat("{\"auths\":{", JsonQuoted(SanitizeUtf8(registry)),
                      ":{\"auth\":", JsonQuoted(absl::Base64Escape(credentials)), "}}}");
}

std::string StateJson(const std::vector<StoredImage>& images) {
  ipi::pb::Struct state;
  (*state.mutable_fields())["version"] = ipi::NumberValue(1);
  ipi::pb::ListValue* list = (*state.mutable_fields())["images"].mutable_list_value();
  for (const StoredImage& image : images) {
    ipi::pb::Struct entry;
    auto& f = *entry.mutable_fields();
    f["digest"] = ipi::StringValue(image.digest);
    f["refs"] = ipi::StringsValue(image.refs);
    f["lastUsed"] = ipi::NumberValue(absl::ToDoubleSeconds(image.last_used - absl::UnixEpoch()));
    f["rootfsBytes"] = ipi::NumberValue(static_cast<double>(image.rootfs_bytes));
    f["blobs"] = ipi::StringsValue(image.blobs);
    ipi::pb::Struct config;
    auto& c = *config.mutable_fields();
    c["env"] = ipi::StringsValue(image.config.env);
    c["workingDir"] = ipi::StringValue(image.config.working_dir);
    c["entrypoint"] = ipi::StringsValue(image.config.entrypoint);
    c["cmd"] = ipi::StringsValue(image.config.cmd);
    c["user"] = ipi::StringValue(image.config.user);
    *f["config"].mutable_struct_value() = std::move(config);
    *list->add_values()->mutable_struct_value() = std::move(entry);
  }
  std::string json;
  (void)ipi::pb::util::MessageToJsonString(state, &json);
  return json;
}

absl::StatusOr<std::vector<StoredImage>> ParseStateJson(absl::string_view json) {
  ipi::pb::Struct state;
  if (!ipi::ParseJsonObject(json, &state)) {
    return absl::InternalError("the image cache's state is not a JSON object");
  }
  std::vector<StoredImage> images;
  if (const ipi::pb::ListValue* list = ipi::ListField(state, "images")) {
    for (const ipi::pb::Value& v : list->values()) {
      if (v.kind_case() != ipi::pb::Value::kStructValue) continue;
      const ipi::pb::Struct& entry = v.struct_value();
      StoredImage image;
      image.digest = ipi::StringField(entry, "digest");
      if (!IsSha256Digest(image.digest)) continue;
      image.refs = ipi::StringsField(entry, "refs");
      const ipi::pb::Value* last_used = ipi::Field(entry, "lastUsed");
      image.last_used = absl::UnixEpoch();
      if (last_used != nullptr && last_used->kind_case() == ipi::pb::Value::kNumberValue) {
        image.last_used += absl::Seconds(last_used->number_value());
      }
      image.rootfs_bytes = ipi::NumberField(entry, "rootfsBytes");
      image.blobs = ipi::StringsField(entry, "blobs");
      if (const ipi::pb::Struct* c = ipi::ObjectField(entry, "config")) {
        image.config.env = ipi::StringsField(*c, "env");
        image.config.working_dir = ipi::StringField(*c, "workingDir");
        image.config.entrypoint = ipi::StringsField(*c, "entrypoint");
        image.config.cmd = ipi::StringsField(*c, "cmd");
        image.config.user = ipi::StringField(*c, "user");
      }
      images.push_back(std::move(image));
    }
  }
  return images;
}

int64_t DiskBytes(const std::string& path) {
  struct stat top;
  if (lstat(path.c_str(), &top) != 0) return 0;
  int64_t total = static_cast<int64_t>(top.st_blocks) * 512;
  if (!S_ISDIR(top.st_mode)) return total;
  std::set<std::pair<dev_t, ino_t>> linked;
  std::error_code ec;
  namespace fs = std::filesystem;
  fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st;
    if (lstat(it->path().c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && st.st_dev != top.st_dev) {
      it.disable_recursion_pending();  // Another file system mounted inside: not ours.
      continue;
    }
    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && !linked.insert({st.st_dev, st.st_ino}).second) {
      continue;
    }
    total += static_cast<int64_t>(st.st_blocks) * 512;
  }
  return total;
}

}  // namespace trainctl::agent
