// SummarizeStacks (stack_summary.h): gdb's thread blocks, their native and Python frames, and the
// frame worth naming.
#include "agents/stack_summary.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace trainctl::agent {
namespace stack_summary_internal {

constexpr absl::string_view kTraceback = "Traceback (most recent call first):";

// glibc's own sources, as its detached debug info (libc6-dbg) names them: frames there are where
// every blocked process ends up (nanosleep, pause, futex waits), so they tell nothing.
constexpr absl::string_view kRuntimeSources[] = {
    "../sysdeps/", "./nptl/",   "../nptl/",   "./misc/",   "../misc/",  "./posix/",
    "../posix/",   "./csu/",    "../csu/",    "./libio/",  "../libio/", "./malloc/",
    "../malloc/",  "./stdlib/", "../stdlib/", "./signal/", "../signal/"};

// One thread's block of lines (or the whole text when it has no thread header).
struct Block {
  // "2", or "1.1" when gdb names the inferior too; "" for text without headers.
  absl::string_view id;
  bool main = false;
  // Native frames, innermost first: the text after "#N", continuation lines joined.
  std::vector<std::string> frames;
  // "FUNC (BASENAME:LINE)" of each Python frame, innermost first.
  std::vector<std::string> python;
};

// A native frame's parts; the views point into the frame's text.
struct NativeFrame {
  std::string function;
  absl::string_view file;
  absl::string_view line;
  absl::string_view library;
};

absl::string_view Basename(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

size_t CountDigits(absl::string_view s) {
  size_t n = 0;
  while (n < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[n]))) ++n;
  return n;
}

bool IsIdentifierChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// "Thread 2 (Thread 0x7f... (LWP 4242) "python3"):" sets `id` to "2". Thread names are the
// process's to choose, so only the shape of the line's ends is relied on.
bool ParseThreadHeader(absl::string_view line, absl::string_view* id) {
  line = absl::StripAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "Thread ")) return false;
  size_t n = 0;
  while (n < line.size() &&
         (absl::ascii_isdigit(static_cast<unsigned char>(line[n])) || line[n] == '.')) {
    ++n;
  }
  if (n == 0) return false;
  *id = line.substr(0, n);
  line.remove_prefix(n);
  return absl::StartsWith(line, " (") && absl::EndsWith(line, "):");
}

// A native frame starts with "#N " at the start of its line.
bool IsFrameLine(absl::string_view line) {
  if (!absl::ConsumePrefix(&line, "#")) return false;
  const size_t digits = CountDigits(line);
  return digits > 0 && digits < line.size() && absl::ascii_isspace(line[digits]);
}

// `  File "/job/train.py", line 3, in load_batch` gives "load_batch (train.py:3)". The comma
// before "in" is optional: faulthandler leaves it out.
bool ParsePythonFrame(absl::string_view line, std::string* out) {
  line = absl::StripAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "File \"")) return false;
  const size_t quote = line.find("\", line ");
  if (quote == absl::string_view::npos) return false;
  const absl::string_view path = line.substr(0, quote);
  line.remove_prefix(quote + 8);
  const size_t digits = CountDigits(line);
  if (digits == 0) return false;
  const absl::string_view number = line.substr(0, digits);
  line.remove_prefix(digits);
  if (!absl::ConsumePrefix(&line, ", in ") && !absl::ConsumePrefix(&line, " in ")) return false;
  const absl::string_view function = absl::StripAsciiWhitespace(line);
  if (function.empty()) return false;
  *out = absl::StrCat(function, " (", Basename(path), ":", number, ")");
  return true;
}

