// DevicePool: the GPUs of one node and which replica holds each, so that a replica is given
// specific devices (its CUDA_VISIBLE_DEVICES), never only a count.
//
// The node's agent reports its GPUs (index, UUID, model, NUMA node, NVLink group; or synthetic
// devices 0..N-1 under `--gpus N`). Placement counts GPUs as a number (Res::gpus, held by the
// node registry); this pool picks which ones, when a replica launches. Invariant: a device is
// held by at most one replica until released, and the pool holds no more devices than replicas
// hold GPUs by count, so a replica that got its count always finds that many free devices.
//
// Which devices (ChooseDevices): all within one NVLink group and NUMA node where possible, then
// one NVLink group, then one NUMA node; among the groups that can hold the request, the one with
// the fewest free devices (leaving large groups whole for large requests); within it, the run of
// consecutive indices with the smallest span, lowest first. Without topology every device is in
// one group, so the choice is the lowest contiguous run.
//
//   DevicePool pool(devices);                          // from the agent's Register
//   std::optional<std::vector<int32_t>> mine = pool.Allocate(4, "j-1/worker-0");  // {0,1,2,3}
//   pool.SetRun(*mine, "j-1/1/worker-0/0");            // for `trainctl node describe`
//   pool.Release(*mine);
//   pool.Reserve({0, 1, 2, 3}, "j-1/worker-0");        // an in-place restart takes them back
//
// Thread-safety: none; owned by the node registry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// The `count` devices of `free` (each free, any order) to give one replica, by the rules above,
// as indices in increasing order. REQUIRES: 0 <= count <= free.size().
std::vector<int32_t> ChooseDevices(const std::vector<v1::GpuDevice>& free, int32_t count);

// `count` synthetic devices 0..count-1: no UUID, no device node (minor -1), no topology.
std::vector<v1::GpuDevice> SyntheticDevices(int32_t count);

class DevicePool {
 public:
  DevicePool() = default;
  // The devices by index; holder and run_id of the input are ignored (all start free).
  explicit DevicePool(const std::vector<v1::GpuDevice>& devices) { SetDevices(devices); }

  // Replaces the inventory (an agent registered again), keeping the holds of indices that are
  // still there. Holds of vanished indices are dropped.
  void SetDevices(const std::vector<v1::GpuDevice>& devices);

  // Picks `count` free devices (ChooseDevices) for `holder` ("<job id>/<replica>"). nullopt, and
  // nothing held, when fewer are free. Allocate(0, ...) is an empty list.
  std::optional<std::vector<int32_t>> Allocate(int32_t count, const std::string& holder);

  // Takes exactly `indices` for `holder`: all of them, or none when one is unknown or held.
  bool Reserve(const std::vector<int32_t>& indices, const std::string& holder);

  // Frees `indices` (unknown or free ones are skipped).
  void Release(const std::vector<int32_t>& indices);

  // Records the run that uses the held `indices` now.
  void SetRun(const std::vector<int32_t>& indices, const std::string& run_id);

  bool Has(int32_t index) const { return Find(index) != nullptr; }
  bool InUse(int32_t index) const;
  int32_t used() const;
  int32_t free() const { return static_cast<int32_t>(devices_.size()) - used(); }
  std::vector<int32_t> FreeIndices() const;
  // Every device by index, with holder and run_id set for the held ones.
  const std::vector<v1::GpuDevice>& devices() const { return devices_; }

 private:
  const v1::GpuDevice* Find(int32_t index) const;
  v1::GpuDevice* FindMutable(int32_t index);

  // By index; a device is held when its holder is not empty.
  std::vector<v1::GpuDevice> devices_;
};

}  // namespace trainctl::sched
