// Public entry points of Semaphore.
#include <cstring>
#include <thread>

#include "api_entry.hpp"
#include "baton/semaphore.hpp"
#include "clock.hpp"
#include "lazy_observers.hpp"
#include "shared_timeline.hpp"

namespace baton {

namespace core {
Status waitEntries(const core::Instance* instance, Span<const SemaphoreValue> waits, WaitMode mode,
                   uint64_t timeoutNs);
}

// How long Semaphore::destroy lets finished work drop its references (see there). Only spent when
// references remain. 10 ms was short on a loaded machine: in CI (2 cores, tests in parallel) the
// fault sweep once destroyed a semaphore of a lost device's work before that device's completion
// thread, asked to look at once, had failed and dropped its records.
constexpr uint64_t kReleaseGraceNs = 100'000'000;

static Ref<core::Semaphore> findSemaphore(uint64_t h, Status* st) {
  return find<core::Semaphore>(h, ObjectType::Semaphore, "semaphore", st);
}

Result Semaphore::destroy() const noexcept {
  // The destroyed object may hold the last reference to its instance: keep the instance
  // alive until entry() has reported through its callback.
  Ref<core::Instance> keepAlive;
  return entry("Semaphore::destroy", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<Object> o = HandleTable::get().remove(handle_, ObjectType::Semaphore, "semaphore", &st);
    if (!o) return st;
    auto* s = static_cast<core::Semaphore*>(o.get());
    keepAlive = Ref<core::Instance>(s->instance());
    owner = keepAlive.get();
    s->instance()->children.remove(handle_);
    // References beyond ours mean pending submissions or host waiters still use it. Fail it so
    // that none of them waits for a signal that can no longer be sent. The reason is the phrase
    // semaphore.hpp quotes; the failure's message adds the name ("semaphore 'x' failed: ...").
    // Finished work lets go of it just after its signals are reached (a queue's thread drops the
    // submission after waking the waiters), so a destroy right after a wait returned could see
    // that reference: such references are given kReleaseGraceNs to go before they count.
    // Queues that observe their completions lazily are asked to look now (lazy_observers.hpp).
    const uint64_t graceEnd = core::nowNs() + kReleaseGraceNs;
    if (s->hasWaiters() || s->refCount() > 1) core::lookNowEverywhere();
    while ((s->hasWaiters() || s->refCount() > 1) && core::nowNs() < graceEnd)
      std::this_thread::yield();
    if (s->hasWaiters() || s->refCount() > 1) {
      s->fail(Result::ErrorSemaphoreFailed, "destroyed while pending work used it");
      s->detachExternals();  // after fail(), so that an interop counterpart hears of the failure
      return error(Result::ErrorObjectInUse,
                   "semaphore '%s' destroyed while pending work used it; it was failed so that "
                   "its waiters return",
                   s->name().c_str());
    }
    s->detachExternals();
    return Status();
  });
}

Result Semaphore::getValue(uint64_t* value) const noexcept {
  return entry("Semaphore::getValue", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Semaphore> s = findSemaphore(handle_, &st);
    if (!s) return st;
    owner = s->instance();
    BATON_NULL_CHECK(value, "value output pointer");
    *value = s->value(true);
    return s->failure();
  });
}

Result Semaphore::signal(uint64_t value) const noexcept {
  return entry("Semaphore::signal", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Semaphore> s = findSemaphore(handle_, &st);
    if (!s) return st;
    owner = s->instance();
    if (value > kSharedSemaphoreMaxValue && core::isShared(*s))
      return error(Result::ErrorInvalidArgument,
                   "semaphore '%s' is shared: its values stay at or below 2^62 - 1 "
                   "(kSharedSemaphoreMaxValue), not %llu",
                   s->name().c_str(), static_cast<unsigned long long>(value));
    return s->signal(value);
  });
}

Result Semaphore::exportFd(int* fd) const noexcept {
  return entry("Semaphore::exportFd", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Semaphore> s = findSemaphore(handle_, &st);
    if (!s) return st;
    owner = s->instance();
    BATON_NULL_CHECK(fd, "fd output pointer");
    *fd = -1;
    return core::exportShared(*s, fd);
  });
}

Result Semaphore::fail(const char* reason) const noexcept {
  return entry("Semaphore::fail", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Semaphore> s = findSemaphore(handle_, &st);
    if (!s) return st;
    owner = s->instance();
    if (!s->fail(Result::ErrorSemaphoreFailed, reason ? reason : "failed by the host"))
      return s->failure().context("already failed");
    return Status();
  });
}

Result Semaphore::getFailureReason(char* buffer, size_t capacity) const noexcept {
  return entry("Semaphore::getFailureReason", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Semaphore> s = findSemaphore(handle_, &st);
    if (!s) return st;
    owner = s->instance();
    BATON_NULL_CHECK(buffer, "buffer");
    if (capacity == 0) return Status(Result::ErrorInvalidArgument, "capacity is 0");
    std::string text = s->failed() ? s->failureReason() : std::string();
    size_t n = std::min(capacity - 1, text.size());
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
    return Status();
  });
}

Result Semaphore::wait(uint64_t value, uint64_t timeoutNs) const noexcept {
  return entry("Semaphore::wait", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Semaphore> s = findSemaphore(handle_, &st);
    if (!s) return st;
    owner = s->instance();
    std::vector<HostWaitEntry> entries{{s, value}};
    return hostWait(entries, WaitMode::All, Deadline::after(timeoutNs));
  });
}

}  // namespace baton
