// What an agent says about itself is checked before it reaches the core or the store.
#include "scheduler/agent_validation.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>

#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

TEST_CASE("a registration with bad values is refused naming the field", "[agent_validation]") {
  struct Row {
    const char* what;
    std::function<void(v1::Register*)> mutate;
    const char* message;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Row rows[] = {
      {"NaN cpu", [&](v1::Register* r) { r->mutable_capacity()->set_cpu(nan); },
       "register.capacity.cpu must be a finite number 0..65536, got nan"},
      {"infinite cpu", [&](v1::Register* r) { r->mutable_allocatable()->set_cpu(inf); },
       "register.allocatable.cpu must be a finite number 0..65536, got inf"},
      {"a petabyte and more",
       [](v1::Register* r) { r->mutable_capacity()->set_memory_mb((int64_t{1} << 30) + 1); },
       "register.capacity.memoryMb must be 0..1073741824 (1 PiB), got 1073741825"},
      {"too many GPUs", [](v1::Register* r) { r->mutable_capacity()->set_gpus(1025); },
       "register.capacity.gpus must be 0..1024, got 1025"},
      {"allocatable above capacity",
       [](v1::Register* r) { r->mutable_allocatable()->set_cpu(r->capacity().cpu() + 1); },
       "register.allocatable must not exceed capacity"},
      {"bad node name", [](v1::Register* r) { r->set_node("Node_A"); },
       "register.node must be 1..63 characters of a-z, 0-9 and '-', got \"Node_A\""},
      {"NUL in the address", [](v1::Register* r) { r->set_address(std::string("a\0b", 3)); },
       "register.address must not contain NUL bytes"},
      {"more GPUs listed than offered", [](v1::Register* r) { r->add_gpu_devices()->set_index(0); },
       "register.gpuDevices lists 1 GPUs but capacity.gpus is 0; an agent lists every GPU it "
       "offers (synthetic ones with minor -1 for trainctl-agent --gpus N)"},
      {"GPUs offered by count only",
       [](v1::Register* r) {
         r->mutable_capacity()->set_gpus(4);
         r->mutable_allocatable()->set_gpus(4);
       },
       "register.gpuDevices lists 0 GPUs but capacity.gpus is 4; an agent lists every GPU it "
       "offers (synthetic ones with minor -1 for trainctl-agent --gpus N)"},
      {"a GPU listed twice",
       [](v1::Register* r) {
         r->mutable_capacity()->set_gpus(2);
         r->add_gpu_devices()->set_index(1);
         r->add_gpu_devices()->set_index(1);
       },
       "register.gpuDevices[1].index must be a distinct index 0..1023, got 1"},
      {"a huge label",
       [](v1::Register* r) { (*r->mutable_labels())["zone"] = std::string(300, 'x'); },
       "register.labels[\"zone\"] must be at most 256 bytes, got 300"},
  };
  for (const Row& row : rows) {
    SECTION(row.what) {
      v1::Register reg = testing::Reg("node-a");
      row.mutate(&reg);
      absl::Status s = ValidateRegister(reg);
      CHECK(s.code() == absl::StatusCode::kInvalidArgument);
      CHECK(std::string(s.message()) == row.message);
    }
  }
  CHECK(ValidateRegister(testing::Reg("node-a", 64, 1 << 20, 8)).ok());
}

}  // namespace
}  // namespace trainctl::sched
