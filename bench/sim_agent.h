// A simulated trainctl-agent for benchmarks: one gRPC stream to trainctld per agent, many agents
// in one process. Each registers a node, heartbeats at the interval trainctld asks for, and
// answers every launch as an agent would: ReplicaStarted at once, ReplicaExited (code 0) after
// the duration in the launch's SIM_MS env (default 1 s), and an exit by signal 15 for a stop.
// A fabric check (CheckFabric) is answered at once, every probe passed. Nothing runs.
//
//   Timers timers;                          // one thread for every agent's heartbeats and exits
//   Counts counts;                          // what the agents saw, together
//   SimAgent agent(0, 32, false, &timers, &counts);
//   agent.Start(stub);                      // registers; then counts.registered == 1
//   ...
//   agent.Close();                          // before timers and counts go
//
// Thread-safety: Counts and Timers may be used from any thread; a SimAgent's methods are called
// by gRPC's threads and the timer thread, and Close once, from the owner.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::bench {

using Clock = std::chrono::steady_clock;

// Runs functions at their times, on one thread.
class Timers {
 public:
  Timers() : thread_([this] { Run(); }) {}
  ~Timers() { Stop(); }
  void After(std::chrono::milliseconds delay, std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    due_.push({Clock::now() + delay, seq_++, std::move(fn)});
    cv_.notify_one();
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Item {
    Clock::time_point at;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Item& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      if (due_.empty()) {
        cv_.wait(lock);
        continue;
      }
      if (due_.top().at > Clock::now()) {
        cv_.wait_until(lock, due_.top().at);
        continue;
      }
      std::function<void()> fn = due_.top().fn;
      due_.pop();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> due_;
  uint64_t seq_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

// What every simulated agent counts.
struct Counts {
  std::atomic<int64_t> registered{0};
  std::atomic<int64_t> heartbeats{0};
  std::atomic<int64_t> launches{0};
  std::atomic<int64_t> exits{0};
  std::mutex mu;
  std::unordered_set<std::string> jobs_launched;
  Clock::time_point last_launch;

  void Launched(const std::string& job_id) {
    launches++;
    std::lock_guard<std::mutex> lock(mu);
    jobs_launched.insert(job_id);
    last_launch = Clock::now();
  }
  size_t JobsLaunched() {
    std::lock_guard<std::mutex> lock(mu);
    return jobs_launched.size();
  }
};

// One agent's stream, on gRPC's callback API: reads run on gRPC's threads, writes are queued
// and sent one at a time.
class SimAgent
    : public grpc::ClientBidiReactor<trainctl::v1::AgentMessage, trainctl::v1::SchedulerMessage> {
 public:
  // Node "sim-<index>" of `cpus` cpus; with `topology`, labelled topology.block (100 hosts),
  // topology.rack (20) and topology.host.
  SimAgent(int index, int cpus, bool topology, Timers* timers, Counts* counts)
      : index_(index),
        cpus_(cpus),
        topology_(topology),
        name_(absl::StrCat("sim-", index)),
        timers_(timers),
        counts_(counts) {}

  void Start(trainctl::v1::AgentService::Stub* stub) {
    stub->async()->Connect(&ctx_, this);
    trainctl::v1::AgentMessage reg;
    trainctl::v1::Register* r = reg.mutable_register_();
    r->set_node(name_);
    r->set_address("127.0.0.1");
    r->set_fabric_port(1);  // never dialled: checks are answered at once
    r->mutable_capacity()->set_cpu(cpus_);
    r->mutable_capacity()->set_memory_mb(int64_t{cpus_} * 4096);
    *r->mutable_allocatable() = r->capacity();
    r->set_agent_instance(absl::StrCat(name_, "-", getpid()));
    r->set_agent_version("bench");
    if (topology_) {
      (*r->mutable_labels())["topology.block"] = absl::StrCat("b", index_ / 100);
      (*r->mutable_labels())["topology.rack"] = absl::StrCat("r", index_ / 20);
      (*r->mutable_labels())["topology.host"] = name_;
    }
    AddHold();  // until Close: writes come from the timer thread too
    Send(std::move(reg));
    StartRead(&in_);
    StartCall();
  }

  // Ends the stream and waits for gRPC to be done with it.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    ctx_.TryCancel();
    RemoveHold();
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return done_; });
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    Handle(in_);
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    trainctl::v1::AgentMessage* next = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok) closing_ = true;
      if (!closing_ && !pending_.empty()) {
        out_ = std::move(pending_.front());
        pending_.pop_front();
        writing_ = true;
        next = &out_;
      }
    }
    if (next != nullptr) StartWrite(next);
  }
  void OnDone(const grpc::Status&) override {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    done_cv_.notify_all();
  }

 private:
  void Send(trainctl::v1::AgentMessage msg) {
    trainctl::v1::AgentMessage* next = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return;
      msg.set_seq(++seq_);
      if (writing_) {
        pending_.push_back(std::move(msg));
        return;
      }
      out_ = std::move(msg);
      writing_ = true;
      next = &out_;
    }
    StartWrite(next);
  }

  void Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return;
    }
    trainctl::v1::AgentMessage hb;
    hb.mutable_heartbeat();
    Send(std::move(hb));
    counts_->heartbeats++;
    timers_->After(heartbeat_, [this] { Heartbeat(); });
  }

  void Exit(const std::string& run_id, int code, int signal) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (running_.erase(run_id) == 0) return;  // already ended
    }
    trainctl::v1::AgentMessage m;
    trainctl::v1::ReplicaExited* e = m.mutable_replica_exited();
    e->set_run_id(run_id);
    if (signal != 0) {
      e->set_signal(signal);
    } else {
      e->set_exit_code(code);
    }
    Send(std::move(m));
    counts_->exits++;
  }

  void Handle(const trainctl::v1::SchedulerMessage& msg) {
    if (msg.has_register_ack()) {
      heartbeat_ = std::chrono::milliseconds(msg.register_ack().heartbeat_interval_ms());
      counts_->registered++;
      timers_->After(heartbeat_, [this] { Heartbeat(); });
    } else if (msg.has_launch()) {
      const trainctl::v1::LaunchReplica& launch = msg.launch();
      const std::string run_id = launch.run_id();
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!running_.insert(run_id).second) return;  // a resend
      }
      counts_->Launched(launch.job_id());
      trainctl::v1::AgentMessage started;
      started.mutable_replica_started()->set_run_id(run_id);
      started.mutable_replica_started()->set_pid(1000 + static_cast<int>(seq_ % 30000));
      Send(std::move(started));
      int ms = 1000;
      if (auto it = launch.env().find("SIM_MS"); it != launch.env().end()) {
        (void)absl::SimpleAtoi(it->second, &ms);
      }
      timers_->After(std::chrono::milliseconds(ms), [this, run_id] { Exit(run_id, 0, 0); });
    } else if (msg.has_stop()) {
      Exit(msg.stop().run_id(), 0, 15);
    } else if (msg.has_check_fabric()) {
      trainctl::v1::AgentMessage answer;
      trainctl::v1::FabricReport* report = answer.mutable_fabric();
      report->set_request_id(msg.check_fabric().request_id());
      for (const trainctl::v1::FabricPeer& peer : msg.check_fabric().targets()) {
        trainctl::v1::FabricProbe* p = report->add_probes();
        p->set_to(peer.node());
        p->set_ok(true);
      }
      Send(std::move(answer));
    }
  }

  const int index_;
  const int cpus_;
  const bool topology_;
  const std::string name_;
  Timers* const timers_;
  Counts* const counts_;
  grpc::ClientContext ctx_;
  trainctl::v1::SchedulerMessage in_;
  std::chrono::milliseconds heartbeat_{2000};

  std::mutex mu_;
  std::condition_variable done_cv_;
  trainctl::v1::AgentMessage out_;
  std::deque<trainctl::v1::AgentMessage> pending_;
  std::unordered_set<std::string> running_;
  uint64_t seq_ = 0;
  bool writing_ = false;
  bool closing_ = false;
  bool done_ = false;
};

}  // namespace trainctl::bench
