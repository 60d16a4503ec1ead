#include "agents/device_filter.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace trainctl::agent {
namespace {

// The verifier's log, when a load is retried to explain a rejection.
constexpr size_t kVerifierLogBytes = 16 << 10;
// How much of its end goes into the error.
constexpr size_t kVerifierLogShown = 512;

// Registers of the program: r1 holds the struct bpf_cgroup_dev_ctx* {u32 access_type (access
// << 16 | device type), u32 major, u32 minor}; r0 is the verdict.
constexpr uint8_t kR0 = 0, kCtx = 1, kType = 2, kMajor = 3, kMinor = 4;

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn insn;
  std::memset(&insn, 0, sizeof(insn));
  insn.code = code;
  insn.dst_reg = dst & 0xf;
  insn.src_reg = src & 0xf;
  insn.off = off;
  insn.imm = imm;
  return insn;
}

// dst = *(u32 *)(ctx + off)
bpf_insn LoadCtxWord(uint8_t dst, int16_t off) {
  return Insn(BPF_LDX | BPF_MEM | BPF_W, dst, kCtx, off, 0);
}
// if (dst <op> imm) goto pc + 1 + off
bpf_insn JumpIf(uint8_t op, uint8_t dst, int32_t imm, int off) {
  return Insn(BPF_JMP | op | BPF_K, dst, 0, static_cast<int16_t>(off), imm);
}
// r0 = verdict; exit
void AppendReturn(int32_t verdict, std::vector<bpf_insn>* program) {
  program->push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, kR0, 0, 0, verdict));
  program->push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
}

long Bpf(int command, union bpf_attr* attr) {
  return syscall(__NR_bpf, command, attr, sizeof(*attr));
}

// Loads `program`; the fd, or UNAVAILABLE with the verifier's complaint.
absl::StatusOr<int> LoadProgram(const std::vector<bpf_insn>& program) {
  // Only GPL-only helpers care about the license; this program calls none.
  static const char kLicense[] = "Apache-2.0";
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uintptr_t>(program.data());
  attr.insn_cnt = static_cast<uint32_t>(program.size());
  attr.license = reinterpret_cast<uintptr_t>(kLicense);
  long fd = Bpf(BPF_PROG_LOAD, &attr);
  if (fd >= 0) return static_cast<int>(fd);
  const int error = errno;
  std::string log(kVerifierLogBytes, '\0');
  if (error == EACCES || error == EINVAL) {  // The verifier's errors: ask it why.
    attr.log_level = 1;
    attr.log_buf = reinterpret_cast<uintptr_t>(log.data());
    attr.log_size = static_cast<uint32_t>(log.size());
    fd = Bpf(BPF_PROG_LOAD, &attr);
    if (fd >= 0) return static_cast<int>(fd);
  }
  log.resize(std::strlen(log.c_str()));
  // The verifier's last words say what it rejected.
  if (log.size() > kVerifierLogShown) log = "..." + log.substr(log.size() - kVerifierLogShown);
  return absl::UnavailableError(absl::StrCat(
      "bpf(BPF_PROG_LOAD) of a cgroup device program: ", std::strerror(error),
      log.empty() ? "" : absl::StrCat(" (verifier: ", absl::StripSuffix(log, "\n"), ")")));
}

}  // namespace

std::vector<bpf_insn> DeviceFilterProgram(int major, const std::vector<int>& denied_minors) {
  std::vector<bpf_insn> program;
  if (denied_minors.empty()) {
    // The verifier rejects unreachable instructions, so no deny branch without a minor.
    AppendReturn(1, &program);
    return program;
  }
  const int n = static_cast<int>(denied_minors.size());
  // Instructions 0-5 below, then n comparisons: "allow" is at 6 + n and "deny" at 8 + n.
  const int allow = 6 + n;
  program.push_back(LoadCtxWord(kType, 0));                                  // 0
  program.push_back(Insn(BPF_ALU | BPF_AND | BPF_K, kType, 0, 0, 0xffff));   // 1
  program.push_back(JumpIf(BPF_JNE, kType, BPF_DEVCG_DEV_CHAR, allow - 3));  // 2
  program.push_back(LoadCtxWord(kMajor, 4));                                 // 3
  program.push_back(JumpIf(BPF_JNE, kMajor, major, allow - 5));              // 4
  program.push_back(LoadCtxWord(kMinor, 8));                                 // 5
  for (int i = 0; i < n; ++i) {
    const int pc = 6 + i;
    program.push_back(JumpIf(BPF_JEQ, kMinor, denied_minors[i], allow + 2 - (pc + 1)));
  }
  AppendReturn(1, &program);  // allow: 6 + n, 7 + n
  AppendReturn(0, &program);  // deny: 8 + n, 9 + n
  return program;
}

absl::Status AttachDeviceFilter(const std::string& cgroup_dir, int major,
                                const std::vector<int>& denied_minors) {
  absl::StatusOr<int> program = LoadProgram(DeviceFilterProgram(major, denied_minors));
  if (!program.ok()) return program.status();
  const int cgroup_fd = open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgroup_fd < 0) {
    const int error = errno;
    close(*program);
    return absl::UnavailableError(absl::StrCat(cgroup_dir, ": ", std::strerror(error)));
  }
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.target_fd = static_cast<uint32_t>(cgroup_fd);
  attr.attach_bpf_fd = static_cast<uint32_t>(*program);
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = BPF_F_ALLOW_MULTI;
  const long result = Bpf(BPF_PROG_ATTACH, &attr);
  const int error = errno;
  // The attachment keeps the program alive; these fds are no longer needed either way.
  close(cgroup_fd);
  close(*program);
  if (result != 0) {
    return absl::UnavailableError(absl::StrCat("bpf(BPF_PROG_ATTACH) of a device program to ",
                                               cgroup_dir, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace trainctl::agent
