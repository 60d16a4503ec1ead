#include "common/spec_parse.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"

namespace trainctl {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

absl::Status FillMessage(const YAML::Node& node, const std::string& path, Message* message);

// What a node is, for "got ..." in errors: the quoted text of a scalar, or its kind.
std::string Describe(const YAML::Node& node) {
  if (node.IsNull()) return "null";
  if (node.IsSequence()) return "a sequence";
  if (node.IsMap()) return "a mapping";
  std::string text = node.Scalar();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

absl::Status FieldError(const std::string& path, absl::string_view what) {
  if (path.empty()) return absl::InvalidArgumentError(what);
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

absl::Status TypeError(const std::string& path, absl::string_view expected,
                       const YAML::Node& node) {
  return FieldError(path, absl::StrCat("expected ", expected, ", got ", Describe(node)));
}

std::string JoinPath(const std::string& path, absl::string_view field) {
  return path.empty() ? std::string(field) : absl::StrCat(path, ".", field);
}

// "JobState" -> "JOB_STATE_": the prefix protobuf style puts on every value of an enum.
std::string EnumValuePrefix(const EnumDescriptor* type) {
  std::string prefix;
  const std::string& name = type->name();
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (i > 0 && absl::ascii_isupper(c) && !absl::ascii_isupper(name[i - 1])) prefix += '_';
    prefix += absl::ascii_toupper(c);
  }
  return prefix + "_";
}

// "IfNotPresent" -> "IF_NOT_PRESENT": a value name written in CamelCase, as Kubernetes writes
// its enums (imagePullPolicy: IfNotPresent).
std::string CamelToUpperSnake(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i > 0 && absl::ascii_isupper(c) &&
        (absl::ascii_islower(text[i - 1]) || absl::ascii_isdigit(text[i - 1]))) {
      out += '_';
    }
    out += absl::ascii_toupper(c);
  }
  return out;
}

// Parses an integer scalar within [min, max]. Integral floats ("3.0", "1e3") are accepted, as in
// protobuf's JSON mapping.
absl::StatusOr<int64_t> ParseInt(const YAML::Node& node, const std::string& path, int64_t min,
                                 int64_t max, absl::string_view type_name) {
  if (!node.IsScalar()) return TypeError(path, "an integer", node);
  const std::string& text = node.Scalar();
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    double d = 0;
    if (!absl::SimpleAtod(text, &d) || !std::isfinite(d) || d != std::trunc(d)) {
      return TypeError(path, "an integer", node);
    }
    if (d < -9.2e18 || d > 9.2e18) {
      return FieldError(path, absl::StrCat(text, " is out of range for ", type_name));
    }
    value = static_cast<int64_t>(d);
  }
  if (value < min || value > max) {
    return FieldError(
        path, absl::StrCat(text, " is out of range for ", type_name, " (", min, "..", max, ")"));
  }
  return value;
}

absl::StatusOr<uint64_t> ParseUint(const YAML::Node& node, const std::string& path, uint64_t max,
                                   absl::string_view type_name) {
  if (!node.IsScalar()) return TypeError(path, "a non-negative integer", node);
  uint64_t value = 0;
  if (!absl::SimpleAtoi(node.Scalar(), &value)) {
    return TypeError(path, "a non-negative integer", node);
  }
  if (value > max) {
    return FieldError(path, absl::StrCat(node.Scalar(), " is out of range for ", type_name));
  }
  return value;
}

absl::StatusOr<double> ParseDouble(const YAML::Node& node, const std::string& path) {
  double value = 0;
  if (!node.IsScalar() || !absl::SimpleAtod(node.Scalar(), &value) || !std::isfinite(value)) {
    return TypeError(path, "a number", node);
  }
  return value;
}

absl::StatusOr<bool> ParseBool(const YAML::Node& node, const std::string& path) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return TypeError(path, "true or false", node);
  }
  return value;
}

