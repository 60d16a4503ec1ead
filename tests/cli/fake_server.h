// An in-process fake trainctl server for tests of the trainctl binary, and a way to run the
// binary against it.
//
//   Result get = Fake().Run("get j-ok -o json");
//   CHECK(get.exit_status == 0);
//
// The fake serves a scripted cluster:
//   - JobService: jobs j-ok, j-fail, j-flaky and j-slow (RUNNING; their watches end SUCCEEDED,
//     FAILED, SUCCEEDED after one broken stream, and never), j-described (FAILED after two
//     attempts: an internal retry, then its worker ran out of memory and was killed by SIGKILL),
//     j-retrying (only through GetJob: QUEUED for a retry due 5s after the request, its worker
//     RESTARTING in 4s), j-waiting (only through GetJob: QUEUED 13th in team-a behind 12 jobs,
//     held by its quota and the jobs ahead), and the jobs submitted; logs in 5-byte pieces.
//     HoldJob (held by alice), ReleaseJob, UpdateJob (its priority) and RequeueJob change the job
//     and record their request (LastQueueRequest). A spec with `array` makes a job array and a
//     QUEUED job per element ("<array id>-<index>", fake_jobs.h); ListJobs leaves elements out,
//     or with `array` lists only that array's. DeleteJob deletes a job that ended (an array with
//     its elements). JobCalls lists the calls that change jobs, in order.
//   - ClusterService: node-a (READY), node-b (LOST) and node-c (ISOLATED, flapping, failing its
//     checks); see fake_nodes.h for them and for what cordon, uncordon and drain answer. Nine
//     events dated back from the time of each request, oldest first: NodeRegistered (node-a,
//     60m), NodeRegistered (node-c, 40m), JobQueued (j-described, 30m), ReplicaStarted (worker-0
//     on node-b, 20m), NodeIsolated and NodeFlapping (node-c, both 12m), ReplicaExited (5m),
//     JobFailed and NodeDisconnected (node-b), both 150s.
//   - QuotaService: projects and a queue; see fake_quota_service.h.
//
// Thread-safe: the services lock their state.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

struct Result {
  int exit_status = -1;
  std::string out;
  std::string err;
};

class Fixture {
 public:
  Fixture();
  ~Fixture();

  // Runs `trainctl --server <fake> ARGS` from the source folder, with `input` on stdin.
  Result Run(const std::string& args, const std::string& input = "");

  // Runs `trainctl ARGS` from the source folder, with `input` on stdin.
  static Result RunBinary(const std::string& args, const std::string& input = "");

  // Runs `command` with /bin/sh: its stdout (stderr as the command redirects it) and exit status.
  static Result RunShell(const std::string& command);

  // The last ListEvents request the fake served.
  v1::ListEventsRequest LastEventsRequest() const;
  // The last GetNode, CordonNode, UncordonNode or DrainNode request the fake served, of the type
  // of `request`, copied into it; false when there was none.
  bool LastNodeRequest(google::protobuf::Message* request) const;
  // How many GetNode, CordonNode, UncordonNode and DrainNode requests the fake has served.
  int NodeRequests() const;
  // The last ReportProgress request the fake served.
  v1::ReportProgressRequest LastProgressRequest() const;
  // The last HoldJob, ReleaseJob, UpdateJob or RequeueJob request the fake served, copied into
  // `request` when of its type; false otherwise.
  bool LastQueueRequest(google::protobuf::Message* request) const;
  // The last ListJobs request the fake served.
  v1::ListJobsRequest LastListRequest() const;
  // Every CreateJob ("CreateJob"), CancelJob, DeleteJob, HoldJob and ReleaseJob ("CancelJob ID")
  // call the fake served, in order.
  std::vector<std::string> JobCalls() const;
  // The last SetQuota request the fake served.
  v1::SetQuotaRequest LastSetQuotaRequest() const;

 private:
  class Services;
  std::unique_ptr<Services> services_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// One fake server for the whole test binary, started on first use.
Fixture& Fake();

}  // namespace trainctl::cli
