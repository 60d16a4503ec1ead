#include "server/leadership.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/net_address.h"
#include "server/data_dir.h"
#include "server/pki.h"

namespace trainctl::server {
namespace {

std::string LeaderText(const v1::LeaderInfo& leader) {
  if (leader.address().empty()) return absl::StrCat("none (epoch ", leader.epoch(), ")");
  return absl::StrCat(leader.address(), " (epoch ", leader.epoch(), ")");
}

// Waits up to `d` for a signal of `stop`; the signal, or 0.
int WaitForSignal(const sigset_t& stop, absl::Duration d) {
  const timespec ts = absl::ToTimespec(d);
  const int sig = sigtimedwait(&stop, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

}  // namespace

std::string AdvertisedAddress(const std::string& listen, int port) {
  std::string host = HostOf(listen);
  if (host.empty() || host == "0.0.0.0" || host == "::") {
    char name[256] = {};
    host = gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
  }
  if (host.find(':') != std::string::npos) host = absl::StrCat("[", host, "]");
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<std::optional<Lead>> WaitToLead(const LeadershipOptions& options,
                                               const sigset_t& stop, int* signal_out) {
  *signal_out = 0;
  Lead lead;
  lead.standby = std::make_unique<StandbyServer>(options.standby);
  StandbyServer& standby = *lead.standby;
  if (absl::Status s = standby.Start(); !s.ok()) return s;
  lead.grpc_port = standby.grpc_port();
  lead.http_port = standby.http_port();
  lead.address = options.advertise_address.empty()
                     ? AdvertisedAddress(options.standby.listen, lead.grpc_port)
                     : options.advertise_address;
  if (options.standby.http_listen != "off") {
    lead.http_address = options.advertise_http_address.empty()
                            ? AdvertisedAddress(options.standby.http_listen, lead.http_port)
                            : options.advertise_http_address;
  }
  standby.set_self(lead.address, lead.http_address);
  sd_notify(0, "READY=1\nSTATUS=standby: waiting for the leader lease");
  spdlog::info("standby on {} (advertised as {}): trying for the leader lease every {}",
               lead.grpc_port, lead.address, absl::FormatDuration(options.lease / 10));

  const storage::LeaseOptions lease_options{options.instance, lead.address, lead.http_address,
                                            options.lease};
  const absl::Duration poll =
      std::clamp(options.lease / 10, absl::Milliseconds(100), absl::Seconds(1));
  std::string last_leader = "?";
  // The last leader seen by address (a lapsed lease names none).
  v1::LeaderInfo previous;
  std::string last_error;
  for (;;) {
    // The watchdog of systemd watches a standby too.
    sd_notify(0, "WATCHDOG=1");
    absl::Status failed = absl::OkStatus();
    if (lead.lease == nullptr) {
      absl::StatusOr<std::unique_ptr<storage::PgLeaderLease>> opened =
          storage::PgLeaderLease::Open(options.store_uri, lease_options);
      if (opened.ok()) {
        lead.lease = *std::move(opened);
      } else {
        failed = opened.status();
      }
    }
    if (lead.lease != nullptr) {
      v1::LeaderInfo leader;
      const absl::Time try_at = absl::Now();
      absl::StatusOr<std::optional<int64_t>> epoch = lead.lease->TryAcquire(&leader);
      if (epoch.ok() && epoch->has_value()) {
        lead.epoch = **epoch;
        lead.taken_at = try_at;
        lead.reason =
            absl::StrCat("trainctld at ", lead.address, " leads (epoch ", lead.epoch, ")");
        if (!previous.address().empty()) {
          absl::StrAppend(&lead.reason, ": the lease of the leader at ", previous.address(),
                          " (epoch ", previous.epoch(),
                          ") lapsed; nodes have a full lost timeout to reconnect");
        }
        standby.set_leader(leader);
        spdlog::warn("took the leader lease: epoch {}, after the leader {}", lead.epoch,
                     last_leader);
        return lead;
      }
      if (epoch.ok()) {
        standby.set_leader(leader);
        if (!leader.address().empty()) previous = leader;
        if (const std::string now = LeaderText(leader); now != last_leader) {
          spdlog::info("standby: the leader is {}", now);
          last_leader = now;
        }
        last_error.clear();
      } else {
        failed = epoch.status();
      }
    }
    if (!failed.ok()) {
      // A database that is not trainctl's stops the start; anything else (the server away, a
      // takeover that waited too long for a stuck leader's row lock) is tried again.
      if (failed.code() == absl::StatusCode::kFailedPrecondition) return failed;
      if (std::string(failed.message()) != last_error) {
        spdlog::warn("standby: {}; trying again", failed.ToString());
        last_error = std::string(failed.message());
      }
    }
    for (absl::Time until = absl::Now() + poll; absl::Now() < until;) {
      const int sig = WaitForSignal(stop, until - absl::Now());
      if (sig == SIGHUP) {
        spdlog::info("SIGHUP: a standby reads --config when it leads");
      } else if (sig != 0) {
        *signal_out = sig;
        return std::nullopt;
      }
    }
  }
}

void StepDown(const std::string& why) {
  spdlog::critical(
      "stepping down: {}; exiting (status {}) so that a restart rejoins as a standby; running "
      "replicas are not touched",
      why, kExitDeposed);
  spdlog::default_logger()->flush();
  sd_notify(0, "STOPPING=1");
  _exit(kExitDeposed);
}

LeaseKeeper::LeaseKeeper(std::unique_ptr<storage::PgLeaderLease> lease, absl::Time taken_at)
    : lease_(std::move(lease)),
      duration_(lease_->options().duration),
      valid_until_ns_(absl::ToUnixNanos(taken_at + duration_)) {
  thread_ = std::thread([this] { Run(); });
}

LeaseKeeper::~LeaseKeeper() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void LeaseKeeper::Release() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
  if (absl::Status s = lease_->Release(); !s.ok()) {
    spdlog::warn("cannot release the leader lease: {}; a standby takes over once it lapses",
                 s.ToString());
    return;
  }
  spdlog::info("released the leader lease (epoch {})", lease_->epoch());
}

void LeaseKeeper::StepDownIfLapsed() {
  const absl::Time until = absl::FromUnixNanos(valid_until_ns_.load());
  if (absl::Now() < until) return;
  StepDown(absl::StrCat("no renewal of the leader lease (epoch ", lease_->epoch(),
                        ") succeeded for ", absl::FormatDuration(duration_),
                        ": a standby may lead by now"));
}

void LeaseKeeper::Run() {
  std::string last_error;
  while (!stop_.WaitForNotificationWithTimeout(duration_ / 4)) {
    const absl::Time sent = absl::Now();
    absl::Status renewed = lease_->Renew();
    if (renewed.ok()) {
      valid_until_ns_.store(absl::ToUnixNanos(sent + duration_));
      if (!last_error.empty()) spdlog::info("renewed the leader lease again");
      last_error.clear();
      continue;
    }
    if (renewed.code() == absl::StatusCode::kFailedPrecondition) {
      StepDown(std::string(renewed.message()));
    }
    if (std::string(renewed.message()) != last_error) {
      spdlog::warn(
          "cannot renew the leader lease: {}; trying again (stepping down {} after the "
          "last renewal)",
          renewed.ToString(), absl::FormatDuration(duration_));
      last_error = std::string(renewed.message());
    }
  }
}

}  // namespace trainctl::server