absl::StatusOr<const EnumValueDescriptor*> ParseEnum(const YAML::Node& node,
                                                     const std::string& path,
                                                     const EnumDescriptor* type) {
  const std::string prefix = EnumValuePrefix(type);
  if (node.IsScalar()) {
    const std::string upper = absl::AsciiStrToUpper(node.Scalar());
    const std::string snake = CamelToUpperSnake(node.Scalar());
    for (const std::string& name : {node.Scalar(), upper, prefix + upper, prefix + snake}) {
      if (const EnumValueDescriptor* value = type->FindValueByName(name)) return value;
    }
    int number = 0;
    if (absl::SimpleAtoi(node.Scalar(), &number)) {
      if (const EnumValueDescriptor* value = type->FindValueByNumber(number)) return value;
    }
  }
  std::vector<std::string> known;
  for (int i = 0; i < type->value_count(); ++i) {
    absl::string_view name = type->value(i)->name();
    if (absl::StartsWith(name, prefix)) name.remove_prefix(prefix.size());
    if (type->value(i)->number() != 0) known.push_back(std::string(name));
  }
  return FieldError(
      path, absl::StrCat("expected one of ", absl::StrJoin(known, ", "), ", got ", Describe(node)));
}

// Fills a message-typed value: Duration and Timestamp from their JSON-mapping strings, anything
// else from a mapping.
absl::Status FillMessageValue(const YAML::Node& node, const std::string& path, Message* message) {
  const std::string& type = message->GetDescriptor()->full_name();
  if (type == "google.protobuf.Duration" && !node.IsMap()) {
    if (!node.IsScalar()) return TypeError(path, "a duration such as \"30s\" or \"1h30m\"", node);
    absl::StatusOr<int64_t> ms = ParseDurationMs(node.Scalar());
    if (!ms.ok()) return FieldError(path, ms.status().message());
    message->CopyFrom(MsToDuration(*ms));
    return absl::OkStatus();
  }
  if (type == "google.protobuf.Timestamp" && !node.IsMap()) {
    google::protobuf::Timestamp ts;
    if (!node.IsScalar() || !google::protobuf::util::TimeUtil::FromString(node.Scalar(), &ts)) {
      return TypeError(path, "an RFC 3339 time such as \"2024-01-02T15:04:05Z\"", node);
    }
    message->CopyFrom(ts);
    return absl::OkStatus();
  }
  return FillMessage(node, path, message);
}

