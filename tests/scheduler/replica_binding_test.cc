// ReplicaBinding on its own, over a NodeRegistry of two nodes: what a replica holds on its node
// (resources, ports, GPUs) follows Bind, Unbind and Rebind; ports and GPUs are taken back after
// an in-place restart while still free; RenewPorts gives new ones; the checks see a difference.
#include "scheduler/replica_binding.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

struct Binding {
  NodeRegistry nodes{NodePolicy{}};
  ReplicaBinding binding{&nodes.book()};
  JobTable jobs{7};
  Job* job = nullptr;

  // node-a and node-b with 2 GPUs each; a job of a primary (two ports) and one worker, both on
  // node-a and RUNNING (as the lifecycle sets the state before it binds), holding nothing yet.
  Binding() {
    Effects fx;
    for (const char* n : {"node-a", "node-b"})
      nodes.Register(testing::Reg(n, 4, 4096, 2), kT0, &fx);
    Job j;
    j.id = "job-1";
    for (int rank = 0; rank < 2; ++rank) {
      Replica r;
      r.name = rank == 0 ? "chief-0" : "worker-0";
      r.rank = rank;
      r.node = "node-a";
      r.need = Res{1, 100, 1};
      r.state = v1::REPLICA_STATE_RUNNING;
      j.replicas.push_back(std::move(r));
    }
    job = jobs.Insert(std::move(j));
  }
  Replica& chief() { return job->replicas[0]; }
  Replica& worker() { return job->replicas[1]; }
  // Binds every replica as it starts on its node: ports come with the launch.
  void BindAll() {
    for (Replica& r : job->replicas) {
      binding.Bind(*job, &r);
      if (r.port == 0) binding.AllocatePorts(&r);
    }
  }
  void Check() const {
    INFO(binding.CheckPorts(jobs).ToString() << binding.CheckDevices(jobs).ToString());
    CHECK(binding.CheckPorts(jobs).ok());
    CHECK(binding.CheckDevices(jobs).ok());
  }
};

TEST_CASE("ReplicaBinding: Bind holds resources, ports and GPUs, Unbind gives them back") {
  Binding b;
  b.BindAll();
  CHECK(b.nodes.UsageOf("node-a").replicas == 2);
  CHECK(b.nodes.UsageOf("node-a").used.gpus == 2);
  CHECK(b.chief().port != 0);
  CHECK(b.chief().rendezvous_port != 0);  // the primary's rendezvous port
  CHECK(b.worker().rendezvous_port == 0);
  CHECK(b.chief().gpu_devices.size() == 1);
  CHECK(b.nodes.book().PortsOf("node-a")->used() == 3);
  b.Check();

  b.chief().state = v1::REPLICA_STATE_STOPPED;
  b.binding.Unbind(b.chief());
  CHECK(b.nodes.UsageOf("node-a").replicas == 1);
  CHECK(b.nodes.book().PortsOf("node-a")->used() == 1);
  CHECK(b.chief().port != 0);  // remembered for an in-place restart
  CHECK(b.chief().gpu_devices.size() == 1);
  b.Check();
}

TEST_CASE("ReplicaBinding: an in-place restart takes its ports and GPUs back while still free") {
  Binding b;
  b.BindAll();
  const std::pair<int32_t, int32_t> ports = {b.chief().port, b.chief().rendezvous_port};
  const std::vector<int32_t> gpus = b.chief().gpu_devices;
  b.chief().state = v1::REPLICA_STATE_RESTARTING;
  b.binding.Unbind(b.chief());

  SECTION("all still free: the same ones") {
    b.chief().state = v1::REPLICA_STATE_STARTING;
    b.binding.Bind(*b.job, &b.chief());
    CHECK(std::make_pair(b.chief().port, b.chief().rendezvous_port) == ports);
    CHECK(b.chief().gpu_devices == gpus);
  }
  SECTION("one port taken meanwhile: none of them, new ones at launch") {
    REQUIRE(b.nodes.book().ReservePort("node-a", ports.second));
    b.chief().state = v1::REPLICA_STATE_STARTING;
    b.binding.Bind(*b.job, &b.chief());
    CHECK(b.chief().port == 0);
    CHECK(b.chief().rendezvous_port == 0);
    CHECK(b.nodes.book().PortsOf("node-a")->InUse(ports.first) == false);
    b.nodes.book().ReleasePort("node-a", ports.second);
    b.binding.AllocatePorts(&b.chief());
    CHECK(b.chief().port != 0);
  }
  b.Check();
}

TEST_CASE("ReplicaBinding: Rebind moves what it holds and forgets the old node's ports and GPUs") {
  Binding b;
  b.BindAll();
  b.binding.Rebind(*b.job, &b.worker(), "node-b");
  CHECK(b.worker().node == "node-b");
  CHECK(b.worker().port == 0);                // new ports come with the launch there
  CHECK(b.worker().gpu_devices.size() == 1);  // held there at once: it holds resources
  CHECK(b.nodes.UsageOf("node-a").replicas == 1);
  CHECK(b.nodes.UsageOf("node-b").replicas == 1);
  CHECK(b.nodes.book().PortsOf("node-a")->used() == 2);
  b.binding.AllocatePorts(&b.worker());
  b.Check();
}

TEST_CASE("ReplicaBinding: Leave forgets the ports and GPUs of a replica that holds nothing") {
  Binding b;
  b.BindAll();
  b.worker().state = v1::REPLICA_STATE_PENDING;
  b.binding.Unbind(b.worker());
  b.binding.Leave(&b.worker());
  CHECK(b.worker().port == 0);
  CHECK(b.worker().gpu_devices.empty());
  b.Check();
}

TEST_CASE("ReplicaBinding: RenewPorts gives every replica new ports, the checks see a stray one") {
  Binding b;
  b.BindAll();
  const int32_t old_port = b.chief().port;
  b.binding.RenewPorts(b.job);
  CHECK(b.chief().port != 0);
  CHECK(b.chief().port != old_port);
  CHECK(b.nodes.book().PortsOf("node-a")->used() == 3);
  b.Check();

  REQUIRE(b.nodes.book().ReservePort("node-a", old_port));  // held by no replica
  CHECK(absl::IsInternal(b.binding.CheckPorts(b.jobs)));
  b.nodes.book().ReleasePort("node-a", old_port);
  b.nodes.book().ReleaseDevices("node-a",
                                b.worker().gpu_devices);  // a replica's GPU freed behind it
  CHECK(absl::IsInternal(b.binding.CheckDevices(b.jobs)));
}

}  // namespace
}  // namespace trainctl::sched
