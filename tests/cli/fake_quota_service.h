// The fake server's QuotaService (see fake_server.h): fixed projects and a fixed queue, so that
// every test sees the same answers whatever ran before it.
//
//   - Projects: team-a (own quota: 8 gpus, 32 cpu, 4 running jobs, cohort research, may borrow 2
//     gpus; 4 gpus, 8 cpu and 16384 MiB in use by 1 running job; 2 queued), team-s (own quota:
//     8 gpus, 16 cpu, 65536 MiB, cohort research, may borrow 2 gpus, best-effort FIFO with a 10m
//     starvation limit; idle) and vision (the default quota, unlimited; 2 gpus in use, 1 running,
//     1 queued, 1 gpu borrowed). Any other well-formed name has the default quota; others are
//     INVALID_ARGUMENT, like the real server.
//   - SetQuota checks gpus >= 0, remembers the request, and answers with the project as it
//     would be, without changing what later calls see.
//   - Queue, in admission order: j-q1 (team-a, position 1, waiting 5m, one QUOTA blocker), j-q2
//     (team-a, position 2, created 2m ago, never requeued; QUOTA and PRIORITY) and j-q3 (vision,
//     position 1, 30s, no blockers); ages dated back from each request.
//
// Thread-safe.
#pragma once

#include "absl/synchronization/mutex.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::cli {

class FakeQuotaService final : public v1::QuotaService::Service {
 public:
  grpc::Status GetQuota(grpc::ServerContext*, const v1::GetQuotaRequest* request,
                        v1::Project* project) override;
  grpc::Status SetQuota(grpc::ServerContext*, const v1::SetQuotaRequest* request,
                        v1::Project* project) override;
  grpc::Status ListProjects(grpc::ServerContext*, const v1::ListProjectsRequest*,
                            v1::ListProjectsResponse* response) override;
  grpc::Status ListQueue(grpc::ServerContext*, const v1::ListQueueRequest* request,
                         v1::ListQueueResponse* response) override;

  // The last SetQuota request served; empty before the first.
  v1::SetQuotaRequest LastSetQuotaRequest();

 private:
  absl::Mutex mu_;
  v1::SetQuotaRequest last_set_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::cli