// Sets a singular field, or appends to a repeated one, from a non-null node.
absl::Status SetValue(const YAML::Node& node, const std::string& path, const FieldDescriptor* field,
                      Message* message) {
  const Reflection* r = message->GetReflection();
  const bool add = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      TC_ASSIGN_OR_RETURN(int64_t v, ParseInt(node, path, std::numeric_limits<int32_t>::min(),
                                              std::numeric_limits<int32_t>::max(), "int32"));
      add ? r->AddInt32(message, field, v) : r->SetInt32(message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      TC_ASSIGN_OR_RETURN(int64_t v, ParseInt(node, path, std::numeric_limits<int64_t>::min(),
                                              std::numeric_limits<int64_t>::max(), "int64"));
      add ? r->AddInt64(message, field, v) : r->SetInt64(message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      TC_ASSIGN_OR_RETURN(uint64_t v,
                          ParseUint(node, path, std::numeric_limits<uint32_t>::max(), "uint32"));
      add ? r->AddUInt32(message, field, v) : r->SetUInt32(message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      TC_ASSIGN_OR_RETURN(uint64_t v,
                          ParseUint(node, path, std::numeric_limits<uint64_t>::max(), "uint64"));
      add ? r->AddUInt64(message, field, v) : r->SetUInt64(message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      TC_ASSIGN_OR_RETURN(double v, ParseDouble(node, path));
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
        add ? r->AddFloat(message, field, v) : r->SetFloat(message, field, v);
      } else {
        add ? r->AddDouble(message, field, v) : r->SetDouble(message, field, v);
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      TC_ASSIGN_OR_RETURN(bool v, ParseBool(node, path));
      add ? r->AddBool(message, field, v) : r->SetBool(message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      TC_ASSIGN_OR_RETURN(const EnumValueDescriptor* v, ParseEnum(node, path, field->enum_type()));
      add ? r->AddEnum(message, field, v) : r->SetEnum(message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      if (!node.IsScalar()) return TypeError(path, "a string", node);
      std::string v = node.Scalar();
      if (field->type() == FieldDescriptor::TYPE_BYTES &&
          !absl::Base64Unescape(node.Scalar(), &v)) {
        return TypeError(path, "base64 data", node);
      }
      // A proto3 string must be UTF-8: the wire would refuse the spec later, with no field path.
      if (field->type() == FieldDescriptor::TYPE_STRING &&
          !google::protobuf::internal::IsStructurallyValidUTF8(v.data(),
                                                               static_cast<int>(v.size()))) {
        return FieldError(path, "must be valid UTF-8");
      }
      add ? r->AddString(message, field, std::move(v)) : r->SetString(message, field, std::move(v));
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      Message* sub = add ? r->AddMessage(message, field) : r->MutableMessage(message, field);
      return FillMessageValue(node, path, sub);
    }
  }
  return absl::OkStatus();
}

absl::Status FillRepeated(const YAML::Node& node, const std::string& path,
                          const FieldDescriptor* field, Message* message) {
  if (!node.IsSequence()) return TypeError(path, "a sequence", node);
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string item_path = absl::StrCat(path, "[", i, "]");
    if (node[i].IsNull()) return TypeError(item_path, "a value", node[i]);
    TC_RETURN_IF_ERROR(SetValue(node[i], item_path, field, message));
  }
  return absl::OkStatus();
}

// A map field is a repeated entry message with `key` and `value` fields.
absl::Status FillMap(const YAML::Node& node, const std::string& path, const FieldDescriptor* field,
                     Message* message) {
  if (!node.IsMap()) return TypeError(path, "a mapping", node);
  const FieldDescriptor* key_field = field->message_type()->map_key();
  const FieldDescriptor* value_field = field->message_type()->map_value();
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return TypeError(path, "scalar keys", kv.first);
    const std::string& key = kv.first.Scalar();
    const std::string entry_path = absl::StrCat(path, "[\"", absl::CHexEscape(key), "\"]");
    if (!seen.insert(key).second) return FieldError(entry_path, "duplicate key");
    Message* entry = message->GetReflection()->AddMessage(message, field);
    TC_RETURN_IF_ERROR(SetValue(kv.first, entry_path, key_field, entry));
    // A null value leaves the entry's value at its default ("" for strings).
    if (!kv.second.IsNull())
      TC_RETURN_IF_ERROR(SetValue(kv.second, entry_path, value_field, entry));
  }
  return absl::OkStatus();
}

const FieldDescriptor* FindField(const Descriptor* type, const std::string& key) {
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* field = type->field(i);
    if (field->json_name() == key || field->name() == key) return field;
  }
  return nullptr;
}

absl::Status FillMessage(const YAML::Node& node, const std::string& path, Message* message) {
  if (!node.IsMap()) return TypeError(path, "a mapping", node);
  const Descriptor* type = message->GetDescriptor();
  std::set<const FieldDescriptor*> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return TypeError(path, "field names as keys", kv.first);
    const std::string& key = kv.first.Scalar();
    const FieldDescriptor* field = FindField(type, key);
    if (field == nullptr) {
      std::vector<std::string> known;
      for (int i = 0; i < type->field_count(); ++i) known.push_back(type->field(i)->json_name());
      return FieldError(JoinPath(path, key),
                        absl::StrCat("unknown field; known fields: ", absl::StrJoin(known, ", ")));
    }
    const std::string field_path = JoinPath(path, field->json_name());
    if (!seen.insert(field).second) return FieldError(field_path, "field given more than once");
    if (const auto* oneof = field->real_containing_oneof()) {
      for (int i = 0; i < oneof->field_count(); ++i) {
        if (oneof->field(i) != field && seen.count(oneof->field(i)) > 0) {
          return FieldError(
              field_path, absl::StrCat("only one of the fields of ", oneof->name(), " may be set"));
        }
      }
    }
    if (kv.second.IsNull()) continue;  // null leaves the field unset
    if (field->is_map()) {
      TC_RETURN_IF_ERROR(FillMap(kv.second, field_path, field, message));
    } else if (field->is_repeated()) {
      TC_RETURN_IF_ERROR(FillRepeated(kv.second, field_path, field, message));
    } else {
      TC_RETURN_IF_ERROR(SetValue(kv.second, field_path, field, message));
    }
  }
  return absl::OkStatus();
}

absl::Status WithPrefix(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, ": ", status.message()));
}

