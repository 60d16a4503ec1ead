// ThreadSanitizer annotations for absl::Mutex, linked into every executable of the TSan build
// (TRAINCTL_TSAN) and nowhere else.
//
// Debian's Abseil is not built with -fsanitize=thread, so TSan cannot see absl::Mutex lock and
// release memory: without help it reports a race on every field an absl::Mutex guards. Abseil's
// own TSan support (the __tsan_mutex_* calls in mutex.cc) is compiled out of that build. This
// file puts it back from outside: it defines the Mutex and CondVar entry points our code calls,
// each of which tells TSan what happens and calls Abseil's real function (found with
// dlsym(RTLD_NEXT)). Between a pre and a post annotation TSan ignores memory accesses, as in
// Abseil's own TSan build; that covers the Condition functions Abseil evaluates while it locks,
// unlocks or waits, possibly on another thread.
//
// Abseil's own calls between these functions come here too (the executable's definitions win),
// so no function here may call a real one that calls another: Abseil's *WithTimeout functions
// call their *WithDeadline twins, so ours call our deadline ones instead of the real ones.
//
// Abseil's classes built on Mutex (ReleasableMutexLock, Notification, ...) lock through these
// functions too, but synchronization through their own atomics (Notification's fast path) stays
// invisible; nothing in trainctl uses them.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#if !defined(__has_feature) || !__has_feature(thread_sanitizer)
#error "tsan_absl_mutex.cc belongs in the ThreadSanitizer build only (TRAINCTL_TSAN)"
#endif

// These are Abseil's lock functions: what they acquire and release is the real functions' doing.
#pragma clang diagnostic ignored "-Wthread-safety-analysis"

#define TRAINCTL_STRINGIFY_INNER(x) #x
#define TRAINCTL_STRINGIFY(x) TRAINCTL_STRINGIFY_INNER(x)

namespace {

// The Itanium-mangled name of absl::<inline namespace>::<suffix>, e.g. suffix "5Mutex4LockEv".
std::string AbslSymbol(const char* suffix) {
  const std::string ns = TRAINCTL_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  return "_ZN4absl" + std::to_string(ns.size()) + ns + suffix;
}

// Abseil's own definition of the function mangled as absl::<ns>::<suffix>; aborts if missing.
template <typename Fn>
Fn Real(const char* suffix) {
  const std::string name = AbslSymbol(suffix);
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_mutex: %s not found in Abseil\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

using MutexFn = void (*)(absl::Mutex*);
using MutexBoolFn = bool (*)(absl::Mutex*);
using MutexCondFn = void (*)(absl::Mutex*, const absl::Condition&);
using MutexCondDeadlineFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);
using CondVarWaitFn = void (*)(absl::CondVar*, absl::Mutex*);
using CondVarDeadlineFn = bool (*)(absl::CondVar*, absl::Mutex*, absl::Time);

// A held mutex is released and taken again inside `wait` (Await, CondVar::Wait): TSan sees an
// unlock, then a lock that ends when `wait` returns. `flags`: read_lock for a reader lock.
template <typename Wait>
auto UnlockedDuring(absl::Mutex* mu, unsigned flags, Wait wait) {
  __tsan_mutex_pre_unlock(mu, flags);
  __tsan_mutex_post_unlock(mu, flags);
  __tsan_mutex_pre_lock(mu, flags);
  auto result = wait();
  __tsan_mutex_post_lock(mu, flags, 0);
  return result;
}

// A lock that ends when `lock` returns; with a Condition (LockWhen), held on return either way.
template <typename Lock>
auto Locked(absl::Mutex* mu, unsigned flags, Lock lock) {
  __tsan_mutex_pre_lock(mu, flags);
  auto result = lock();
  __tsan_mutex_post_lock(mu, flags, 0);
  return result;
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

Mutex::~Mutex() {
  static const MutexFn real = Real<MutexFn>("5MutexD2Ev");
  __tsan_mutex_destroy(this, __tsan_mutex_not_static);
  real(this);
}

void Mutex::Lock() {
  static const MutexFn real = Real<MutexFn>("5Mutex4LockEv");
  __tsan_mutex_pre_lock(this, 0);
  real(this);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLock() {
  static const MutexFn real = Real<MutexFn>("5Mutex10ReaderLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

bool Mutex::TryLock() {
  static const MutexBoolFn real = Real<MutexBoolFn>("5Mutex7TryLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed),
                         0);
  return locked;
}

bool Mutex::ReaderTryLock() {
  static const MutexBoolFn real = Real<MutexBoolFn>("5Mutex13ReaderTryLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_read_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(
      this, locked ? __tsan_mutex_try_read_lock : __tsan_mutex_try_read_lock_failed, 0);
  return locked;
}

void Mutex::Unlock() {
  static const MutexFn real = Real<MutexFn>("5Mutex6UnlockEv");
  __tsan_mutex_pre_unlock(this, 0);
  real(this);
  __tsan_mutex_post_unlock(this, 0);
}

void Mutex::ReaderUnlock() {
  static const MutexFn real = Real<MutexFn>("5Mutex12ReaderUnlockEv");
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

// Await* keep the mode (writer or reader) the mutex is held in; trainctl awaits as a writer only.
void Mutex::Await(const Condition& cond) {
  static const MutexCondFn real = Real<MutexCondFn>("5Mutex5AwaitERKNS0_9ConditionE");
  UnlockedDuring(this, 0, [&] {
    real(this, cond);
    return true;
  });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  return AwaitWithDeadline(cond, absl::Now() + timeout);
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  static const MutexCondDeadlineFn real =
      Real<MutexCondDeadlineFn>("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return UnlockedDuring(this, 0, [&] { return real(this, cond, deadline); });
}

void Mutex::LockWhen(const Condition& cond) {
  static const MutexCondFn real = Real<MutexCondFn>("5Mutex8LockWhenERKNS0_9ConditionE");
  Locked(this, 0, [&] {
    real(this, cond);
    return true;
  });
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  return LockWhenWithDeadline(cond, absl::Now() + timeout);
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  static const MutexCondDeadlineFn real =
      Real<MutexCondDeadlineFn>("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Locked(this, 0, [&] { return real(this, cond, deadline); });
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static const MutexCondFn real = Real<MutexCondFn>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Locked(this, __tsan_mutex_read_lock, [&] {
    real(this, cond);
    return true;
  });
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  return ReaderLockWhenWithDeadline(cond, absl::Now() + timeout);
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  static const MutexCondDeadlineFn real =
      Real<MutexCondDeadlineFn>("5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Locked(this, __tsan_mutex_read_lock, [&] { return real(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  static const CondVarWaitFn real = Real<CondVarWaitFn>("7CondVar4WaitEPNS0_5MutexE");
  UnlockedDuring(mu, 0, [&] {
    real(this, mu);
    return true;
  });
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  return WaitWithDeadline(mu, absl::Now() + timeout);
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  static const CondVarDeadlineFn real =
      Real<CondVarDeadlineFn>("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return UnlockedDuring(mu, 0, [&] { return real(this, mu, deadline); });
}

ABSL_NAMESPACE_END
}  // namespace absl
