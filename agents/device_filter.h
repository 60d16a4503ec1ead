// Device isolation on cgroup v2, which has no devices.deny file: a BPF_PROG_TYPE_CGROUP_DEVICE
// program attached to a run's cgroup decides every open/mknod of a device node by its processes.
// The program is a handful of raw BPF instructions loaded with the bpf() syscall (no libbpf):
// it returns 0 (deny, the caller sees EPERM) for the character devices <major>:<minor> of the
// denied minors and 1 (allow) for every other device.
//
// The attachment holds the only reference to the program, so it lives exactly as long as the
// cgroup; an agent that restarts finds its adopted runs still filtered. It is attached with
// BPF_F_ALLOW_MULTI, so programs of ancestor cgroups (systemd's) keep applying: a device is
// usable only when every one of them allows it. Needs CAP_SYS_ADMIN (or CAP_BPF) and a kernel
// with CONFIG_CGROUP_BPF; without, AttachDeviceFilter fails and the caller degrades.
//
//   if (absl::Status s = AttachDeviceFilter(run_dir, kNvidiaMajor, {1, 3}); !s.ok()) ...
//
// Thread-safe: the functions keep no state.
#pragma once

#include <linux/bpf.h>

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace trainctl::agent {

// The character device major of NVIDIA GPUs (/dev/nvidia<minor>); minor 255 is nvidiactl.
constexpr int kNvidiaMajor = 195;

// The program: deny char <major>:<m> for every m of `denied_minors`, allow the rest. With no
// denied minors it allows everything.
std::vector<bpf_insn> DeviceFilterProgram(int major, const std::vector<int>& denied_minors);

// Loads DeviceFilterProgram(major, denied_minors) and attaches it to the cgroup v2 directory
// `cgroup_dir`. UNAVAILABLE with the reason (and the verifier's log, when it rejected the
// program) on failure.
absl::Status AttachDeviceFilter(const std::string& cgroup_dir, int major,
                                const std::vector<int>& denied_minors);

}  // namespace trainctl::agent
