#include "tests/common/proto_fill.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"

namespace trainctl::testing {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Elements of every repeated field and entries of every map.
constexpr int kRepeatedSize = 2;

class Filler {
 public:
  explicit Filler(const std::set<std::string>& excluded) : excluded_(excluded) {}

  void Fill(Message* m) {
    const Descriptor* d = m->GetDescriptor();
    if (d->full_name() == "google.protobuf.Timestamp") {
      SetTime(m, 1700000000 + Next());
      return;
    }
    if (d->full_name() == "google.protobuf.Duration") {
      SetTime(m, Next());
      return;
    }
    path_.push_back(d);
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (excluded_.count(f->full_name()) > 0) continue;
      const google::protobuf::OneofDescriptor* oneof = f->real_containing_oneof();
      if (oneof != nullptr && oneof->field(0) != f) continue;
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && OnPath(f->message_type())) continue;
      FillField(m, f);
    }
    path_.pop_back();
  }

 private:
  // A value no earlier call returned: 1, 2, 3...
  int64_t Next() { return ++counter_; }

  bool OnPath(const Descriptor* d) const {
    for (const Descriptor* p : path_) {
      if (p == d) return true;
    }
    return false;
  }

  // Sets a Timestamp's or Duration's seconds, and nanos that are not a whole millisecond.
  void SetTime(Message* m, int64_t seconds) {
    const Descriptor* d = m->GetDescriptor();
    const Reflection* r = m->GetReflection();
    r->SetInt64(m, d->FindFieldByName("seconds"), seconds);
    r->SetInt32(m, d->FindFieldByName("nanos"),
                static_cast<int32_t>((Next() * 1000001) % 1000000000));
  }

  void FillField(Message* m, const FieldDescriptor* f) {
    const Reflection* r = m->GetReflection();
    if (!f->is_repeated()) {
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        Fill(r->MutableMessage(m, f));
      } else {
        SetScalar(m, f, /*add=*/false);
      }
      return;
    }
    r->ClearField(m, f);
    for (int i = 0; i < kRepeatedSize; ++i) {
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
        SetScalar(m, f, /*add=*/true);
        continue;
      }
      Message* element = r->AddMessage(m, f);
      Fill(element);
      if (f->is_map()) {
        // A bool key has only two values: false, then true, so the entries stay apart.
        const FieldDescriptor* key = f->message_type()->map_key();
        if (key->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
          element->GetReflection()->SetBool(element, key, i == 1);
        }
      }
    }
  }

  // Sets (or, with `add`, appends) a value of its own to the scalar field `f`.
  void SetScalar(Message* m, const FieldDescriptor* f, bool add) {
    const Reflection* r = m->GetReflection();
    const int64_t n = Next();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        add ? r->AddInt32(m, f, static_cast<int32_t>(n))
            : r->SetInt32(m, f, static_cast<int32_t>(n));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        add ? r->AddInt64(m, f, (int64_t{1} << 33) + n) : r->SetInt64(m, f, (int64_t{1} << 33) + n);
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        add ? r->AddUInt32(m, f, static_cast<uint32_t>(n))
            : r->SetUInt32(m, f, static_cast<uint32_t>(n));
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        add ? r->AddUInt64(m, f, (uint64_t{1} << 33) + static_cast<uint64_t>(n))
            : r->SetUInt64(m, f, (uint64_t{1} << 33) + static_cast<uint64_t>(n));
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        add ? r->AddDouble(m, f, static_cast<double>(n) + 0.25)
            : r->SetDouble(m, f, static_cast<double>(n) + 0.25);
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        add ? r->AddFloat(m, f, static_cast<float>(n) + 0.5f)
            : r->SetFloat(m, f, static_cast<float>(n) + 0.5f);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        add ? r->AddBool(m, f, true) : r->SetBool(m, f, true);
        break;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const EnumValueDescriptor* v = NonZeroValue(f->enum_type(), n);
        add ? r->AddEnum(m, f, v) : r->SetEnum(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string s = absl::StrCat(f->name(), "-", n);
        if (f->type() == FieldDescriptor::TYPE_BYTES) s = absl::StrCat(std::string("\0\xff", 2), s);
        add ? r->AddString(m, f, std::move(s)) : r->SetString(m, f, std::move(s));
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;  // not a scalar; FillField recurses instead
    }
  }

  // The (n mod k)-th of the enum's k values other than 0, or its first value when it has none.
  static const EnumValueDescriptor* NonZeroValue(const EnumDescriptor* e, int64_t n) {
    std::vector<const EnumValueDescriptor*> values;
    for (int i = 0; i < e->value_count(); ++i) {
      if (e->value(i)->number() != 0) values.push_back(e->value(i));
    }
    if (values.empty()) return e->value(0);
    return values[static_cast<size_t>(n) % values.size()];
  }

  const std::set<std::string>& excluded_;
  int64_t counter_ = 0;
  // The message types being filled, outermost first.
  std::vector<const Descriptor*> path_;
};

}  // namespace

void FillEveryField(google::protobuf::Message* m,
                    const std::set<std::string>& excluded_full_names) {
  Filler(excluded_full_names).Fill(m);
}

std::string Differences(const google::protobuf::Message& expected,
                        const google::protobuf::Message& actual) {
  if (expected.GetDescriptor() != actual.GetDescriptor()) {
    return absl::StrCat("types differ: ", expected.GetTypeName(), " and ", actual.GetTypeName());
  }
  std::string report;
  google::protobuf::util::MessageDifferencer diff;
  diff.ReportDifferencesToString(&report);
  return diff.Compare(expected, actual) ? "" : report;
}

}  // namespace trainctl::testing
