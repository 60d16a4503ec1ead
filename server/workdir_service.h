// WorkdirService: uploads of jobs' working directories over gRPC, an edge over Api
// (server/api.h, api_workdirs.cc). Served by gRPC's synchronous API: an upload's stream is read
// as the WorkdirStore writes it, a chunk of at most 1 MiB at a time, on the call's own thread, so
// neither the reconcile loop nor the callback threads ever wait for it.
//
// The first message names the project, digest and size (checked, with the caller's right to
// submit in the project, before any byte is stored); later ones may repeat them (they must then
// match) and carry the data. The bytes are hashed as they come (UploadCheck, upload_check.h, as
// the REST upload's are): an upload whose digest or size does not match what it announced is
// refused and nothing of it is kept.
#pragma once

#include "server/api.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class WorkdirServiceImpl final : public v1::WorkdirService::Service {
 public:
  // `api` (not owned) must outlive the service.
  explicit WorkdirServiceImpl(Api* api) : api_(api) {}

  grpc::Status UploadWorkdir(grpc::ServerContext* ctx,
                             grpc::ServerReader<v1::UploadWorkdirRequest>* reader,
                             v1::Workdir* resp) override;
  grpc::Status GetWorkdir(grpc::ServerContext* ctx, const v1::GetWorkdirRequest* req,
                          v1::Workdir* resp) override;

 private:
  Api* const api_;
};

}  // namespace trainctl::server
