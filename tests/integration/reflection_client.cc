#include "tests/integration/reflection_client.h"

#include <chrono>

#include "google/protobuf/unknown_field_set.h"

namespace trainctl::testing {
namespace {

namespace pb = google::protobuf;

// A length-delimited field `number` holding `value`, on the wire (values under 128 bytes).
std::string Field(int number, const std::string& value) {
  std::string out;
  out.push_back(static_cast<char>((number << 3) | 2));
  out.push_back(static_cast<char>(value.size()));
  return out + value;
}

// The length-delimited values of field `number` of `bytes`.
std::vector<std::string> Values(const std::string& bytes, int number) {
  pb::UnknownFieldSet set;
  std::vector<std::string> out;
  if (!set.ParseFromString(bytes)) return out;
  for (int i = 0; i < set.field_count(); ++i) {
    const pb::UnknownField& f = set.field(i);
    if (f.number() == number && f.type() == pb::UnknownField::TYPE_LENGTH_DELIMITED) {
      out.push_back(f.length_delimited());
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> ReflectionExchange(const std::shared_ptr<grpc::Channel>& channel,
                                               const std::string& request) {
  grpc::internal::RpcMethod method("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                   grpc::internal::RpcMethod::BIDI_STREAMING, channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          channel.get(), method, &ctx));
  grpc::Slice slice(request);
  grpc::ByteBuffer out(&slice, 1);
  stream->Write(out);
  stream->WritesDone();
  grpc::ByteBuffer in;
  std::string response;
  if (stream->Read(&in)) {
    std::vector<grpc::Slice> slices;
    if (in.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        response.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
  }
  grpc::Status status = stream->Finish();
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  return response;
}

std::string ListServicesRequest() { return Field(7, ""); }

std::string FileContainingSymbolRequest(const std::string& symbol) { return Field(4, symbol); }

std::vector<std::string> ServiceNames(const std::string& response) {
  std::vector<std::string> names;
  for (const std::string& list : Values(response, 6)) {
    for (const std::string& service : Values(list, 1)) {
      for (const std::string& name : Values(service, 1)) names.push_back(name);
    }
  }
  return names;
}

std::vector<pb::FileDescriptorProto> FileDescriptors(const std::string& response) {
  std::vector<pb::FileDescriptorProto> files;
  for (const std::string& files_response : Values(response, 4)) {
    for (const std::string& bytes : Values(files_response, 1)) {
      pb::FileDescriptorProto file;
      if (file.ParseFromString(bytes)) files.push_back(std::move(file));
    }
  }
  return files;
}

}  // namespace trainctl::testing
