// Helpers shared by the fuzz targets of tests/fuzz/.
#pragma once

#include <string>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"

namespace trainctl::fuzz {

// The message's wire bytes with map entries in key order: two messages are equal when their
// bytes are (unlike a field-by-field comparison, a NaN equals itself here).
inline std::string Bytes(const google::protobuf::Message& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }  // The streams give back what they did not write as they end.
  return out;
}

}  // namespace trainctl::fuzz
