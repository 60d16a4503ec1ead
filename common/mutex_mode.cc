#include "common/mutex_mode.h"

#include "absl/synchronization/mutex.h"

namespace trainctl {

void UseBuildMutexChecks() {
#ifdef NDEBUG
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
}

}  // namespace trainctl
