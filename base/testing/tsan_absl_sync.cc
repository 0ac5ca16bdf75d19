// ThreadSanitizer builds only (PETREL_TSAN): tells TSan what Abseil's
// synchronization does.
//
// Debian's libabsl is not built with -fsanitize=thread, so TSan sees none
// of absl::Mutex's locking (it spins and waits on futexes inside the
// library) and would call every access guarded by one a race. Defined in
// the executable, these functions interpose the library's (the executable's
// symbols win, the build exports them with -rdynamic); each calls the real
// one, found with dlsym(RTLD_NEXT), and reports the lock, unlock, release
// or acquire through TSan's annotation interface, as an instrumented
// Abseil does itself. Condition::Eval runs with TSan ignoring accesses:
// Abseil evaluates a waiter's condition under the lock at moments the
// annotations cannot mark (inside its lock and unlock slow paths).
//
// Not part of any product build: a PETREL_TSAN build links it into every
// executable (petrel_add_tsan_absl_sync in cmake/PetrelHelpers.cmake).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include "absl/base/options.h"
#include "absl/synchronization/barrier.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

// In TSan's runtime, not in its public header.
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();

#define PETREL_STR2(x) #x
#define PETREL_STR(x) PETREL_STR2(x)

namespace {

// The mangled name of absl::<inline namespace>::`rest`.
std::string AbslSymbol(const char* rest) {
  const char* ns = PETREL_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  return "_ZN" + std::string("4absl") + std::to_string(std::strlen(ns)) + ns +
         rest;
}
std::string AbslConstSymbol(const char* rest) {
  const char* ns = PETREL_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  return "_ZNK" + std::string("4absl") + std::to_string(std::strlen(ns)) + ns +
         rest;
}

template <typename Fn>
Fn Real(const std::string& name) {
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found: %s\n", name.c_str(),
                 dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

using MutexFn = void (*)(absl::Mutex*);
using MutexBoolFn = bool (*)(absl::Mutex*);
using MutexCondFn = void (*)(absl::Mutex*, const absl::Condition&);
using MutexCondTimeoutFn = bool (*)(absl::Mutex*, const absl::Condition&,
                                    absl::Duration);
using MutexCondDeadlineFn = bool (*)(absl::Mutex*, const absl::Condition&,
                                     absl::Time);
using CondVarFn = void (*)(absl::CondVar*, absl::Mutex*);
using CondVarTimeoutFn = bool (*)(absl::CondVar*, absl::Mutex*, absl::Duration);
using CondVarDeadlineFn = bool (*)(absl::CondVar*, absl::Mutex*, absl::Time);

void PreLock(const void* mu, unsigned flags) {
  __tsan_mutex_pre_lock(const_cast<void*>(mu), flags);
}
void PostLock(const void* mu, unsigned flags) {
  __tsan_mutex_post_lock(const_cast<void*>(mu), flags, 0);
}
void Unlocking(const void* mu, unsigned flags) {
  __tsan_mutex_pre_unlock(const_cast<void*>(mu), flags);
}
void Unlocked(const void* mu, unsigned flags) {
  __tsan_mutex_post_unlock(const_cast<void*>(mu), flags);
}

// The lock a wait gives up and takes back, as TSan sees it.
void WaitBegins(const void* mu, unsigned flags) {
  Unlocking(mu, flags);
  Unlocked(mu, flags);
}
void WaitEnds(const void* mu, unsigned flags) {
  PreLock(mu, flags);
  PostLock(mu, flags);
}

constexpr unsigned kRead = __tsan_mutex_read_lock;

// Abseil's functions call each other (AwaitWithTimeout calls
// AwaitWithDeadline, Notification::Notify calls Lock), and those calls
// come through these interposers too: only the outermost one on a thread
// tells TSan, or a wait would give the lock up twice.
thread_local int depth = 0;
class Outermost {
 public:
  Outermost() : outer_(depth++ == 0) {}
  ~Outermost() { --depth; }
  Outermost(const Outermost&) = delete;
  Outermost& operator=(const Outermost&) = delete;
  explicit operator bool() const { return outer_; }

 private:
  const bool outer_;
};

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

Mutex::~Mutex() {
  static auto real = Real<MutexFn>(AbslSymbol("5MutexD2Ev"));
  const Outermost outer;
  if (outer) __tsan_mutex_destroy(this, 0);
  real(this);
}

void Mutex::Lock() {
  static auto real = Real<MutexFn>(AbslSymbol("5Mutex4LockEv"));
  const Outermost outer;
  if (outer) PreLock(this, 0);
  real(this);
  if (outer) PostLock(this, 0);
}

void Mutex::Unlock() {
  static auto real = Real<MutexFn>(AbslSymbol("5Mutex6UnlockEv"));
  const Outermost outer;
  if (outer) Unlocking(this, 0);
  real(this);
  if (outer) Unlocked(this, 0);
}

bool Mutex::TryLock() {
  static auto real = Real<MutexBoolFn>(AbslSymbol("5Mutex7TryLockEv"));
  const Outermost outer;
  if (outer) PreLock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  if (outer) {
    PostLock(this, locked
                       ? __tsan_mutex_try_lock
                       : __tsan_mutex_try_lock | __tsan_mutex_try_lock_failed);
  }
  return locked;
}

void Mutex::ReaderLock() {
  static auto real = Real<MutexFn>(AbslSymbol("5Mutex10ReaderLockEv"));
  const Outermost outer;
  if (outer) PreLock(this, kRead);
  real(this);
  if (outer) PostLock(this, kRead);
}

void Mutex::ReaderUnlock() {
  static auto real = Real<MutexFn>(AbslSymbol("5Mutex12ReaderUnlockEv"));
  const Outermost outer;
  if (outer) Unlocking(this, kRead);
  real(this);
  if (outer) Unlocked(this, kRead);
}

bool Mutex::ReaderTryLock() {
  static auto real = Real<MutexBoolFn>(AbslSymbol("5Mutex13ReaderTryLockEv"));
  const Outermost outer;
  if (outer) PreLock(this, kRead | __tsan_mutex_try_lock);
  const bool locked = real(this);
  if (outer)
    PostLock(this, kRead | (locked ? __tsan_mutex_try_lock
                                   : __tsan_mutex_try_lock |
                                         __tsan_mutex_try_lock_failed));
  return locked;
}

void Mutex::LockWhen(const Condition& cond) {
  static auto real =
      Real<MutexCondFn>(AbslSymbol("5Mutex8LockWhenERKNS0_9ConditionE"));
  const Outermost outer;
  if (outer) PreLock(this, 0);
  real(this, cond);
  if (outer) PostLock(this, 0);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static auto real = Real<MutexCondTimeoutFn>(AbslSymbol(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE"));
  const Outermost outer;
  if (outer) PreLock(this, 0);
  const bool met = real(this, cond, timeout);
  if (outer) PostLock(this, 0);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static auto real = Real<MutexCondDeadlineFn>(
      AbslSymbol("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  const Outermost outer;
  if (outer) PreLock(this, 0);
  const bool met = real(this, cond, deadline);
  if (outer) PostLock(this, 0);
  return met;
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static auto real =
      Real<MutexCondFn>(AbslSymbol("5Mutex14ReaderLockWhenERKNS0_9ConditionE"));
  const Outermost outer;
  if (outer) PreLock(this, kRead);
  real(this, cond);
  if (outer) PostLock(this, kRead);
}

void Mutex::Await(const Condition& cond) {
  static auto real =
      Real<MutexCondFn>(AbslSymbol("5Mutex5AwaitERKNS0_9ConditionE"));
  const Outermost outer;
  if (outer) WaitBegins(this, 0);
  real(this, cond);
  if (outer) WaitEnds(this, 0);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static auto real = Real<MutexCondTimeoutFn>(
      AbslSymbol("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE"));
  const Outermost outer;
  if (outer) WaitBegins(this, 0);
  const bool met = real(this, cond, timeout);
  if (outer) WaitEnds(this, 0);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static auto real = Real<MutexCondDeadlineFn>(
      AbslSymbol("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  const Outermost outer;
  if (outer) WaitBegins(this, 0);
  const bool met = real(this, cond, deadline);
  if (outer) WaitEnds(this, 0);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  static auto real = Real<CondVarFn>(AbslSymbol("7CondVar4WaitEPNS0_5MutexE"));
  const Outermost outer;
  if (outer) WaitBegins(mu, 0);
  real(this, mu);
  if (outer) WaitEnds(mu, 0);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static auto real = Real<CondVarTimeoutFn>(
      AbslSymbol("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE"));
  const Outermost outer;
  if (outer) WaitBegins(mu, 0);
  const bool timed_out = real(this, mu, timeout);
  if (outer) WaitEnds(mu, 0);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static auto real = Real<CondVarDeadlineFn>(
      AbslSymbol("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE"));
  const Outermost outer;
  if (outer) WaitBegins(mu, 0);
  const bool timed_out = real(this, mu, deadline);
  if (outer) WaitEnds(mu, 0);
  return timed_out;
}

bool Condition::Eval() const {
  static auto real =
      Real<bool (*)(const Condition*)>(AbslConstSymbol("9Condition4EvalEv"));
  __tsan_ignore_thread_begin();
  const bool met = real(this);
  __tsan_ignore_thread_end();
  return met;
}

// A Notification is a Mutex and then the atomic flag HasBeenNotified reads
// (inline, so instrumented): the release goes to both.
static_assert(sizeof(Notification) == sizeof(Mutex) + sizeof(void*),
              "absl::Notification's layout changed");

void Notification::Notify() {
  static auto real =
      Real<void (*)(Notification*)>(AbslSymbol("12Notification6NotifyEv"));
  __tsan_release(this);
  __tsan_release(reinterpret_cast<char*>(this) + sizeof(Mutex));
  real(this);
}

void Notification::WaitForNotification() const {
  static auto real = Real<void (*)(const Notification*)>(
      AbslConstSymbol("12Notification19WaitForNotificationEv"));
  real(this);
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static auto real =
      Real<bool (*)(const Notification*, Duration)>(AbslConstSymbol(
          "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE"));
  const bool notified = real(this, timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static auto real = Real<bool (*)(const Notification*, Time)>(AbslConstSymbol(
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE"));
  const bool notified = real(this, deadline);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool BlockingCounter::DecrementCount() {
  static auto real = Real<bool (*)(BlockingCounter*)>(
      AbslSymbol("15BlockingCounter14DecrementCountEv"));
  __tsan_release(this);
  return real(this);
}

void BlockingCounter::Wait() {
  static auto real =
      Real<void (*)(BlockingCounter*)>(AbslSymbol("15BlockingCounter4WaitEv"));
  real(this);
  __tsan_acquire(this);
}

bool Barrier::Block() {
  static auto real = Real<bool (*)(Barrier*)>(AbslSymbol("7Barrier5BlockEv"));
  __tsan_release(this);
  const bool last = real(this);
  __tsan_acquire(this);
  return last;
}

ABSL_NAMESPACE_END
}  // namespace absl