// Where the function name that starts `s` ends: at the " (" of its argument list, found outside
// template arguments and parentheses that belong to the name ("(anonymous namespace)::Foo",
// "std::function<void (int)>::operator()").
size_t FunctionNameEnd(absl::string_view s) {
  int angles = 0;
  int parens = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    // An operator's symbol would unbalance the counts: "operator<<", "operator()".
    if (s.substr(i, 8) == "operator" && (i == 0 || !IsIdentifierChar(s[i - 1])) &&
        (i + 8 >= s.size() || !IsIdentifierChar(s[i + 8]))) {
      i += 8;
      while (i < s.size() &&
             absl::string_view("<>()[]=!+-*/%&|^~,").find(s[i]) != absl::string_view::npos) {
        ++i;
      }
      if (i >= s.size()) return s.size();
    }
    const char c = s[i];
    if (c == ' ' && i + 1 < s.size() && s[i + 1] == '(' && angles == 0 && parens == 0) return i;
    if (c == '<') ++angles;
    if (c == '>' && angles > 0) --angles;
    if (c == '(') ++parens;
    if (c == ')' && parens > 0) --parens;
  }
  return s.size();
}

// Without debug info gdb names a C++ function with its parameter types, "ns::wait(int) const":
// those go too, but not the parentheses of "operator()".
absl::string_view StripParameterTypes(absl::string_view name) {
  absl::ConsumeSuffix(&name, " const");
  if (!absl::EndsWith(name, ")")) return name;
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) {
      if (i == 0 || absl::EndsWith(name.substr(0, i), "operator")) return name;
      return name.substr(0, i);
    }
  }
  return name;
}

// "#3  0x000055... in ns::wait (peer=2) at src/peer.cc:120", "#0  main () at x.c:5",
// "#1  0x00007f... in nanosleep () from /lib/x86_64-linux-gnu/libc.so.6".
NativeFrame ParseNativeFrame(absl::string_view text) {
  NativeFrame frame;
  absl::ConsumePrefix(&text, "#");
  text.remove_prefix(CountDigits(text));
  text = absl::StripLeadingAsciiWhitespace(text);
  if (absl::StartsWith(text, "0x")) {
    const size_t space = text.find(' ');
    text = space == absl::string_view::npos ? absl::string_view()
                                            : absl::StripLeadingAsciiWhitespace(text.substr(space));
    if (!absl::ConsumePrefix(&text, "in ") && text == "in") text = absl::string_view();
  }
  size_t name_end = FunctionNameEnd(text);
  // No argument list (another tool's frame, "#0  0x00007f... clock_nanosleep"): its first word.
  if (name_end == text.size()) name_end = std::min(text.find(' '), text.size());
  frame.function = std::string(StripParameterTypes(text.substr(0, name_end)));
  const absl::string_view rest = text.substr(name_end);
  // The location is the line's last " at FILE:LINE" or " from LIBRARY": the arguments before it
  // may hold either word.
  const size_t at = rest.rfind(" at ");
  const size_t from = rest.rfind(" from ");
  if (at != absl::string_view::npos && (from == absl::string_view::npos || at > from)) {
    const absl::string_view location = absl::StripAsciiWhitespace(rest.substr(at + 4));
    const size_t colon = location.rfind(':');
    if (colon != absl::string_view::npos && colon + 1 < location.size() &&
        CountDigits(location.substr(colon + 1)) == location.size() - colon - 1) {
      frame.file = location.substr(0, colon);
      frame.line = location.substr(colon + 1);
    }
  } else if (from != absl::string_view::npos) {
    frame.library = absl::StripAsciiWhitespace(rest.substr(from + 6));
  }
  return frame;
}

// A function gdb could name: not "??", not "<signal handler called>", not punctuation.
bool HasName(const NativeFrame& frame) {
  if (frame.function.empty() || frame.function[0] == '<') return false;
  for (const char c : frame.function) {
    if (IsIdentifierChar(c)) return true;
  }
  return false;
}

// The C library's and the runtime's frames, and any shared library of the system's that has no
// debug info.
bool IsRuntimeFrame(const NativeFrame& frame) {
  if (!HasName(frame)) return true;
  if (absl::StartsWith(frame.library, "/lib") || absl::StartsWith(frame.library, "/usr/lib")) {
    return true;
  }
  for (absl::string_view prefix : kRuntimeSources) {
    if (absl::StartsWith(frame.file, prefix)) return true;
  }
  return false;
}

