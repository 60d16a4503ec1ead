// libFuzzer target: the REST API's reading of requests (server/rest/rest_json.h), for the request
// message of every route in server/rest/routes.cc, as the routes fill it: the body through
// FromJson (into the whole request, or into the field the route puts the body in), then the path
// and query parameters through SetFields. A request it accepts must print (ToJson) as JSON that
// FromJson reads back as the same message, and that gRPC would take on the wire.
//
// Input: the first byte picks the route (modulo their number); the rest up to the first NUL is
// the body; after it, a query string "name=value&name=value" (no %-decoding: the HTTP server
// decodes before the route sees it). tests/fuzz/corpus/rest_json/ holds seeds of that shape.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "google/protobuf/stubs/logging.h"
#include "server/rest/rest_json.h"
#include "server/rest/routes.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace pb = google::protobuf;
namespace rest = trainctl::server::rest;

// A REST body of a few KiB covers every request; larger inputs only slow the search down.
constexpr size_t kMaxInput = 16 * 1024;

void Fail(const rest::Route& route, const std::string& what, const std::string& json) {
  std::fprintf(stderr, "rest_json_fuzz: %s %s: %s\nthe request as JSON: %s\n", route.method,
               route.path, what.c_str(), json.c_str());
  std::abort();
}

rest::Params ParseQuery(absl::string_view query) {
  rest::Params params;
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    params.emplace(std::move(kv.first), std::move(kv.second));
  }
  return params;
}

// Fills `out` as the route does; false when the request is refused.
bool ReadRequest(const rest::Route& route, const std::string& body, const rest::Params& params,
                 pb::Message* out) {
  const std::string where = route.body;
  if (!where.empty() && !absl::StripAsciiWhitespace(body).empty()) {
    pb::Message* target = out;
    if (where != "*") {
      const pb::FieldDescriptor* field = out->GetDescriptor()->FindFieldByName(where);
      target = out->GetReflection()->MutableMessage(out, field);
    }
    if (!rest::FromJson(body, "body", target).ok()) return false;
  }
  return rest::SetFields(params, route.extra_params, out).ok();
}

}  // namespace

// protobuf's JSON parser logs an ERROR line for every string that is not UTF-8 before it refuses
// it; printing those took a good part of each run. A refusal is what the target checks.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > kMaxInput) return 0;
  const std::vector<rest::Route>& routes = rest::Routes();
  const rest::Route& route = routes[data[0] % routes.size()];
  // A route whose body is not JSON (a workdir upload's tar) reads no message from it.
  if (std::string(route.consumes) != "application/json") return 0;
  const absl::string_view rest_of_input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t nul = rest_of_input.find('\0');
  const std::string body(rest_of_input.substr(0, nul));
  const rest::Params params = ParseQuery(
      nul == absl::string_view::npos ? absl::string_view() : rest_of_input.substr(nul + 1));

  const pb::Message* prototype =
      pb::MessageFactory::generated_factory()->GetPrototype(route.request);
  std::unique_ptr<pb::Message> request(prototype->New());
  // POST /v1/jobs also takes a bare JobSpec: its body goes into the request's spec.
  if (!ReadRequest(route, body, params, request.get())) {
    if (route.request->FindFieldByName("spec") == nullptr) return 0;
    rest::Route bare = route;
    bare.body = "spec";
    if (!ReadRequest(bare, body, params, request.get())) return 0;
  }
  // The gRPC edge refuses a request that is not valid on the wire (a string that is not UTF-8);
  // the REST edge hands its request to the Api as is, so it must refuse the same.
  std::unique_ptr<pb::Message> wire(prototype->New());
  if (!wire->ParseFromString(trainctl::fuzz::Bytes(*request))) {
    Fail(route, "it is no valid request on the wire (a string that is not UTF-8?)",
         request->ShortDebugString());
  }
  const std::string json = rest::ToJson(*request);
  std::unique_ptr<pb::Message> again(prototype->New());
  if (absl::Status s = rest::FromJson(json, "body", again.get()); !s.ok()) {
    Fail(route, "its JSON does not parse: " + s.ToString(), json);
  }
  if (trainctl::fuzz::Bytes(*request) != trainctl::fuzz::Bytes(*again)) {
    Fail(route, "its JSON reads back as another request: " + again->ShortDebugString(), json);
  }
  return 0;
}
