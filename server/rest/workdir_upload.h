// POST /v1/projects/{project}/workdirs?digest=sha256:...: a job's working directory, a tar
// archive sent as the raw body (application/x-tar, Content-Length its size), stored as gRPC's
// WorkdirService.UploadWorkdir stores it (server/workdir_service.h).
//
// The caller's right to submit in the project, the digest and the size (Content-Length, up to
// --max-workdir-mb) are checked before a byte of the body is read (Api::Authorize,
// Api::CheckUpload): a client that sends `Expect: 100-continue` (curl does, for large bodies) is
// refused before it sends the body; another's body is discarded by the server, unread. The
// body is never held whole: the HTTP thread reads it in pieces handed, a MiB at a time and at most
// two MiB waiting, to a thread of the upload's own that hashes and writes them through
// Api::StoreUpload (UploadCheck, server/upload_check.h). Bytes that do not hash to the digest
// abandon the upload, nothing of it kept: 400 naming both digests. An upload holds one of the
// --http-max-streams places while it lasts, as it holds a thread of the server's pool.
#pragma once

#include "server/api.h"
#include "server/rest/routes.h"

namespace trainctl::server::rest {

// The route's handler (Route::handle): `req` carries the path and query parameters, the
// Content-Length and the body's reader (HttpRequest::read_body).
HttpReply UploadWorkdir(Api* api, StreamRegistry* streams, HttpRequest& req);

// The checks UploadWorkdir makes before it reads the body (Route::check_first): authorization,
// the parameters, the Content-Length against --max-workdir-mb.
absl::Status CheckWorkdirUpload(Api* api, const HttpRequest& req);

}  // namespace trainctl::server::rest
