// libFuzzer target: the job spec parser (common/spec_parse.h) on any text, YAML or JSON. It must
// answer every input with a spec or an error, never crash, and stay within its expansion limits
// (a document of aliases that expands past them is an error, not gigabytes). A spec it accepts
// must read back the same from the JSON that `trainctl get -o json` prints for it: that is the
// document a user edits and submits again.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "common/spec_parse.h"
#include "google/protobuf/util/json_util.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// The largest parsed spec whose JSON is read back.
constexpr size_t kMaxRoundTripBytes = 64 * 1024;

// YAML reads a key of a flow mapping only up to 1024 characters, so JSON with a longer key is
// no YAML; a key of n bytes prints as up to 6n characters ("\u0019").
bool HasLongKey(const trainctl::v1::JobSpec& spec) {
  constexpr size_t kMaxKey = 1024 / 6;
  for (const auto& [key, value] : spec.labels()) {
    if (key.size() > kMaxKey) return true;
  }
  for (const trainctl::v1::WorkerPool& pool : spec.worker_pools()) {
    for (const auto& [key, value] : pool.env()) {
      if (key.size() > kMaxKey) return true;
    }
  }
  return false;
}

void Fail(const std::string& what, const std::string& json) {
  std::fprintf(stderr, "spec_parse_fuzz: %s\nthe spec as JSON: %s\n", what.c_str(), json.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Specs are files of a few KiB; larger inputs only slow the search down.
  if (size > 16 * 1024) return 0;
  const absl::StatusOr<trainctl::v1::JobSpec> spec =
      trainctl::ParseJobSpec(absl::string_view(reinterpret_cast<const char*>(data), size));
  // A document of aliases may expand to a spec of up to kMaxExpandedBytes; printed without the
  // aliases, its JSON would take the parser seconds. Real specs are a few KiB.
  if (!spec.ok() || spec->ByteSizeLong() > kMaxRoundTripBytes || HasLongKey(*spec)) return 0;
  google::protobuf::util::JsonPrintOptions options;  // as `trainctl get -o json` prints
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(*spec, &json, options).ok()) {
    return 0;  // A string that is not UTF-8: JSON cannot carry it.
  }
  const absl::StatusOr<trainctl::v1::JobSpec> again = trainctl::ParseJobSpec(json);
  if (!again.ok()) Fail("its JSON does not parse: " + again.status().ToString(), json);
  if (trainctl::fuzz::Bytes(*spec) != trainctl::fuzz::Bytes(*again)) {
    Fail("its JSON reads back as another spec:\n  parsed:  " + spec->ShortDebugString() +
             "\n  read back: " + again->ShortDebugString(),
         json);
  }
  return 0;
}
