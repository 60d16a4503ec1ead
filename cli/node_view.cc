#include "cli/node_view.h"

#include <iterator>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/states.h"
#include "common/byte_size.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

std::string YesNo(bool b) { return b ? "yes" : "no"; }

// "2026-11-21T03:44:36Z (5m ago)", or "" when unset.
std::string TimeAndAge(const google::protobuf::Timestamp& ts, int64_t now_ms) {
  const int64_t ms = TimestampToMs(ts);
  if (ms <= 0) return "";
  return absl::StrCat(FormatRfc3339(ms), " (", FormatAge(now_ms - ms), " ago)");
}

// "ISOLATED since 2026-11-21T03:44:36Z (5m ago)", or the state alone without a state time.
std::string StateText(const v1::Node& node, int64_t now_ms) {
  const std::string since = TimeAndAge(node.state_time(), now_ms);
  const std::string state = NodeStateName(node.state());
  return since.empty() ? state : absl::StrCat(state, " since ", since);
}

std::string FlappingText(const v1::Node& node) {
  if (!node.flapping()) return "no";
  return absl::StrCat("yes: stays out until an operator runs 'trainctl node uncordon ", node.name(),
                      "'");
}

// "3 in the flapping window: t1, t2, t3", or "" when none.
std::string IsolationsText(const v1::Node& node) {
  if (node.isolation_times().empty()) return "";
  std::vector<std::string> times;
  for (const google::protobuf::Timestamp& ts : node.isolation_times()) {
    times.push_back(FormatRfc3339(TimestampToMs(ts)));
  }
  return absl::StrCat(times.size(), " in the flapping window: ", absl::StrJoin(times, ", "));
}

std::string DrainDeadlineText(const v1::Node& node) {
  if (node.state() != v1::NODE_STATE_DRAINING) return "";
  if (!node.has_drain_deadline()) return "each job's stopGracePeriod";
  return FormatDuration(DurationToMs(node.drain_deadline()));
}

}  // namespace

std::string MaintenanceText(const v1::Node& node, int64_t now_ms) {
  if (!node.has_maintenance()) return "";
  const v1::MaintenanceWindow& w = node.maintenance();
  const int64_t start = TimestampToMs(w.start_time());
  const int64_t end = start + DurationToMs(w.duration());
  std::string text = start <= now_ms
                         ? absl::StrCat("now, until ", FormatRfc3339(end), " (", w.reason(), ")")
                         : absl::StrCat(FormatRfc3339(start), " for ",
                                        FormatDurationExact(DurationToMs(w.duration())), ", in ",
                                        FormatAge(start - now_ms), " (", w.reason(), ")");
  if (w.source() == "agent") absl::StrAppend(&text, " [agent]");
  return text;
}