std::string NameFrame(const NativeFrame& frame) {
  if (frame.file.empty()) return frame.function;
  return absl::StrCat(frame.function, " (", Basename(frame.file), ":", frame.line, ")");
}

// Splits `text` into thread blocks and parses their frames; sets *python on a Traceback line.
std::vector<Block> ParseBlocks(absl::string_view text, bool* python) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  bool has_headers = false;
  for (absl::string_view& line : lines) {
    absl::ConsumeSuffix(&line, "\r");
    absl::string_view id;
    has_headers = has_headers || ParseThreadHeader(line, &id);
  }
  std::vector<Block> blocks;
  if (!has_headers) blocks.push_back(Block{"", true, {}, {}});
  bool in_traceback = false;
  bool in_frame = false;
  for (absl::string_view line : lines) {
    absl::string_view id;
    if (ParseThreadHeader(line, &id)) {
      blocks.push_back(Block{id, id == "1" || id == "1.1", {}, {}});
      in_traceback = in_frame = false;
      continue;
    }
    // What gdb printed before the first thread: the attach line, thread-db notices.
    if (blocks.empty()) continue;
    Block& block = blocks.back();
    const absl::string_view trimmed = absl::StripAsciiWhitespace(line);
    if (trimmed == kTraceback) {
      *python = true;
      in_traceback = true;
      in_frame = false;
    } else if (IsFrameLine(line)) {
      block.frames.emplace_back(trimmed);
      in_traceback = false;
      in_frame = true;
    } else if (in_traceback) {
      std::string frame;
      if (ParsePythonFrame(trimmed, &frame)) block.python.push_back(std::move(frame));
    } else if (in_frame && !trimmed.empty() && absl::ascii_isspace(line[0])) {
      // A long frame wrapped onto the next line (a dump to a terminal of limited width).
      absl::StrAppend(&block.frames.back(), " ", trimmed);
    } else {
      in_frame = false;
    }
  }
  return blocks;
}

// The main thread's native frames (in both its blocks). When the text has no Thread 1 (its main
// thread had exited), those of the lowest-numbered thread that has any.
std::vector<std::string> MainThreadFrames(const std::vector<Block>& blocks) {
  std::vector<std::string> frames;
  for (const Block& block : blocks) {
    if (block.main) frames.insert(frames.end(), block.frames.begin(), block.frames.end());
  }
  if (!frames.empty()) return frames;
  const Block* lowest = nullptr;
  int64_t lowest_id = 0;
  for (const Block& block : blocks) {
    int64_t id = 0;
    const std::vector<absl::string_view> parts = absl::StrSplit(block.id, '.');
    if (block.frames.empty() || !absl::SimpleAtoi(parts.back(), &id)) continue;
    if (lowest == nullptr || id < lowest_id) {
      lowest = &block;
      lowest_id = id;
    }
  }
  return lowest == nullptr ? frames : lowest->frames;
}

}  // namespace stack_summary_internal

std::string SummarizeStacks(absl::string_view text, bool* python) {
  namespace internal = stack_summary_internal;
  bool has_python = false;
  const std::vector<internal::Block> blocks = internal::ParseBlocks(text, &has_python);
  if (python != nullptr) *python = has_python;

  for (const internal::Block& block : blocks) {
    if (block.main && !block.python.empty()) return block.python.front();
  }
  for (const internal::Block& block : blocks) {
    if (!block.python.empty()) return block.python.front();
  }

  std::string innermost;
  for (const std::string& line : internal::MainThreadFrames(blocks)) {
    const internal::NativeFrame frame = internal::ParseNativeFrame(line);
    if (!internal::IsRuntimeFrame(frame)) return internal::NameFrame(frame);
    if (innermost.empty() && internal::HasName(frame)) innermost = frame.function;
  }
  return innermost;
}

}  // namespace trainctl::agent
