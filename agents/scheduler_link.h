// SchedulerLink: where the agent's stream to the scheduler goes. --scheduler is one trainctld
// (HOST:PORT), or several (a:7070,b:7070): trainctld replicas that share one PostgreSQL store,
// one leading and the others standbys that end every stream UNAVAILABLE naming the leader
// (common/leader_hint.h). The link keeps one channel per address, dials the address its
// LeaderFollow (common/leader_follow.h) picks, and after each stream says where to go next:
//
//   SchedulerLink link(options.scheduler, make_channel);
//   std::unique_ptr<Stream> s = link.stub().Connect(&context);   // to link.address()
//   ...
//   if (link.Next(end) == SchedulerLink::Dial::kAfterBackoff) Sleep(backoff);
//
// - A standby that names a leader: the leader next, at once (also one not in --scheduler); more
//   than LeaderFollow::kMaxRedirects redirects in a row wait a backoff.
// - Anything else (down, no leader yet, a stream the agent left, a stream that broke): the next
//   address of the list, at once until every address failed in a row, then after a backoff.
//   With one address: after a backoff, as ever.
// - A channel that never connected is made anew at its next use, so the dial does not wait out
//   gRPC's own reconnect backoff; the others are kept.
//
// TLS: every address gets the same credentials, so each trainctld's certificate must be valid
// for the name the agent dials it by (the name in --scheduler, or the address a standby names).
//
// Thread-compatible: the agent's Run() thread alone uses it.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/support/status.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/leader_follow.h"
#include "trainctl/v1/agent.grpc.pb.h"
#include "trainctl/v1/leader.pb.h"

namespace trainctl::agent {

class SchedulerLink {
 public:
  using MakeChannel = std::function<std::shared_ptr<grpc::Channel>(const std::string& address)>;

  // How a stream to address() ended.
  struct StreamEnd {
    // Register was written.
    bool connected = false;
    // A RegisterAck arrived: address() served.
    bool registered = false;
    grpc::Status status;
    // The leader its status names (LeaderHint): it ended at a standby.
    std::optional<v1::LeaderInfo> leader;
  };

  // `scheduler`: --scheduler. A text that is not an address list (ParseAddressList) is one gRPC
  // target, dialed as it is.
  SchedulerLink(const std::string& scheduler, MakeChannel make_channel);

  // The address to dial now.
  const std::string& address() const { return follow_.current(); }
  bool several() const { return follow_.several(); }
  // address()'s stub, on its channel.
  v1::AgentService::Stub& stub();
  enum class Dial {
    kLeader,        // a standby named the leader: dial it at once
    kNext,          // the next address of the list, at once
    kAfterBackoff,  // after a backoff
  };
  // After a stream to address() ended as `end`: picks the address to dial next (address()).
  Dial Next(const StreamEnd& end);

 private:
  const MakeChannel make_channel_;
  LeaderFollow follow_;
  struct Link {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::AgentService::Stub> stub;
  };
  std::map<std::string, Link> links_;
};

}  // namespace trainctl::agent
