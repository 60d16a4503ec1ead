#include "server/rest/rest_json.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace trainctl::server::rest {
namespace {

namespace pb = google::protobuf;

const pb::FieldDescriptor* FindField(const pb::Descriptor* type, const std::string& name) {
  const pb::FieldDescriptor* f = type->FindFieldByCamelcaseName(name);
  if (f == nullptr) f = type->FindFieldByName(name);
  return f;
}

std::string KnownNames(const pb::Descriptor* type, const std::vector<std::string>& skip) {
  std::vector<std::string> names;
  for (int i = 0; i < type->field_count(); ++i) names.push_back(type->field(i)->json_name());
  names.insert(names.end(), skip.begin(), skip.end());
  std::string out;
  for (const std::string& n : names) absl::StrAppend(&out, out.empty() ? "" : ", ", n);
  return out;
}

// "TYPE_INT32" as "int32", "type.googleapis.com/trainctl.v1.RestartPolicy" as
// "trainctl.v1.RestartPolicy".
std::string TypeName(absl::string_view type) {
  if (absl::ConsumePrefix(&type, "TYPE_")) return absl::AsciiStrToLower(type);
  absl::ConsumePrefix(&type, "type.googleapis.com/");
  return std::string(type);
}

}  // namespace

std::string InJsonNames(const pb::Descriptor* root, const std::string& message) {
  absl::string_view rest = message;
  std::string loc;
  if (absl::ConsumePrefix(&rest, "(")) {
    const size_t close = rest.find(')');
    if (close == absl::string_view::npos) return message;
    loc = std::string(rest.substr(0, close));
    rest.remove_prefix(close + 1);
  }
  // The path in JSON names; `type` the message at its end, `leaf` its last field.
  std::string path;
  const pb::Descriptor* type = root;
  const pb::FieldDescriptor* leaf = nullptr;
  for (absl::string_view segment : absl::StrSplit(loc, '.', absl::SkipEmpty())) {
    const size_t bracket = std::min(segment.find('['), segment.size());
    leaf =
        type == nullptr ? nullptr : type->FindFieldByName(std::string(segment.substr(0, bracket)));
    if (leaf == nullptr) return message;
    absl::StrAppend(&path, path.empty() ? "" : ".", leaf->json_name());
    if (leaf->is_map()) {
      // "env[0].value": protobuf counts a map's entries; the user wrote keys. Name the map.
      leaf = leaf->message_type()->map_value();
      type = nullptr;
      break;
    }
    absl::StrAppend(&path, segment.substr(bracket));
    type = leaf->message_type();
  }
  const std::string at = path.empty() ? "" : absl::StrCat(path, ": ");
  if (absl::ConsumeSuffix(&rest, ": Cannot find field.")) {
    absl::ConsumePrefix(&rest, " ");
    return absl::StrCat(at, type == nullptr ? "it" : type->name(), " has no field \"", rest, "\"");
  }
  constexpr absl::string_view kForType = " for type ";
  if (absl::ConsumePrefix(&rest, ": invalid value ") && rest.rfind(kForType) != rest.npos) {
    const size_t for_type = rest.rfind(kForType);
    absl::string_view value = rest.substr(0, for_type);
    const std::string type_name = TypeName(rest.substr(for_type + kForType.size()));
    // Well-known types explain themselves: "Field 'timeout', Illegal duration format; ...".
    if (absl::ConsumePrefix(&value, "Field '") && value.find("', ") != value.npos) {
      return absl::StrCat(at, value.substr(value.find("', ") + 3), " (", type_name, ")");
    }
    std::string out = absl::StrCat(at, "invalid value ", value, " for type ", type_name);
    if (leaf != nullptr && leaf->enum_type() != nullptr) {
      std::vector<std::string> names;
      for (int i = 0; i < leaf->enum_type()->value_count(); ++i) {
        names.push_back(leaf->enum_type()->value(i)->name());
      }
      absl::StrAppend(&out, "; one of ", absl::StrJoin(names, ", "));
    }
    return out;
  }
  return path.empty() ? message : absl::StrCat(path, rest);
}

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

std::string StatusJson(const absl::Status& status) {
  pb::Value message;
  message.set_string_value(std::string(status.message()));
  std::string quoted;
  (void)pb::util::MessageToJsonString(message, &quoted);
  return absl::StrCat("{\"code\":", static_cast<int>(status.code()), ",\"message\":", quoted,
                      ",\"details\":[]}");
}

std::string ToJson(const pb::Message& message) {
  pb::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string json;
  (void)pb::util::MessageToJsonString(message, &json, options);
  return json;
}

absl::Status FromJson(const std::string& json, const std::string& what, pb::Message* out) {
  out->Clear();
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  pb::util::Status parsed = pb::util::JsonStringToMessage(json, out, options);
  if (parsed.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is not a valid ", out->GetDescriptor()->name(), ": ",
                   InJsonNames(out->GetDescriptor(), std::string(parsed.message()))));
}

absl::Status SetFields(const Params& params, const std::vector<std::string>& skip,
                       pb::Message* out) {
  const std::set<std::string> skipped(skip.begin(), skip.end());
  pb::Struct root;
  std::set<std::string> seen;
  for (const auto& [name, value] : params) {
    if (skipped.count(name) > 0) continue;
    const pb::Descriptor* type = out->GetDescriptor();
    pb::Struct* at = &root;
    const pb::FieldDescriptor* field = nullptr;
    std::vector<std::string> parts = absl::StrSplit(name, '.');
    for (size_t i = 0; i < parts.size(); ++i) {
      field = type == nullptr ? nullptr : FindField(type, parts[i]);
      if (field == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown parameter \"", name,
                         "\"; this route takes: ", KnownNames(out->GetDescriptor(), skip)));
      }
      if (i + 1 < parts.size()) {
        if (field->type() != pb::FieldDescriptor::TYPE_MESSAGE || field->is_repeated()) {
          return absl::InvalidArgumentError(
              absl::StrCat("parameter \"", name, "\": ", parts[i], " has no fields"));
        }
        at = (*at->mutable_fields())[field->json_name()].mutable_struct_value();
        type = field->message_type();
      }
    }
    pb::Value& v = (*at->mutable_fields())[field->json_name()];
    if (field->is_repeated()) {
      for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        v.mutable_list_value()->add_values()->set_string_value(std::string(item));
      }
      continue;
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("parameter \"", name, "\" is given twice"));
    }
    if (field->type() == pb::FieldDescriptor::TYPE_BOOL) {
      if (value != "true" && value != "false") {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter \"", name, "\" must be true or false, got \"", value, "\""));
      }
      v.set_bool_value(value == "true");
    } else {
      v.set_string_value(value);
    }
  }
  if (root.fields().empty()) return absl::OkStatus();
  std::string json;
  (void)pb::util::MessageToJsonString(root, &json);
  std::unique_ptr<pb::Message> parsed(out->New());
  pb::util::JsonParseOptions options;
  pb::util::Status status = pb::util::JsonStringToMessage(json, parsed.get(), options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad parameter: ", InJsonNames(out->GetDescriptor(), std::string(status.message()))));
  }
  out->MergeFrom(*parsed);
  return absl::OkStatus();
}

}  // namespace trainctl::server::rest
