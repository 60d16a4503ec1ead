#include "server/rest/openapi.h"

#include <regex>
#include <set>

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "server/rest/routes.h"

namespace trainctl::server::rest {
namespace {

namespace pb = google::protobuf;

pb::Value Str(const std::string& s) {
  pb::Value v;
  v.set_string_value(s);
  return v;
}

pb::Struct* Obj(pb::Struct* parent, const std::string& key) {
  return (*parent->mutable_fields())[key].mutable_struct_value();
}

void Set(pb::Struct* o, const std::string& key, const std::string& value) {
  (*o->mutable_fields())[key] = Str(value);
}

std::string Ref(const pb::Descriptor* d) {
  return absl::StrCat("#/components/schemas/", d->full_name());
}

class Writer {
 public:
  // The schema of one value of `f` (its element, for repeated fields).
  void ValueSchema(const pb::FieldDescriptor* f, pb::Struct* out) {
    switch (f->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_STRING:
        Set(out, "type", "string");
        if (f->type() == pb::FieldDescriptor::TYPE_BYTES) Set(out, "format", "byte");
        break;
      case pb::FieldDescriptor::CPPTYPE_INT32:
      case pb::FieldDescriptor::CPPTYPE_UINT32:
        Set(out, "type", "integer");
        Set(out, "format", "int32");
        break;
      case pb::FieldDescriptor::CPPTYPE_INT64:
      case pb::FieldDescriptor::CPPTYPE_UINT64:
        // The JSON mapping writes 64-bit integers as strings.
        Set(out, "type", "string");
        Set(out, "format", "int64");
        break;
      case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      case pb::FieldDescriptor::CPPTYPE_FLOAT:
        Set(out, "type", "number");
        break;
      case pb::FieldDescriptor::CPPTYPE_BOOL:
        Set(out, "type", "boolean");
        break;
      case pb::FieldDescriptor::CPPTYPE_ENUM: {
        Set(out, "type", "string");
        pb::ListValue* values = (*out->mutable_fields())["enum"].mutable_list_value();
        for (int i = 0; i < f->enum_type()->value_count(); ++i) {
          *values->add_values() = Str(f->enum_type()->value(i)->name());
        }
        break;
      }
      case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        MessageSchema(f->message_type(), out);
        break;
    }
  }

  // A reference to the message's schema, or the JSON form of a well-known type.
  void MessageSchema(const pb::Descriptor* d, pb::Struct* out) {
    const std::string& name = d->full_name();
    if (name == "google.protobuf.Timestamp") {
      Set(out, "type", "string");
      Set(out, "format", "date-time");
    } else if (name == "google.protobuf.Duration") {
      Set(out, "type", "string");
      Set(out, "description", "seconds with an \"s\" suffix, e.g. \"1.5s\"");
    } else if (name == "google.protobuf.Struct") {
      Set(out, "type", "object");
    } else {
      Set(out, "$ref", Ref(d));
      Define(d);
    }
  }

  void FieldSchema(const pb::FieldDescriptor* f, pb::Struct* out) {
    if (f->is_map()) {
      Set(out, "type", "object");
      ValueSchema(f->message_type()->map_value(), Obj(out, "additionalProperties"));
    } else if (f->is_repeated()) {
      Set(out, "type", "array");
      ValueSchema(f, Obj(out, "items"));
    } else {
      ValueSchema(f, out);
    }
  }

  void Define(const pb::Descriptor* d) {
    if (!defined_.insert(d->full_name()).second) return;
    pb::Struct schema;
    Set(&schema, "type", "object");
    pb::Struct* props = Obj(&schema, "properties");
    for (int i = 0; i < d->field_count(); ++i) {
      FieldSchema(d->field(i), Obj(props, d->field(i)->json_name()));
    }
    (*Obj(Obj(&doc_, "components"), "schemas")->mutable_fields())[d->full_name()]
        .mutable_struct_value()
        ->Swap(&schema);
  }