// Counts the nodes of `node` as the conversion will walk them, aliases expanded, and the bytes of
// their scalars; an error as soon as either passes its limit, or the nesting passes
// kMaxNestingDepth. The depth limit is what stops an alias inside its own anchor (`&n {a: *n}`),
// which yaml-cpp loads as a node that contains itself: walked without it, the recursion runs out
// of stack long before the node count is reached.
absl::Status WithinExpansion(const YAML::Node& node, int depth, int64_t* nodes, int64_t* bytes) {
  if (depth > kMaxNestingDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the document nests more than ", kMaxNestingDepth,
        " levels deep; an alias inside its own anchor (such as `&a {b: *a}`) nests without end"));
  }
  if (node.IsScalar()) *bytes += static_cast<int64_t>(node.Scalar().size());
  if (++*nodes > kMaxExpandedNodes || *bytes > kMaxExpandedBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the document expands to more than ", kMaxExpandedNodes, " values or ",
                     kMaxExpandedBytes >> 20,
                     " MiB of text once its aliases (*name) are expanded; write the "
                     "repeated parts out, or repeat less"));
  }
  if (node.IsSequence()) {
    for (const YAML::Node& child : node) {
      TC_RETURN_IF_ERROR(WithinExpansion(child, depth + 1, nodes, bytes));
    }
  } else if (node.IsMap()) {
    for (const auto& kv : node) {
      TC_RETURN_IF_ERROR(WithinExpansion(kv.first, depth + 1, nodes, bytes));
      TC_RETURN_IF_ERROR(WithinExpansion(kv.second, depth + 1, nodes, bytes));
    }
  }
  return absl::OkStatus();
}

// Takes every parse event and keeps none: for counting documents.
class IgnoreEvents : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The number of documents in `text`, counting no further than `limit`. Throws YAML::Exception
// for malformed text. Not YAML::LoadAll: on some malformed text (a 688-byte spec found by
// tests/fuzz/spec_parse_fuzz) yaml-cpp 0.7 returns "another document" forever, and LoadAll never
// returns.
int CountDocuments(const std::string& text, int limit) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  IgnoreEvents ignore;
  int count = 0;
  while (count < limit && parser.HandleNextDocument(ignore)) ++count;
  return count;
}

}  // namespace

absl::Status ParseYamlToMessage(absl::string_view text, Message* message) {
  message->Clear();
  std::vector<YAML::Node> docs;
  try {
    const std::string document(text);
    if (CountDocuments(document, 2) > 1) {
      return absl::InvalidArgumentError(
          "expected a single document, found more than one (separated by ---)");
    }
    docs.push_back(YAML::Load(document));
  } catch (const YAML::Exception& e) {
    // yaml-cpp marks are 0-based.
    return absl::InvalidArgumentError(absl::StrCat("invalid YAML at line ", e.mark.line + 1,
                                                   ", column ", e.mark.column + 1, ": ", e.msg));
  }
  if (docs[0].IsNull()) {
    return absl::InvalidArgumentError(
        "empty document: expected a mapping of field names to values");
  }
  if (!docs[0].IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the top level must be a mapping of field names to values, got ", Describe(docs[0])));
  }
  int64_t nodes = 0;
  int64_t bytes = 0;
  TC_RETURN_IF_ERROR(WithinExpansion(docs[0], 0, &nodes, &bytes));
  try {
    return FillMessage(docs[0], "", message);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid YAML at line ", e.mark.line + 1,
                                                   ", column ", e.mark.column + 1, ": ", e.msg));
  }
}

absl::StatusOr<v1::JobSpec> ParseJobSpec(absl::string_view text) {
  v1::JobSpec spec;
  TC_RETURN_IF_ERROR(ParseYamlToMessage(text, &spec));
  return spec;
}

absl::StatusOr<v1::JobSpec> ParseJobSpecFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (std::cin.bad()) return absl::InvalidArgumentError("cannot read the job spec from stdin");
  } else {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) {
      const int err = errno;
      std::string what = absl::StrCat("cannot open job spec ", path, ": ", std::strerror(err));
      return err == ENOENT ? absl::NotFoundError(what) : absl::InvalidArgumentError(what);
    }
    char buf[8192];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), file)) > 0) text.append(buf, n);
    const bool failed = std::ferror(file) != 0;
    std::fclose(file);
    if (failed) return absl::InvalidArgumentError(absl::StrCat("cannot read job spec ", path));
  }
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(text);
  if (!spec.ok()) return WithPrefix(spec.status(), path == "-" ? "<stdin>" : path);
  return spec;
}

}  // namespace trainctl
