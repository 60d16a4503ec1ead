#include "cli/cluster_view.h"

#include "absl/strings/str_cat.h"
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

std::string NodeStatus(const v1::Node& node) { return node.connected() ? "Ready" : "Disconnected"; }

std::vector<std::string> NodeRow(const v1::Node& node, int64_t now_ms) {
  return {node.name(),
          NodeStatus(node),
          node.address().empty() ? "-" : node.address(),
          CpuText(node),
          MemoryText(node),
          GpuText(node),
          absl::StrCat(node.replicas()),
          AgeAgo(node.last_heartbeat_time(), now_ms)};
}

std::string RenderNodeList(const google::protobuf::RepeatedPtrField<v1::Node>& nodes,
                           int64_t now_ms) {
  Table table({"NAME", "STATUS", "ADDRESS", "CPU", "MEMORY", "GPUS", "REPLICAS", "HEARTBEAT"});
  for (const v1::Node& node : nodes) table.AddRow(NodeRow(node, now_ms));
  return table.Render();
}

std::string RenderEventList(const google::protobuf::RepeatedPtrField<v1::Event>& events) {
  Table table({"TIME", "TYPE", "JOB", "REPLICA", "NODE", "REASON"});
  for (const v1::Event& e : events) {
    table.AddRow({FormatRfc3339(TimestampToMs(e.time())), e.type(), e.job_id(), e.replica(),
                  e.node(), e.reason()});
  }
  table.DropEmptyColumns({"JOB", "REPLICA", "NODE"});
  return table.Render();
}

absl::StatusOr<std::string> FormatNodes(const v1::ListNodesResponse& response, OutputFormat format,
                                        int64_t now_ms) {
  if (format == OutputFormat::kTable) return RenderNodeList(response.nodes(), now_ms);
  return MessageToFormat(response, format);
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
  return absl::InvalidArgumentError(
      absl::StrCat("invalid --since \"", text,
                   "\": use a duration back from now (30s, 10m, 1h30m) or an RFC3339 time "
                   "(2026-01-01T00:00:00Z)"));
}

}  // namespace trainctl::cli
