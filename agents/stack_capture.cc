// CaptureStacks and ProcessGroupMembers (stack_capture.h): the group's members from /proc, one
// RunTool per process on a thread of its own, and the text each dump leaves.
#include "agents/stack_capture.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "agents/proc_stats.h"
#include "agents/spawn.h"
#include "agents/stack_summary.h"
#include "agents/tool_run.h"
#include "common/time_util.h"
#include "common/utf8.h"

namespace trainctl::agent {
namespace stack_capture_internal {

constexpr char kNoProgram[] =
    "no stack dump program: install gdb (and python3.11-dbg for Python stacks) or set "
    "--stack-dump-program";
constexpr size_t kMaxCommand = 256;
// The summary is taken from the whole dump, before it is cut to its share of max_bytes: gdb
// prints the main thread last. A process with thousands of threads stays well below this.
constexpr size_t kMaxStdout = size_t{16} << 20;

// gdb, with the pid to come last (see StackCaptureOptions::program).
std::vector<std::string> GdbCommand() {
  return {"gdb", "--batch",
          "-nx", "-q",
          "-ex", "set pagination off",
          "-ex", "set print thread-events off",
          "-ex", "thread apply all bt",
          "-ex", "thread apply all -s py-bt",
          "-p"};
}

// The first `max` bytes of a file under /proc ("" when it cannot be read).
std::string ReadProcFile(const std::string& path, size_t max) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n;
  while (out.size() < max && (n = read(fd, buf, sizeof(buf))) > 0) {
    out.append(buf, std::min(static_cast<size_t>(n), max - out.size()));
  }
  close(fd);
  return out;
}

// The parent pid of a /proc/<pid>/stat line: the field after the state, counted from the
// command name's last ')' as ParseProcStat does.
bool ParseParent(absl::string_view stat, pid_t* ppid) {
  const size_t close_paren = stat.rfind(')');
  if (close_paren == absl::string_view::npos) return false;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close_paren + 1), ' ', absl::SkipEmpty());
  return fields.size() > 1 && absl::SimpleAtoi(fields[1], ppid);
}

// The largest length <= `max` that does not split a UTF-8 character of `text`.
size_t CharBoundary(absl::string_view text, size_t max) {
  if (max >= text.size()) return text.size();
  while (max > 0 && (static_cast<unsigned char>(text[max]) & 0xC0) == 0x80) --max;
  return max;
}

// /proc/PID/cmdline with its arguments joined by spaces, at most kMaxCommand bytes.
std::string CommandLine(pid_t pid) {
  std::string text = ReadProcFile(absl::StrCat("/proc/", pid, "/cmdline"), 4 * kMaxCommand);
  std::replace(text.begin(), text.end(), '\0', ' ');
  text = SanitizeUtf8(absl::StripTrailingAsciiWhitespace(text));
  text.resize(CharBoundary(text, kMaxCommand));
  return text;
}

// Appends the lines of `text` that `keep` accepts, each with its newline.
template <typename Keep>
void AppendLines(absl::string_view text, Keep keep, std::string* out) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (keep(line)) absl::StrAppend(out, line, "\n");
  }
  // StrSplit gives an empty last piece after the final newline.
  while (absl::EndsWith(*out, "\n\n")) out->pop_back();
}

// gdb's stdout less what tells nothing about the stacks: "[New LWP 4242]", "[Thread debugging
// using libthread_db enabled]", "[Inferior 1 (process 4242) detached]" and "Using host
// libthread_db library ...".
std::string StdoutStacks(absl::string_view stdout_text) {
  std::string out;
  AppendLines(
      stdout_text,
      [](absl::string_view line) {
        const absl::string_view t = absl::StripAsciiWhitespace(line);
        return !(absl::StartsWith(t, "[") && absl::EndsWith(t, "]")) &&
               !absl::StartsWith(t, "Using host libthread_db");
      },
      &out);
  return std::string(absl::StripLeadingAsciiWhitespace(out));
}

// gdb's stderr less its notes about sources it cannot show ("48\t../sysdeps/unix/sysv/linux/
// clock_nanosleep.c: No such file or directory."), which every glibc frame gives.
std::string StderrThatMatters(absl::string_view stderr_text) {
  std::string out;
  AppendLines(
      stderr_text,
      [](absl::string_view line) {
        size_t digits = 0;
        while (digits < line.size() && absl::ascii_isdigit(line[digits])) ++digits;
        return !(digits > 0 && digits < line.size() && line[digits] == '\t') &&
               !absl::StripAsciiWhitespace(line).empty();
      },
      &out);
  return out;
}

