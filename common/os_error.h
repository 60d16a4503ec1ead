// ErrnoText: the words for an errno value, for the messages of failed system calls
// ("mkdir /sys/fs/cgroup/x: Permission denied"). One definition for every program.
//
// Thread-safe: glibc's strerror keeps its buffer per thread.
#pragma once

#include <cstring>
#include <string>

namespace trainctl {

inline std::string ErrnoText(int error) { return std::strerror(error); }

}  // namespace trainctl
