// NetnsLink: a network namespace joined to the host by a veth pair, for tests that cut the
// network between the scheduler and one agent (partition_test.cc).
//
// The namespace gets 10.213.X.Y+2/30 and the host end 10.213.X.Y+1/30, both up, with loopback
// up in the namespace. trainctld listens on host_address(); an agent started under Exec() (the
// prefix MiniCluster's ClusterOptions::agent_prefix takes) reaches it only through the pair.
// Names and the /30 are drawn from the process id and a counter, so tests of parallel ctest
// processes never share them.
//
//   if (std::string why = NetnsLink::Unavailable(); !why.empty()) { WARN(why); return; }
//   NetnsLink link;                          // before the cluster: it outlives the cluster
//   ClusterOptions o;
//   o.agent_prefix[1] = link.Exec();
//   link.Down(); ... link.Up();              // both directions, as a pulled cable
//   link.DropOutgoing(); ... link.Heal();    // one direction, by nft rules in the namespace
//
// Cleanup: the destructor deletes the namespace and the veth pair, also when a REQUIRE failed
// (an exception unwinds through it). A test process that died without unwinding leaves its
// namespace behind: the next NetnsLink deletes every namespace of this fixture whose process is
// gone. Processes are never killed here: the cluster stops its own, by PID.
//
// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and `ip`; the one-way cuts need `nft`
// (Debian's nftables). Unavailable() and NftUnavailable() say why a test cannot run, and the
// tests then pass with a warning, so a build without root still passes. Thread-compatible.
#pragma once

#include <string>
#include <vector>

namespace trainctl::testing {

class NetnsLink {
 public:
  // "" when namespaces can be made here; else why not, for the test's warning.
  static std::string Unavailable();
  // "" when `nft` can filter inside a namespace; else why not.
  static std::string NftUnavailable();

  // Creates the namespace and the pair; REQUIREs success.
  NetnsLink();
  ~NetnsLink();
  NetnsLink(const NetnsLink&) = delete;
  NetnsLink& operator=(const NetnsLink&) = delete;

  const std::string& name() const { return name_; }
  // The host end's address (no prefix length): where trainctld listens.
  const std::string& host_address() const { return host_address_; }
  // The namespace end's address: the agent's --address.
  const std::string& ns_address() const { return ns_address_; }
  // {"/usr/sbin/ip", "netns", "exec", name()}: runs a command in the namespace.
  std::vector<std::string> Exec() const;

  // The host end goes down: nothing passes either way (TCP connections stay open and
  // retransmit). Up() brings it back.
  void Down();
  void Up();
  // Drops, inside the namespace, what it sends to the host (the agent's messages to the
  // scheduler) or what it receives from the host (the scheduler's answers). Heal() lifts every
  // rule.
  void DropOutgoing();
  void DropIncoming();
  // Drops, inside the namespace, every TCP packet to `port` (a listener of a process in it), from
  // anywhere (other processes of the namespace included). Heal() lifts it.
  void DropTcpPort(int port);
  void Heal();

 private:
  // A chain on `hook` ("input", "output") of the namespace's table with a rule that drops packets
  // matching `rule` (nft words, e.g. {"ip", "saddr", "10.213.0.1"}).
  void Drop(const std::string& hook, const std::vector<std::string>& rule);

  std::string name_;
  std::string host_if_;
  std::string ns_if_;
  std::string host_address_;
  std::string ns_address_;
};

}  // namespace trainctl::testing
