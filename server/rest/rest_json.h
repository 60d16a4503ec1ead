// The JSON side of trainctld's REST API: protobuf messages to and from the protobuf JSON mapping
// (what `trainctl get -o json` prints), query strings and path parameters into request messages,
// and errors as google.rpc.Status JSON with their HTTP status.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace trainctl::server::rest {

// The HTTP status of a canonical code: INVALID_ARGUMENT 400, UNAUTHENTICATED 401,
// PERMISSION_DENIED 403, NOT_FOUND 404, ALREADY_EXISTS 409, RESOURCE_EXHAUSTED 429,
// UNAVAILABLE 503, ... (google.rpc.Code's mapping).
int HttpStatusOf(absl::StatusCode code);

// google.rpc.Status as JSON: {"code":5,"message":"job j-x not found","details":[]}.
std::string StatusJson(const absl::Status& status);

// The message in the JSON mapping, every field printed (defaults too), on one line.
std::string ToJson(const google::protobuf::Message& message);

// Parses `json` into `out` (cleared first). Unknown fields and wrong types are INVALID_ARGUMENT
// with the reason, prefixed by `what` ("body").
absl::Status FromJson(const std::string& json, const std::string& what,
                      google::protobuf::Message* out);

// protobuf's JSON parse error `message`, for a message of type `root`, in the JSON names the user
// wrote: "(spec.worker_pools[0].replica_count): invalid value "x" for type TYPE_INT32" becomes
// "spec.workerPools[0].replicaCount: invalid value "x" for type int32", "(spec) nme: Cannot find
// field." becomes "spec: JobSpec has no field "nme"". A message it does not recognise is kept.
std::string InJsonNames(const google::protobuf::Descriptor* root, const std::string& message);

// Parameters of one request: each name (a field's JSON name, or a dotted path of them for a
// nested field such as "quota.project") with its values in order.
using Params = std::multimap<std::string, std::string>;

// Sets the fields of `out` named by `params`. Scalars take one value, repeated fields any number
// (also comma separated); enums take their names, Timestamps RFC 3339, Durations "1.5s".
// INVALID_ARGUMENT naming the parameter when it is no field of the message, is given twice, or
// does not parse; `skip` names parameters the caller handles itself.
absl::Status SetFields(const Params& params, const std::vector<std::string>& skip,
                       google::protobuf::Message* out);

}  // namespace trainctl::server::rest
