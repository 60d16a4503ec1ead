#include "server/request_diagnosis.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/wire_format_lite.h"

namespace trainctl::server {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::internal::WireFormatLite;

// Nested messages deeper than this are not walked (protobuf's own parse limit is 100).
constexpr int kMaxDepth = 100;

bool ValidUtf8(std::string_view s) {
  return google::protobuf::internal::IsStructurallyValidUTF8(s.data(), static_cast<int>(s.size()));
}

// One length-delimited field of a message: its descriptor (null when unknown) and bytes.
struct Field {
  const FieldDescriptor* descriptor;
  std::string bytes;
};

// The length-delimited fields of `wire`, in order, as far as the bytes are well formed.
std::vector<Field> LengthDelimitedFields(const Descriptor* type, std::string_view wire) {
  std::vector<Field> out;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(wire.data()),
                                            static_cast<int>(wire.size()));
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) break;
    if (WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag)) break;
      continue;
    }
    uint32_t length = 0;
    std::string bytes;
    if (!in.ReadVarint32(&length) || !in.ReadString(&bytes, static_cast<int>(length))) break;
    out.push_back(
        {type->FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag)), std::move(bytes)});
  }
  return out;
}

std::optional<std::string> Find(const Descriptor* type, std::string_view wire,
                                const std::string& path, int depth);

// A map entry at `path` (`spec.workerPools[0].env`): its key, then its value.
std::optional<std::string> FindInMapEntry(const Descriptor* entry, std::string_view wire,
                                          const std::string& path, int depth) {
  const FieldDescriptor* key = entry->map_key();
  const FieldDescriptor* value = entry->map_value();
  std::string key_text;
  std::vector<Field> fields = LengthDelimitedFields(entry, wire);
  for (const Field& f : fields) {
    if (f.descriptor != key || key->type() != FieldDescriptor::TYPE_STRING) continue;
    if (!ValidUtf8(f.bytes)) return absl::StrCat(path, " has a key that");
    key_text = f.bytes;
  }
  const std::string at = absl::StrCat(path, "[\"", key_text, "\"]");
  for (const Field& f : fields) {
    if (f.descriptor != value) continue;
    if (value->type() == FieldDescriptor::TYPE_STRING && !ValidUtf8(f.bytes)) return at;
    if (value->type() == FieldDescriptor::TYPE_MESSAGE) {
      if (auto found = Find(value->message_type(), f.bytes, at, depth + 1)) return found;
    }
  }
  return std::nullopt;
}

std::optional<std::string> Find(const Descriptor* type, std::string_view wire,
                                const std::string& path, int depth) {
  if (depth > kMaxDepth) return std::nullopt;
  std::vector<int> seen(static_cast<size_t>(type->field_count()), 0);
  for (const Field& f : LengthDelimitedFields(type, wire)) {
    const FieldDescriptor* d = f.descriptor;
    if (d == nullptr) continue;
    std::string at = path.empty() ? d->json_name() : absl::StrCat(path, ".", d->json_name());
    if (d->is_map()) {
      if (auto found = FindInMapEntry(d->message_type(), f.bytes, at, depth + 1)) return found;
      continue;
    }
    if (d->is_repeated()) absl::StrAppend(&at, "[", seen[static_cast<size_t>(d->index())]++, "]");
    if (d->type() == FieldDescriptor::TYPE_STRING && !ValidUtf8(f.bytes)) return at;
    if (d->type() == FieldDescriptor::TYPE_MESSAGE) {
      if (auto found = Find(d->message_type(), f.bytes, at, depth + 1)) return found;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> FindInvalidUtf8(const Descriptor* type, std::string_view wire) {
  return Find(type, wire, "", 0);
}

std::string DescribeUnparsable(const Descriptor* type, grpc_byte_buffer* bytes) {
  std::string wire;
  grpc_byte_buffer_reader reader;
  if (bytes != nullptr && grpc_byte_buffer_reader_init(&reader, bytes) != 0) {
    grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
    wire.assign(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(all)), GRPC_SLICE_LENGTH(all));
    grpc_slice_unref(all);
    grpc_byte_buffer_reader_destroy(&reader);
  }
  if (std::optional<std::string> field = FindInvalidUtf8(type, wire)) {
    return absl::StrCat(*field, " must be valid UTF-8");
  }
  return absl::StrCat("the request is not a valid ", type->full_name(), " message (", wire.size(),
                      " bytes)");
}

namespace request_diagnosis_internal {

const std::string*& PendingRefusal() {
  thread_local const std::string* refusal = nullptr;
  return refusal;
}

int MethodIndex(const char* service, const char* method) {
  const google::protobuf::ServiceDescriptor* s =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
  const google::protobuf::MethodDescriptor* m =
      s == nullptr ? nullptr : s->FindMethodByName(method);
  if (m == nullptr) {
    // A programming error: the name list in a service's constructor is wrong.
    std::abort();
  }
  return m->index();
}

}  // namespace request_diagnosis_internal
}  // namespace trainctl::server
