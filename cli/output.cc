#include "cli/output.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace trainctl::cli {
namespace {

std::string Sanitize(std::string cell) {
  for (char& c : cell) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return cell;
}

// Whether a JSON string would read back from a plain YAML scalar as something else.
bool NeedsQuotes(const std::string& s) {
  if (s.empty() || s == "~" || absl::EqualsIgnoreCase(s, "null")) return true;
  double d;
  if (absl::SimpleAtod(s, &d)) return true;
  bool b;
  return YAML::convert<bool>::decode(YAML::Node(s), b);
}

void EmitScalar(const YAML::Node& node, YAML::Emitter* out) {
  // A JSON string parses with the non-specific tag "!"; numbers, bools and null with "?".
  if (node.Tag() == "!" && NeedsQuotes(node.Scalar())) {
    *out << YAML::DoubleQuoted << node.Scalar();
  } else {
    *out << node.Scalar();
  }
}

void Emit(const YAML::Node& node, YAML::Emitter* out) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      // Empty collections in flow style ("env: {}"); block style would put them on a line alone.
      if (node.size() == 0) *out << YAML::Flow;
      *out << YAML::BeginMap;
      for (const auto& kv : node) {
        *out << YAML::Key;
        EmitScalar(kv.first, out);
        *out << YAML::Value;
        Emit(kv.second, out);
      }
      *out << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      if (node.size() == 0) *out << YAML::Flow;
      *out << YAML::BeginSeq;
      for (const auto& item : node) Emit(item, out);
      *out << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar:
      EmitScalar(node, out);
      break;
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      *out << YAML::Null;
      break;
  }
}

}  // namespace

absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == "table") return OutputFormat::kTable;
  if (lower == "json") return OutputFormat::kJson;
  if (lower == "yaml") return OutputFormat::kYaml;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown output format \"", text, "\"; use table, json or yaml"));
}

Table::Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }

void Table::AddRow(std::vector<std::string> row) {
  row.resize(rows_[0].size());
  rows_.push_back(std::move(row));
}

std::string Table::Render() const {
  const size_t columns = rows_[0].size();
  std::vector<size_t> width(columns, 0);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < columns; ++c) width[c] = std::max(width[c], DisplayWidth(row[c]));
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t c = 0; c < columns; ++c) {
      const std::string cell = Sanitize(row[c]);
      line += cell;
      if (c + 1 < columns) line += std::string(width[c] - DisplayWidth(cell) + 3, ' ');
    }
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line), "\n");
  }
  return out;
}

void Table::DropEmptyColumns(const std::vector<std::string>& names, absl::string_view fill) {
  for (const std::string& name : names) {
    auto it = std::find(rows_[0].begin(), rows_[0].end(), name);
    if (it == rows_[0].end()) continue;
    const size_t column = it - rows_[0].begin();
    bool any = false;
    for (size_t r = 1; r < rows_.size(); ++r) any |= !rows_[r][column].empty();
    for (size_t r = 0; r < rows_.size(); ++r) {
      if (!any) {
        rows_[r].erase(rows_[r].begin() + column);
      } else if (rows_[r][column].empty()) {
        rows_[r][column] = std::string(fill);
      }
    }
  }
}

std::string RenderFields(const std::vector<std::pair<std::string, std::string>>& fields) {
  size_t width = 0;
  for (const auto& [name, value] : fields) {
    if (!value.empty()) width = std::max(width, DisplayWidth(name) + 1);
  }
  std::string out;
  for (const auto& [name, value] : fields) {
    if (value.empty()) continue;
    absl::StrAppend(&out, name, ":", std::string(width - DisplayWidth(name) - 1 + 2, ' '),
                    Sanitize(value), "\n");
  }
  return out;
}

absl::StatusOr<std::string> MessageToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.always_print_enums_as_ints = false;
  options.preserve_proto_field_names = false;
  std::string json;
  google::protobuf::util::Status status =
      google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("cannot render JSON: ", status.ToString()));
  }
  if (json.empty() || json.back() != '\n') json += '\n';
  return json;
}

absl::StatusOr<std::string> JsonToYaml(const std::string& json) {
  YAML::Emitter out;
  try {
    Emit(YAML::Load(json), &out);
  } catch (const YAML::Exception& e) {
    return absl::InternalError(absl::StrCat("cannot render YAML: ", e.what()));
  }
  if (!out.good())
    return absl::InternalError(absl::StrCat("cannot render YAML: ", out.GetLastError()));
  return absl::StrCat(out.c_str(), "\n");
}

absl::StatusOr<std::string> MessageToYaml(const google::protobuf::Message& message) {
  absl::StatusOr<std::string> json = MessageToJson(message);
  if (!json.ok()) return json.status();
  return JsonToYaml(*json);
}

absl::StatusOr<std::string> MessageToFormat(const google::protobuf::Message& message,
                                            OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson:
      return MessageToJson(message);
    case OutputFormat::kYaml:
      return MessageToYaml(message);
    case OutputFormat::kTable:
      break;
  }
  return absl::InternalError("MessageToFormat renders JSON and YAML only");
}

std::string IndentLines(absl::string_view text, int spaces) {
  const std::string pad(spaces, ' ');
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.find('\n', start), text.size());
    if (end > start) absl::StrAppend(&out, pad, text.substr(start, end - start));
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

size_t DisplayWidth(absl::string_view text) {
  // Count the bytes that start a code point: all but UTF-8 continuation bytes (10xxxxxx).
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

}  // namespace trainctl::cli