namespace {

// "k=v, k2=v2", sorted by key.
std::string LabelsText(const google::protobuf::Map<std::string, std::string>& labels) {
  const std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  return absl::StrJoin(sorted, ", ", absl::PairFormatter("="));
}

std::string ResourcesSection(const v1::Node& node) {
  Table table({"RESOURCE", "CAPACITY", "ALLOCATABLE", "FREE"});
  const v1::Resources& cap = node.capacity();
  const v1::Resources& alloc = node.allocatable();
  const v1::Resources& free = node.free();
  table.AddRow(
      {"cpu", absl::StrCat(cap.cpu()), absl::StrCat(alloc.cpu()), absl::StrCat(free.cpu())});
  table.AddRow({"memory", absl::StrCat(cap.memory_mb(), "Mi"),
                absl::StrCat(alloc.memory_mb(), "Mi"), absl::StrCat(free.memory_mb(), "Mi")});
  table.AddRow(
      {"gpus", absl::StrCat(cap.gpus()), absl::StrCat(alloc.gpus()), absl::StrCat(free.gpus())});
  return absl::StrCat("\nResources:\n", IndentLines(table.Render(), 2),
                      "  Replicas placed: ", node.replicas(), "\n");
}

// One row per GPU: index, model, memory, UUID, NUMA node, NVLink group, and the replica and run
// holding it. Columns nothing fills are dropped; synthetic GPUs (--gpus N) show index and holder.
std::string GpusSection(const v1::Node& node) {
  if (node.gpu_devices().empty()) return "";
  Table table({"GPU", "MODEL", "MEMORY", "UUID", "NUMA", "NVLINK", "HELD-BY", "RUN"});
  for (const v1::GpuDevice& d : node.gpu_devices()) {
    table.AddRow({absl::StrCat(d.index()), d.model(),
                  d.memory_mb() > 0 ? absl::StrCat(d.memory_mb(), "Mi") : "", d.uuid(),
                  d.numa_node() >= 0 ? absl::StrCat(d.numa_node()) : "",
                  d.nvlink_group() >= 0 ? absl::StrCat("group ", d.nvlink_group()) : "",
                  d.holder().empty() ? "free" : d.holder(), d.run_id()});
  }
  table.DropEmptyColumns({"MODEL", "MEMORY", "UUID", "NUMA", "NVLINK", "RUN"});
  return absl::StrCat("\nGPUs:\n", IndentLines(table.Render(), 2));
}

std::string ConfigSection(const v1::Node& node) {
  if (node.config().empty()) return "";
  const std::map<std::string, std::string> sorted(node.config().begin(), node.config().end());
  std::vector<std::pair<std::string, std::string>> fields(sorted.begin(), sorted.end());
  for (auto& [key, value] : fields) {
    if (value.empty()) value = "-";  // RenderFields would drop the key
  }
  return absl::StrCat("\nConfig:\n", IndentLines(RenderFields(fields), 2));
}

// "preflight  FAILED  2026-11-21T03:44:36Z (5m ago)  job j-abc"
std::string CheckRunLine(const v1::CheckRun& run, int64_t now_ms) {
  std::vector<std::string> parts = {run.phase().empty() ? "-" : run.phase(),
                                    run.passed() ? "PASSED" : "FAILED"};
  const std::string when = TimeAndAge(run.time(), now_ms);
  if (!when.empty()) parts.push_back(when);
  if (!run.job_id().empty()) parts.push_back(absl::StrCat("job ", run.job_id()));
  return absl::StrJoin(parts, "  ");
}

std::string ChecksSection(const v1::Node& node, int64_t now_ms) {
  if (node.checks().empty()) return "";
  std::string out = "\nChecks:\n";
  for (const v1::CheckRun& run : node.checks()) {
    absl::StrAppend(&out, "  ", CheckRunLine(run, now_ms), "\n");
    for (const v1::CheckResult& item : run.items()) {
      absl::StrAppend(&out, "    ", CheckItemLine(item), "\n");
    }
  }
  return out;
}

std::string EventsSection(const google::protobuf::RepeatedPtrField<v1::Event>& events) {
  if (events.empty()) return "\nRecent events:  <none>\n";
  Table table({"TIME", "TYPE", "JOB", "REPLICA", "REASON"});
  for (const v1::Event& e : events) {
    const int64_t ms = TimestampToMs(e.time());
    table.AddRow({ms > 0 ? FormatRfc3339(ms) : "-", e.type(), e.job_id(), e.replica(), e.reason()});
  }
  table.DropEmptyColumns({"JOB", "REPLICA"});
  return absl::StrCat("\nRecent events:\n", IndentLines(table.Render(), 2));
}

// {"node": ..., "events": [...]}, indented as MessageToJson indents (one space per level).
absl::StatusOr<std::string> NodeDescriptionJson(const v1::Node& node,
                                                const v1::ListEventsResponse& events) {
  TC_ASSIGN_OR_RETURN(std::string node_json, MessageToJson(node));
  TC_ASSIGN_OR_RETURN(std::string events_json, MessageToJson(events));
  // events_json is "{\n \"events\": [...]\n}\n": keep its one member.
  const size_t open = events_json.find('\n');
  const size_t close = events_json.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return absl::InternalError("cannot render JSON: unexpected events document");
  }
  const std::string events_member = events_json.substr(open + 1, close - open - 1);
  while (!node_json.empty() && node_json.back() == '\n') node_json.pop_back();
  // One level deeper; the first line ("{") follows the key.
  const std::string nested = IndentLines(node_json, 1).substr(1);
  return absl::StrCat("{\n \"node\": ", nested, ",\n", events_member, "}\n");
}

// The fingerprint of its agent's certificate with its expiry, REVOKED when it is; "" without.
std::string CertificateText(const v1::Node& node) {
  if (node.certificate_fingerprint().empty()) return "";
  std::string text = absl::StrCat(node.certificate_fingerprint(), ", expires ",
                                  FormatRfc3339(TimestampToMs(node.certificate_expire_time())));
  for (const std::string& fp : node.revoked_certificates()) {
    if (fp == node.certificate_fingerprint()) absl::StrAppend(&text, " (REVOKED)");
  }
  return text;
}

}  // namespace

std::string CheckItemLine(const v1::CheckResult& item) {
  std::vector<std::string> parts = {absl::StrCat("item ", item.item()),
                                    item.passed() ? "passed" : "failed"};
  if (!item.measured().empty()) parts.push_back(absl::StrCat("measured ", item.measured()));
  if (!item.threshold().empty()) parts.push_back(absl::StrCat("threshold ", item.threshold()));
  if (!item.passed() && !item.message().empty()) {
    parts.push_back(absl::StrCat("message ", item.message()));
  }
  return absl::StrJoin(parts, "  ");
}

