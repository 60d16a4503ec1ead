// The checks absl::Mutex makes on every lock, chosen once per process.
//
// Abseil's release builds (NDEBUG) never look for lock-order cycles; its debug builds record
// every acquisition in a process-wide graph under a global lock, and abort on a cycle. Debian's
// libabsl is built without NDEBUG, so a program linked against it pays for the graph on every
// lock of every thread unless it says otherwise. The daemons call UseBuildMutexChecks() first
// thing: a release build of trainctl (RelWithDebInfo, Release) turns the graph off, a debug
// build (and so the sanitizer builds' tests) keeps it.
#pragma once

namespace trainctl {

void UseBuildMutexChecks();

}  // namespace trainctl
