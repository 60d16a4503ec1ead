// Naming where a process was stuck from the text of its stack dump (stack_capture.h): the
// innermost frame worth naming of its main thread, as `trainctl describe` shows it and groups
// hung replicas by ("load_batch (train.py:12)", "wait_for_peer (main.c:40)").
//
// The text is what gdb prints for
//   gdb -p PID --batch -q -ex "thread apply all bt" -ex "thread apply all py-bt"
// or what another dump program printed. gdb prints each thread as a block that starts with a
// header, "Thread 2 (Thread 0x7f... (LWP 4242) "python3"):", in descending order, once for the
// native stacks (frames "#0  0x00007f... in func (args) at file.c:48") and once more for the
// Python stacks ("Traceback (most recent call first):", then "  File "PATH", line N, in FUNC").
// Thread 1 is the main thread. Text without any thread header is taken as one thread.
//
//   bool python = false;
//   std::string where = SummarizeStacks(outcome.stdout_text, &python);
//   // "load_batch (train.py:12)", python == true
//
// Pure parsing: no I/O, no state; thread-safe. It never throws on malformed text (what a dump
// program prints is not trusted), it just finds nothing.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace trainctl::agent {

// The innermost frame worth naming of the main thread of the process whose stacks `text` holds:
//   - with Python frames, the innermost Python function of Thread 1, "FUNC (BASENAME:LINE)";
//     when Thread 1 has none, that of the first thread printed that has one;
//   - else Thread 1's innermost native frame outside the C library and runtime (frames "from" a
//     shared library under /lib or /usr/lib, glibc's sources "../sysdeps/...", "./nptl/", ...,
//     and unknown "??" functions are passed over), "FUNC (BASENAME:LINE)", or "FUNC" when gdb
//     knows no source line; when all of them are passed over, the innermost frame's function.
// FUNC is the name without its argument list ("ns::Class::method", "(anonymous
// namespace)::Foo"). "" when nothing is found. Sets *python (when not null) to whether the text
// has a Python stack (a "Traceback (most recent call first):" line).
std::string SummarizeStacks(absl::string_view text, bool* python);

}  // namespace trainctl::agent