  void AddRoute(const Route& r) {
    static const std::regex kParam(R"(\{([A-Za-z0-9_]+)(=([A-Za-z0-9_.]+))?\})");
    const std::string path = std::regex_replace(r.path, kParam, "{$1}");
    std::string lower = r.method;
    for (char& c : lower) c = static_cast<char>(std::tolower(c));
    pb::Struct* op = Obj(Obj(Obj(&doc_, "paths"), path), lower);
    const std::string rpc = r.rpc;
    Set(op, "operationId", rpc.substr(rpc.find('/') + 1));
    Set(op, "summary", r.summary);
    Set(op, "x-grpc-method", rpc);
    const std::string service = rpc.substr(0, rpc.find('/'));
    *(*op->mutable_fields())["tags"].mutable_list_value()->add_values() =
        Str(service.substr(service.rfind('.') + 1));
    pb::ListValue* params = (*op->mutable_fields())["parameters"].mutable_list_value();
    std::set<std::string> in_path;
    std::string tmpl = r.path;
    std::smatch m;
    while (std::regex_search(tmpl, m, kParam)) {
      const std::string field = m[3].matched ? m[3].str() : m[1].str();
      in_path.insert(field);
      pb::Struct* p = params->add_values()->mutable_struct_value();
      Set(p, "name", m[1].str());
      Set(p, "in", "path");
      (*p->mutable_fields())["required"].set_bool_value(true);
      Set(p, "description", absl::StrCat("the request's ", field));
      Set(Obj(p, "schema"), "type", "string");
      tmpl = m.suffix().str();
    }
    const std::string body = r.body;
    const std::string consumes = r.consumes;
    // Every field of the request not in the path (nor in `skip`) as a query parameter.
    auto query = [&](const std::set<std::string>& skip) {
      for (int i = 0; i < r.request->field_count(); ++i) {
        const pb::FieldDescriptor* f = r.request->field(i);
        if (in_path.count(f->json_name()) > 0 || in_path.count(f->name()) > 0) continue;
        if (skip.count(f->name()) > 0) continue;
        pb::Struct* p = params->add_values()->mutable_struct_value();
        Set(p, "name", f->json_name());
        Set(p, "in", "query");
        FieldSchema(f, Obj(p, "schema"));
      }
    };
    if (consumes != "application/json") {
      // The body is raw bytes, read as they come: the request's `body` field, its Content-Length
      // the `length_field`.
      query({body, r.length_field});
      pb::Struct* length = params->add_values()->mutable_struct_value();
      Set(length, "name", "Content-Length");
      Set(length, "in", "header");
      (*length->mutable_fields())["required"].set_bool_value(true);
      Set(length, "description", absl::StrCat("the request's ", r.length_field));
      Set(Obj(length, "schema"), "type", "integer");
      pb::Struct* request_body = Obj(op, "requestBody");
      (*request_body->mutable_fields())["required"].set_bool_value(true);
      Set(request_body, "description", absl::StrCat("the request's ", body));
      pb::Struct* schema = Obj(Obj(Obj(request_body, "content"), consumes), "schema");
      Set(schema, "type", "string");
      Set(schema, "format", "binary");
    } else if (body.empty()) {
      query({});
      for (const std::string& extra : r.extra_params) {
        pb::Struct* p = params->add_values()->mutable_struct_value();
        Set(p, "name", extra);
        Set(p, "in", "query");
        Set(Obj(p, "schema"), "type", "boolean");
      }
    } else {
      const pb::Descriptor* type = r.request;
      if (body != "*") type = r.request->FindFieldByName(body)->message_type();
      pb::Struct* content = Obj(Obj(Obj(op, "requestBody"), "content"), "application/json");
      MessageSchema(type, Obj(content, "schema"));
    }
    pb::Struct* responses = Obj(op, "responses");
    pb::Struct* ok = Obj(responses, "200");
    Set(ok, "description", "OK");
    const std::string produces = r.produces;
    pb::Struct* media = Obj(Obj(ok, "content"), produces);
    if (produces == "application/json") {
      MessageSchema(r.response, Obj(media, "schema"));
    } else {
      Set(Obj(media, "schema"), "type", "string");
    }
    if (!r.extra_params.empty()) {
      Set(Obj(Obj(ok, "content"), "application/octet-stream"), "x-when", "follow=true");
    }
    pb::Struct* error = Obj(responses, "default");
    Set(error, "description", "An error: google.rpc.Status");
    Set(Obj(Obj(Obj(error, "content"), "application/json"), "schema"), "$ref",
        "#/components/schemas/google.rpc.Status");
  }

  std::string Finish() {
    Set(&doc_, "openapi", "3.0.3");
    pb::Struct* info = Obj(&doc_, "info");
    Set(info, "title", "trainctl");
    Set(info, "version", "v1");
    Set(info, "description",
        "trainctld's REST API: the same operations as its gRPC services, with bodies in the "
        "protobuf JSON mapping. Send \"Authorization: Bearer <token>\" when trainctld serves "
        "TLS.");
    pb::Struct* status = Obj(Obj(Obj(&doc_, "components"), "schemas"), "google.rpc.Status");
    Set(status, "type", "object");
    pb::Struct* props = Obj(status, "properties");
    Set(Obj(props, "code"), "type", "integer");
    Set(Obj(props, "message"), "type", "string");
    Set(Obj(props, "details"), "type", "array");
    Set(Obj(Obj(props, "details"), "items"), "type", "object");
    std::string json;
    (void)pb::util::MessageToJsonString(doc_, &json);
    return json;
  }

 private:
  pb::Struct doc_;
  std::set<std::string> defined_;
};

}  // namespace

const std::string& OpenApiDocument() {
  static const std::string* doc = [] {
    Writer w;
    for (const Route& r : Routes()) w.AddRoute(r);
    return new std::string(w.Finish());
  }();
  return *doc;
}

}  // namespace trainctl::server::rest
