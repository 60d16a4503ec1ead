// FillEveryField: every field of every nested message set, with values a round trip can tell
// apart.
#include "tests/common/proto_fill.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainctl/v1/agent.pb.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::testing {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// What a walk over a filled message found.
struct Walk {
  // "queue_status", "attempts[1].budgets_left": fields that are unset, or repeated with a
  // number of elements other than 2.
  std::vector<std::string> unset;
  // Enum fields holding 0, and Timestamps or Durations out of their valid range.
  std::vector<std::string> bad;
  // How often each integer and string value occurs among the scalars that should be distinct.
  std::map<std::string, int> values;
};

void WalkMessage(const Message& m, const std::set<std::string>& excluded, const std::string& path,
                 Walk* w);

void WalkValue(const Message& m, const FieldDescriptor* f, int index,
               const std::set<std::string>& excluded, const std::string& path, Walk* w) {
  const Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_MESSAGE:
      WalkMessage(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f), excluded, path,
                  w);
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      if ((rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f)) == 0) {
        w->bad.push_back(path);
      }
      break;
    case FieldDescriptor::CPPTYPE_INT32:
      ++w->values[absl::StrCat(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f))];
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      ++w->values[absl::StrCat(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f))];
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      ++w->values[rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f)];
      break;
    default:
      break;
  }
}

void WalkMessage(const Message& m, const std::set<std::string>& excluded, const std::string& path,
                 Walk* w) {
  const Descriptor* d = m.GetDescriptor();
  const Reflection* r = m.GetReflection();
  if (d->full_name() == "google.protobuf.Timestamp" ||
      d->full_name() == "google.protobuf.Duration") {
    const int64_t seconds = r->GetInt64(m, d->FindFieldByName("seconds"));
    const int32_t nanos = r->GetInt32(m, d->FindFieldByName("nanos"));
    // Both within the range the JSON mapping accepts (years 1..9999), and nanos a fraction.
    if (seconds <= 0 || seconds > 253402300799 || nanos < 0 || nanos > 999999999 ||
        nanos % 1000000 == 0) {
      w->bad.push_back(path);
    }
    return;
  }
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string at = path.empty() ? f->name() : absl::StrCat(path, ".", f->name());
    if (excluded.count(f->full_name()) > 0) {
      if (f->is_repeated() ? r->FieldSize(m, f) != 0 : r->HasField(m, f)) w->bad.push_back(at);
      continue;
    }
    if (!f->is_repeated()) {
      if (!r->HasField(m, f)) {
        w->unset.push_back(at);
        continue;
      }
      WalkValue(m, f, 0, excluded, at, w);
      continue;
    }
    if (r->FieldSize(m, f) != 2) w->unset.push_back(at);
    for (int j = 0; j < r->FieldSize(m, f); ++j) {
      WalkValue(m, f, j, excluded, absl::StrCat(at, "[", j, "]"), w);
    }
  }
}

TEST_CASE("every field of a job and its nested messages is set, except the excluded ones") {
  const std::set<std::string> excluded = {"trainctl.v1.Job.queue_status"};
  v1::Job job;
  FillEveryField(&job, excluded);
  Walk w;
  WalkMessage(job, excluded, "", &w);
  INFO("unset: " << absl::StrJoin(w.unset, ", "));
  CHECK(w.unset.empty());
  INFO("bad: " << absl::StrJoin(w.bad, ", "));
  CHECK(w.bad.empty());
  CHECK_FALSE(job.has_queue_status());
  // Spot checks of the rules in proto_fill.h.
  CHECK(job.spec().scheduling().has_max_replica_restarts());  // proto3 optional
  CHECK(job.spec().worker_pools(0).env_size() == 2);          // a map: 2 different keys
  CHECK(job.attempts(0).budgets_left().job_retries() !=
        job.attempts(0).budgets_left().internal_retries());
  CHECK(job.replicas(0).pid() > (int64_t{1} << 32));
}

TEST_CASE("filled integers and strings are all different from each other") {
  v1::Job job;
  FillEveryField(&job);
  Walk w;
  WalkMessage(job, {}, "", &w);
  std::vector<std::string> repeated;
  for (const auto& [value, count] : w.values) {
    if (count > 1) repeated.push_back(value);
  }
  INFO("values used more than once: " << absl::StrJoin(repeated, ", "));
  CHECK(repeated.empty());
}

TEST_CASE("a filled message survives serialization and the JSON mapping unchanged") {
  v1::Node node;
  FillEveryField(&node);
  v1::Node parsed;
  REQUIRE(parsed.ParseFromString(node.SerializeAsString()));
  CHECK(Differences(node, parsed) == "");
  // The JSON mapping refuses Timestamps and Durations out of range, and enum values undeclared.
  std::string json;
  REQUIRE(google::protobuf::util::MessageToJsonString(node, &json).ok());
  v1::Node from_json;
  REQUIRE(google::protobuf::util::JsonStringToMessage(json, &from_json).ok());
  CHECK(Differences(node, from_json) == "");
}

TEST_CASE("only the first field of a oneof is set") {
  v1::AgentMessage m;
  FillEveryField(&m);
  const google::protobuf::OneofDescriptor* oneof = m.GetDescriptor()->FindOneofByName("msg");
  REQUIRE(oneof != nullptr);
  const FieldDescriptor* set = m.GetReflection()->GetOneofFieldDescriptor(m, oneof);
  REQUIRE(set != nullptr);
  CHECK(set == oneof->field(0));
}

TEST_CASE("Differences names each differing field by its path") {
  v1::Job a;
  FillEveryField(&a);
  v1::Job b = a;
  CHECK(Differences(a, b) == "");
  b.mutable_attempts(1)->clear_decision();
  b.mutable_spec()->mutable_scheduling()->clear_max_job_retries();
  const std::string diff = Differences(a, b);
  INFO(diff);
  CHECK(diff.find("attempts[1].decision") != std::string::npos);
  CHECK(diff.find("spec.scheduling.max_job_retries") != std::string::npos);
  CHECK(diff.find("attempts[0]") == std::string::npos);
  CHECK(Differences(a, v1::Quota()).find("types differ") != std::string::npos);
}

TEST_CASE("two fills of the same type give the same message") {
  v1::Quota a;
  v1::Quota b;
  FillEveryField(&a);
  FillEveryField(&b);
  CHECK(Differences(a, b) == "");
  CHECK(a.has_gpus());
  CHECK(a.queueing_strategy() != v1::QUEUEING_STRATEGY_UNSPECIFIED);
}

}  // namespace
}  // namespace trainctl::testing
