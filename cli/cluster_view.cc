#include "cli/cluster_view.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli/job_view.h"
#include "cli/node_view.h"
#include "cli/states.h"
#include "common/flag_values.h"
#include "common/time_util.h"
#include "google/protobuf/util/time_util.h"

namespace trainctl::cli {
namespace {

// "3.5/4": a fraction of a core prints as such, whole cores without a decimal point.
std::string CpuText(const v1::Node& node) {
  return absl::StrCat(node.free().cpu(), "/", node.allocatable().cpu());
}

std::string MemoryText(const v1::Node& node) {
  return absl::StrCat(node.free().memory_mb(), "/", node.allocatable().memory_mb(), "Mi");
}

std::string GpuText(const v1::Node& node) {
  return absl::StrCat(node.free().gpus(), "/", node.allocatable().gpus());
}

// "3s ago", or "-" when unset.
std::string AgeAgo(const google::protobuf::Timestamp& ts, int64_t now_ms) {
  const int64_t ms = TimestampToMs(ts);
  if (ms <= 0) return "-";
  return absl::StrCat(FormatAge(now_ms - ms), " ago");
}

}  // namespace

absl::StatusOr<NodesOutput> ParseNodesOutput(absl::string_view text) {
  if (absl::AsciiStrToLower(text) == "wide") return NodesOutput{OutputFormat::kTable, true};
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(text);
  if (!format.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown output format \"", text, "\"; use table, wide, json or yaml"));
  }
  return NodesOutput{*format, false};
}

// The queued job the node is kept for and its expected start: "j-abc from 10:00:00Z (in 4m)",
// "j-abc (start unknown)"; "" when none.
std::string ReservedForText(const v1::Node& node, int64_t now_ms) {
  if (!node.has_reservation()) return "";
  const v1::NodeReservation& r = node.reservation();
  if (!r.has_expected_start_time()) return absl::StrCat(r.job_id(), " (start unknown)");
  return absl::StrCat(r.job_id(), " from ", FormatTimestamp(r.expected_start_time()), " (",
                      FormatCountdown(r.expected_start_time(), now_ms), ")");
}

std::vector<std::string> NodeRow(const v1::Node& node, bool wide, int64_t now_ms) {
  std::vector<std::string> row = {node.name(), NodeStateName(node.state()),
                                  NodeHealthName(node.health())};
  if (wide) row.push_back(node.address().empty() ? "-" : node.address());
  for (std::string cell :
       {CpuText(node), MemoryText(node), GpuText(node), absl::StrCat(node.replicas()),
        AgeAgo(node.last_heartbeat_time(), now_ms)}) {
    row.push_back(std::move(cell));
  }
  if (wide) {
    row.push_back(node.agent_version().empty() ? "-" : node.agent_version());
    row.push_back(ReservedForText(node, now_ms));  // dropped when no node is reserved
    row.push_back(node.state_reason());
  }
  return row;
}

std::string RenderNodeList(const google::protobuf::RepeatedPtrField<v1::Node>& nodes, bool wide,
                           int64_t now_ms) {
  std::vector<std::string> header = {"NAME", "STATE", "HEALTH"};
  if (wide) header.push_back("ADDRESS");
  for (const char* name : {"CPU", "MEMORY", "GPUS", "REPLICAS", "HEARTBEAT"}) {
    header.push_back(name);
  }
  if (wide) {
    header.push_back("AGENT");
    header.push_back("RESERVED");
    header.push_back("REASON");
  }
  // A MAINTENANCE column while some node has a window.
  const bool windows = std::any_of(nodes.begin(), nodes.end(),
                                   [](const v1::Node& n) { return n.has_maintenance(); });
  if (windows) header.push_back("MAINTENANCE");
  Table table(std::move(header));
  for (const v1::Node& node : nodes) {
    std::vector<std::string> row = NodeRow(node, wide, now_ms);
    if (windows) row.push_back(node.has_maintenance() ? MaintenanceText(node, now_ms) : "-");
    table.AddRow(std::move(row));
  }
  if (wide) table.DropEmptyColumns({"RESERVED"});  // while some node is kept for a job
  return table.Render();
}

std::string RenderEventList(const google::protobuf::RepeatedPtrField<v1::Event>& events) {
  Table table({"TIME", "TYPE", "JOB", "REPLICA", "NODE", "ACTOR", "REASON"});
  for (const v1::Event& e : events) {
    table.AddRow({FormatRfc3339(TimestampToMs(e.time())), e.type(), e.job_id(), e.replica(),
                  e.node(), e.actor(), e.reason()});
  }
  table.DropEmptyColumns({"JOB", "REPLICA", "NODE", "ACTOR"});
  return table.Render();
}

absl::StatusOr<std::string> FormatNodes(const v1::ListNodesResponse& response, NodesOutput output,
                                        int64_t now_ms) {
  if (output.format == OutputFormat::kTable) {
    return RenderNodeList(response.nodes(), output.wide, now_ms);
  }
  return MessageToFormat(response, output.format);
}

absl::StatusOr<std::string> FormatEvents(const v1::ListEventsResponse& response,
                                         OutputFormat format) {
  if (format == OutputFormat::kTable) return RenderEventList(response.events());
  return MessageToFormat(response, format);
}

absl::StatusOr<int64_t> ParseSince(const std::string& text, int64_t now_ms) {
  absl::StatusOr<int64_t> duration_ms = ParseDurationMs(text);
  if (duration_ms.ok()) return now_ms - *duration_ms;
  google::protobuf::Timestamp ts;
  if (google::protobuf::util::TimeUtil::FromString(text, &ts) && TimestampToMs(ts) > 0) {
    return TimestampToMs(ts);
  }
  return BadFlagValue("--since",
                      "a duration back from now (30s, 10m, 1h30m) or an RFC3339 time "
                      "(2026-01-01T00:00:00Z)",
                      text);
}

}  // namespace trainctl::cli
