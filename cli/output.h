// Rendering helpers for trainctl's output: aligned tables, "Key: value" blocks, and the JSON and
// YAML forms of protobuf messages.
//
//   Table table({"ID", "STATE"});
//   table.AddRow({"j-abc", "RUNNING"});
//   std::cout << table.Render();   // "ID      STATE\nj-abc   RUNNING\n"
//
// Pure functions; thread-compatible.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace trainctl::cli {

enum class OutputFormat { kTable, kJson, kYaml };

// "table", "json" or "yaml" (any case); INVALID_ARGUMENT otherwise.
absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view text);

// A kubectl-like table: left-aligned columns sized to their widest cell (in characters, not bytes),
// separated by three spaces, with no trailing spaces. Control characters in cells (a newline in a
// job name) are shown as spaces so that every row stays on one line.
class Table {
 public:
  explicit Table(std::vector<std::string> header);

  // REQUIRES: row.size() == the header's size; missing cells are added empty, extra ones dropped.
  void AddRow(std::vector<std::string> row);

  size_t row_count() const { return rows_.size() - 1; }

  // For each column named in `names`: drops it when its cell is empty in every row, else shows
  // its empty cells as `fill`. For tables whose rows fill different columns (events of a job
  // have no node; node events no job). Call after the last AddRow.
  void DropEmptyColumns(const std::vector<std::string>& names, absl::string_view fill = "-");

  // Every line, the header first, each ending in '\n'.
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
};

// "Name:   value" lines with the values aligned; rows with an empty value are skipped.
std::string RenderFields(const std::vector<std::pair<std::string, std::string>>& fields);

// Protobuf's JSON mapping, as `get -o json` prints it: every field (defaults included), enum
// names, lowerCamelCase names, indented, ending in '\n'.
absl::StatusOr<std::string> MessageToJson(const google::protobuf::Message& message);

// MessageToJson re-rendered with JsonToYaml, as `get -o yaml` prints it.
absl::StatusOr<std::string> MessageToYaml(const google::protobuf::Message& message);

// The message in `format`: MessageToJson or MessageToYaml. INTERNAL for kTable, which each
// command renders its own way.
absl::StatusOr<std::string> MessageToFormat(const google::protobuf::Message& message,
                                            OutputFormat format);

// Re-renders a JSON document as block-style YAML with the same content, ending in '\n'. JSON
// strings that would read back as another type in YAML ("12", "true", "") stay quoted.
absl::StatusOr<std::string> JsonToYaml(const std::string& json);

// Prefixes every non-empty line of `text` with `spaces` spaces.
std::string IndentLines(absl::string_view text, int spaces);

// The number of characters (UTF-8 code points) in `text`.
size_t DisplayWidth(absl::string_view text);

}  // namespace trainctl::cli
