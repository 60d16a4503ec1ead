// The agent protocol's version: what trainctl-agent sends in Register.protocol_version, and which
// versions trainctld accepts. So a rolling upgrade (trainctld first, then the agents host by host)
// is safe: a trainctld accepts agents of its own version and of the previous one, and refuses
// any other with a message that names both versions.
//
// Version 1: agents that predate the field (they send 0). Version 2: the field itself.
// Bump kAgentProtocolVersion when a change to agent.proto or its meaning needs both sides to know
// it, and keep trainctld able to serve kAgentProtocolVersion - 1.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace trainctl {

inline constexpr int32_t kAgentProtocolVersion = 2;
inline constexpr int32_t kOldestAgentProtocolVersion = kAgentProtocolVersion - 1;

// The version an agent speaks, from what it sent (0: before the field, version 1).
inline int32_t AgentProtocolOf(int32_t sent) { return sent == 0 ? 1 : sent; }

// OK when trainctld serves an agent that sent `sent`; else FAILED_PRECONDITION naming both
// versions and what to upgrade.
inline absl::Status CheckAgentProtocol(int32_t sent) {
  const int32_t version = AgentProtocolOf(sent);
  if (version >= kOldestAgentProtocolVersion && version <= kAgentProtocolVersion) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("the agent speaks agent protocol version ", version,
                   " and this trainctld speaks version ", kAgentProtocolVersion, " (it accepts ",
                   kOldestAgentProtocolVersion, " and ", kAgentProtocolVersion, "): ",
                   version > kAgentProtocolVersion ? "upgrade trainctld first, then the agents"
                                                   : "upgrade the agent to trainctld's release"));
}

}  // namespace trainctl