// Dumps one process: runs `argv` with its pid appended until `deadline`.
trainctl::v1::ProcessStacks DumpProcess(pid_t pid, std::vector<std::string> argv,
                                        const std::vector<std::string>& env, absl::Time deadline,
                                        absl::Duration timeout) {
  trainctl::v1::ProcessStacks process;
  process.set_pid(pid);
  process.set_command(CommandLine(pid));
  ToolRequest request;
  argv.push_back(absl::StrCat(pid));
  request.argv = std::move(argv);
  request.env = env;
  request.timeout = std::max(deadline - absl::Now(), absl::ZeroDuration());
  request.max_stdout = kMaxStdout;
  ToolOutcome outcome = RunTool(request);
  if (outcome.end == ToolOutcome::End::kTimedOut || outcome.end == ToolOutcome::End::kCancelled) {
    // gdb was killed while attached: the kernel detaches it, but the SIGSTOP its attach sent may
    // still be pending and would leave the process stopped for good.
    kill(pid, SIGCONT);
  }
  outcome.stderr_text = StderrThatMatters(outcome.stderr_text);
  std::string text = StdoutStacks(outcome.stdout_text);
  // gdb's stderr adds nothing to stacks it printed ("warning: ..." about missing debug info),
  // but it is all there is when it printed none ("ptrace: Operation not permitted.").
  const bool printed_none = absl::StripAsciiWhitespace(text).empty();
  if (printed_none || !outcome.ok()) absl::StrAppend(&text, outcome.stderr_text);
  if (!outcome.ok()) {
    process.set_error(SanitizeUtf8(outcome.Describe(timeout)));
  } else if (printed_none) {
    // gdb exits 0 when it cannot attach (the process is gone, or ptrace is not allowed).
    const std::string line = LastLine(outcome.stderr_text);
    process.set_error(SanitizeUtf8(line.empty() ? "the dump program printed nothing" : line));
  }
  text = SanitizeUtf8(text);
  bool python = false;
  process.set_summary(SummarizeStacks(text, &python));
  process.set_python(python);
  process.set_text(std::move(text));
  return process;
}

// Cuts `text` to at most `max` bytes, the marker line included: its head, at a line's end when
// one is near, then "... (cut: N more bytes)".
std::string CutText(absl::string_view text, size_t max) {
  const size_t marker_max = absl::StrCat("\n... (cut: ", text.size(), " more bytes)\n").size();
  size_t keep = CharBoundary(text, max > marker_max ? max - marker_max : 0);
  const size_t newline = keep == 0 ? absl::string_view::npos : text.rfind('\n', keep - 1);
  if (newline != absl::string_view::npos && newline + 1 >= keep / 2) keep = newline + 1;
  std::string out(text.substr(0, keep));
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  absl::StrAppend(&out, "... (cut: ", text.size() - keep, " more bytes)\n");
  return out;
}

}  // namespace stack_capture_internal

std::vector<pid_t> ProcessGroupMembers(pid_t pgid, size_t max) {
  struct Member {
    pid_t pid;
    pid_t ppid;
  };
  std::vector<Member> members;
  if (pgid <= 0) return {};
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return {};
  while (struct dirent* entry = readdir(dir)) {
    pid_t pid = 0;
    ProcStat stat;
    Member member{0, 0};
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    const std::string text =
        stack_capture_internal::ReadProcFile(absl::StrCat("/proc/", pid, "/stat"), 4096);
    if (!ParseProcStat(text, &stat) || stat.pgrp != pgid || stat.state == 'Z' ||
        stat.state == 'X' || !stack_capture_internal::ParseParent(text, &member.ppid)) {
      continue;
    }
    member.pid = pid;
    members.push_back(member);
  }
  closedir(dir);
  std::set<pid_t> parents;
  for (const Member& member : members) parents.insert(member.ppid);
  std::vector<std::pair<bool, pid_t>> order;  // (is a parent, pid): leaves sort first.
  for (const Member& member : members)
    order.emplace_back(parents.count(member.pid) > 0, member.pid);
  std::sort(order.begin(), order.end());
  std::vector<pid_t> out;
  for (size_t i = 0; i < order.size() && i < max; ++i) out.push_back(order[i].second);
  return out;
}

trainctl::v1::ReplicaStacks CaptureStacks(const std::vector<pid_t>& pids,
                                          const StackCaptureOptions& options) {
  namespace internal = stack_capture_internal;
  trainctl::v1::ReplicaStacks stacks;
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + options.timeout;
  auto took = [&] { return MsToDuration(absl::ToInt64Milliseconds(absl::Now() - start)); };
  if (pids.empty()) {
    stacks.set_error("the replica has no live process");
    *stacks.mutable_took() = took();
    return stacks;
  }
  std::vector<std::string> argv =
      options.program.empty() ? internal::GdbCommand() : options.program;
  const std::vector<std::string> env = options.env.empty() ? CurrentEnvironment() : options.env;
  // Resolved once here rather than by each dump, so that a missing program is one error for the
  // replica, with the way to fix it.
  absl::StatusOr<std::string> path = argv.front().empty()
                                         ? absl::InvalidArgumentError("empty")
                                         : ResolveCommand(argv.front(), SearchPathOf(env), ".");
  if (!path.ok()) {
    stacks.set_error(internal::kNoProgram);
    *stacks.mutable_took() = took();
    return stacks;
  }
  argv.front() = *path;

  // One thread per process (at most ProcessGroupMembers' 16): each mostly waits on its dump.
  std::vector<trainctl::v1::ProcessStacks> processes(pids.size());
  std::vector<std::thread> threads;
  threads.reserve(pids.size());
  for (size_t i = 0; i < pids.size(); ++i) {
    threads.emplace_back([&, i] {
      processes[i] = internal::DumpProcess(pids[i], argv, env, deadline, options.timeout);
    });
  }
  for (std::thread& thread : threads) thread.join();

  const size_t share = options.max_bytes / pids.size();
  for (trainctl::v1::ProcessStacks& process : processes) {
    if (process.text().size() > share) {
      process.set_text(internal::CutText(process.text(), share));
      stacks.set_truncated(true);
    }
  }
  for (const bool want_python : {true, false}) {
    for (const trainctl::v1::ProcessStacks& process : processes) {
      if (stacks.summary().empty() && !process.summary().empty() &&
          (process.python() || !want_python)) {
        stacks.set_summary(process.summary());
      }
    }
  }
  for (trainctl::v1::ProcessStacks& process : processes) {
    *stacks.add_processes() = std::move(process);
  }
  *stacks.mutable_took() = took();
  return stacks;
}

}  // namespace trainctl::agent
