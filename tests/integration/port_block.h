// A block of ports for one test cluster's `trainctld --port-range`. Clusters of tests that run at
// the same time on one host must never hand out the same port (each trainctld's pools start at the
// bottom of its range, and every agent of a test is 127.0.0.1), and no port of a block may be one
// the kernel gives out on its own: a MASTER_PORT that an outgoing connection or a port-0 listener
// of another process holds makes a replica's rendezvous fail to bind. So a block lies outside the
// host's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), and it is held with an flock on
// one file per 128 ports under /tmp/trainctl-test-ports/ for the life of the object, which
// tests/python/minicluster.py takes the same way.
#ifndef TRAINCTL_TESTS_INTEGRATION_PORT_BLOCK_H_
#define TRAINCTL_TESTS_INTEGRATION_PORT_BLOCK_H_

#include <string>
#include <vector>

namespace trainctl::testing {

class PortBlock {
 public:
  // At least `size` consecutive ports (a whole number of 128-port units). Fails the test when
  // none is free.
  explicit PortBlock(int size = 256);
  ~PortBlock();
  PortBlock(const PortBlock&) = delete;
  PortBlock& operator=(const PortBlock&) = delete;

  int lo() const { return lo_; }
  int hi() const { return hi_; }
  // "LO-HI", as --port-range takes it.
  std::string range() const;

 private:
  int lo_ = 0;
  int hi_ = 0;
  std::vector<int> locks_;  // the flocked files' descriptors
};

}  // namespace trainctl::testing

#endif  // TRAINCTL_TESTS_INTEGRATION_PORT_BLOCK_H_
