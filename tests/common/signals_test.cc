// Tests for the one spelling of signal names (common/signals.h) and of enum values
// (common/enum_names.h) that the scheduler, trainctld and the CLI share.
#include "common/signals.h"

#include <catch2/catch.hpp>
#include <csignal>

#include "common/enum_names.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl {
namespace {

TEST_CASE("a signal is parsed from its name, its bare name or its number") {
  CHECK(ParseSignal("SIGSEGV") == SIGSEGV);
  CHECK(ParseSignal("segv") == SIGSEGV);
  CHECK(ParseSignal("9") == 9);
  CHECK_FALSE(ParseSignal("SIGNOPE"));
  CHECK_FALSE(ParseSignal("0"));
  CHECK_FALSE(ParseSignal(std::to_string(NSIG)));
}

TEST_CASE("a signal's name is SIG and its abbreviation, or its number when it has none") {
  CHECK(SignalName(SIGABRT) == "SIGABRT");
  CHECK(SignalName(SIGCHLD) == "SIGCHLD");  // beyond the few a training process dies of
  CHECK(SignalHasName(SIGKILL));
  // The real-time signals have no abbreviation; the name says the number rather than nothing.
  CHECK_FALSE(SignalHasName(SIGRTMIN + 1));
  CHECK(SignalName(SIGRTMIN + 1) == "signal " + std::to_string(SIGRTMIN + 1));
  CHECK(SignalName(1000) == "signal 1000");
}

TEST_CASE("an enum value's short name drops its type's prefix, an unknown value is its number") {
  CHECK(EnumShortName(v1::JOB_STATE_RUNNING) == "RUNNING");
  CHECK(EnumShortName(v1::REPLICA_STATE_PENDING) == "PENDING");
  CHECK(EnumShortName(v1::NODE_STATE_DRAINING) == "DRAINING");
  CHECK(EnumShortName(v1::NODE_HEALTH_UNHEALTHY) == "UNHEALTHY");
  CHECK(EnumShortName(v1::ROLE_ADMIN) == "ADMIN");
  CHECK(EnumShortName(v1::FAILURE_ACTION_RETRY_JOB) == "RETRY_JOB");
  CHECK(EnumShortName(v1::JOB_STATE_UNSPECIFIED) == "UNSPECIFIED");
  CHECK(EnumShortName(static_cast<v1::JobState>(97)) == "97");
}

}  // namespace
}  // namespace trainctl