std::string RenderNodeDescription(const v1::Node& node,
                                  const google::protobuf::RepeatedPtrField<v1::Event>& events,
                                  int64_t now_ms) {
  const std::string heartbeat = TimeAndAge(node.last_heartbeat_time(), now_ms);
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"Name", node.name()},
      {"Address", node.address()},
      {"Agent version", node.agent_version()},
      {"Connected", YesNo(node.connected())},
      {"Last heartbeat", heartbeat.empty() ? "never" : heartbeat},
      {"Registered", TimeAndAge(node.register_time(), now_ms)},
      {"State", StateText(node, now_ms)},
      {"State reason", node.state_reason()},
      {"Health", NodeHealthName(node.health())},
      {"Health event", node.health_description()},
      {"Cordoned", YesNo(node.cordoned())},
      {"Flapping", FlappingText(node)},
      {"Isolations", IsolationsText(node)},
      {"Drain deadline", DrainDeadlineText(node)},
      {"Maintenance", MaintenanceText(node, now_ms)},
      {"Labels", LabelsText(node.labels())},
      {"Certificate", CertificateText(node)},
      {"Revoked certs", node.revoked_certificates().empty()
                            ? std::string()
                            : absl::StrCat(node.revoked_certificates_size())},
      {"Ignored reports", node.ignored_reports() == 0
                              ? std::string()
                              : absl::StrCat(node.ignored_reports(), " (about other nodes' runs)")},
  };
  return absl::StrCat(RenderFields(fields), ResourcesSection(node), GpusSection(node),
                      ConfigSection(node), ChecksSection(node, now_ms), EventsSection(events));
}

absl::StatusOr<std::string> FormatNodeDescription(const v1::Node& node,
                                                  const v1::ListEventsResponse& events,
                                                  OutputFormat format, int64_t now_ms) {
  switch (format) {
    case OutputFormat::kTable:
      return RenderNodeDescription(node, events.events(), now_ms);
    case OutputFormat::kJson:
      return NodeDescriptionJson(node, events);
    case OutputFormat::kYaml: {
      TC_ASSIGN_OR_RETURN(std::string json, NodeDescriptionJson(node, events));
      return JsonToYaml(json);
    }
  }
  return absl::InternalError("unknown output format");
}

std::string NodeActionLine(NodeAction action, const v1::Node& node) {
  std::string line = absl::StrCat("node ", node.name(), " ", NodeStateName(node.state()));
  const std::string& reason = node.state_reason();
  if (action == NodeAction::kUncordon && node.state() == v1::NODE_STATE_ISOLATED) {
    absl::StrAppend(&line, ": stays out until its checks pass");
    if (!reason.empty()) absl::StrAppend(&line, ": ", reason);
  } else if (node.state() != v1::NODE_STATE_READY && !reason.empty()) {
    absl::StrAppend(&line, ": ", reason);
  }
  if (node.state() == v1::NODE_STATE_DRAINING && node.replicas() > 0) {
    absl::StrAppend(&line, " (", node.replicas(), node.replicas() == 1 ? " replica" : " replicas",
                    " moving)");
  }
  if (node.cordoned() && action != NodeAction::kUncordon &&
      node.state() != v1::NODE_STATE_CORDONED && node.state() != v1::NODE_STATE_DRAINING) {
    absl::StrAppend(&line, " (cordoned)");
  }
  if (action == NodeAction::kMaintenance) {
    if (!node.has_maintenance()) return absl::StrCat(line, "; no maintenance window");
    const v1::MaintenanceWindow& w = node.maintenance();
    absl::StrAppend(&line, "; maintenance ", FormatRfc3339(TimestampToMs(w.start_time())), " for ",
                    FormatDurationExact(DurationToMs(w.duration())), " (", w.reason(), ")");
  }
  return line;
}

namespace {}  // namespace

std::string RenderPrepullResults(const v1::PrepullImageResponse& resp) {
  Table table({"NODE", "DIGEST", "SIZE", "ERROR"});
  for (const auto& r : resp.results()) {
    const bool failed = !r.error().empty();
    table.AddRow({r.node(), failed || r.digest().empty() ? "-" : r.digest(),
                  failed ? "-" : FormatDecimalBytes(r.bytes()), failed ? r.error() : "-"});
  }
  return table.Render();
}

bool AnyPrepullFailed(const v1::PrepullImageResponse& resp) {
  for (const auto& r : resp.results()) {
    if (!r.error().empty()) return true;
  }
  return false;
}

}  // namespace trainctl::cli
