// The invariant checker, trace and watchdog of the API fuzzer (fuzz_checker.hpp says what is
// checked and why the bounds are race-free).
#include "fuzz_checker.hpp"

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace baton_fuzz {

namespace {

std::mutex gTraceMutex;
std::vector<std::string> gTrace;
// Inputs are short, but a long one must not grow the trace without bound: keep the last lines.
constexpr size_t kTraceLines = 400;

bool traceToStderr() {
  static const bool on = [] {
    const char* v = std::getenv("BATON_FUZZ_TRACE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

std::string vformat(const char* format, va_list args) {
  char buffer[1024];
  std::vsnprintf(buffer, sizeof buffer, format, args);
  return buffer;
}

void printTraceLocked() {
  std::fprintf(stderr, "baton-fuzz: trace of this input (last %zu operations):\n", gTrace.size());
  for (const std::string& line : gTrace) std::fprintf(stderr, "  %s\n", line.c_str());
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::atomic<FindingHandler> gFindingHandler{nullptr};

std::atomic<const char*> gWatchOp{nullptr};
std::atomic<int64_t> gWatchStartMs{0};
std::atomic<int64_t> gHangLimitMs{-1};  // -1: not set yet (BATON_FUZZ_HANG_SECONDS, 20 s)

void watchdogThread() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const char* op = gWatchOp.load(std::memory_order_acquire);
    if (!op) continue;
    const int64_t elapsed = nowMs() - gWatchStartMs.load(std::memory_order_acquire);
    if (elapsed > gHangLimitMs.load(std::memory_order_relaxed) &&
        gWatchOp.load(std::memory_order_acquire) == op) {
      char text[512];
      std::snprintf(text, sizeof text,
                    "%s has not returned after %lld ms (every wait the harness makes is "
                    "bounded: a waiter or teardown that never returns)",
                    op, static_cast<long long>(elapsed));
      if (FindingHandler handler = gFindingHandler.load(std::memory_order_acquire)) {
        handler(Finding::Hang, text);
        gWatchOp.compare_exchange_strong(op, nullptr, std::memory_order_acq_rel);
        continue;
      }
      std::lock_guard<std::mutex> lock(gTraceMutex);
      std::fprintf(stderr, "baton-fuzz: HANG: %s\n", text);
      printTraceLocked();
      std::fflush(stderr);
      std::abort();
    }
  }
}

void startWatchdog() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* v = std::getenv("BATON_FUZZ_HANG_SECONDS");
    const int64_t seconds = v && std::atoll(v) > 0 ? std::atoll(v) : 20;
    int64_t unset = -1;
    gHangLimitMs.compare_exchange_strong(unset, seconds * 1000, std::memory_order_relaxed);
    std::thread(watchdogThread).detach();
  });
}

}  // namespace

void trace(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string line = vformat(format, args);
  va_end(args);
  if (traceToStderr()) std::fprintf(stderr, "baton-fuzz: %s\n", line.c_str());
  std::lock_guard<std::mutex> lock(gTraceMutex);
  if (gTrace.size() >= kTraceLines) gTrace.erase(gTrace.begin());
  gTrace.push_back(std::move(line));
}

void resetTrace() {
  std::lock_guard<std::mutex> lock(gTraceMutex);
  gTrace.clear();
}

void setFindingHandler(FindingHandler handler) {
  gFindingHandler.store(handler, std::memory_order_release);
}

void setHangLimitMs(int64_t milliseconds) {
  gHangLimitMs.store(milliseconds, std::memory_order_relaxed);
}

void violation(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string text = vformat(format, args);
  va_end(args);
  if (FindingHandler handler = gFindingHandler.load(std::memory_order_acquire))
    handler(Finding::Violation, text);  // throws, in the checker's test
  std::lock_guard<std::mutex> lock(gTraceMutex);
  std::fprintf(stderr, "baton-fuzz: INVARIANT VIOLATION: %s\n", text.c_str());
  printTraceLocked();
  std::fflush(stderr);
  std::abort();
}

void checkDefined(baton::Result result, const char* op) {
  const int32_t code = static_cast<int32_t>(result);
  if (code < static_cast<int32_t>(baton::Result::ErrorInvalidState) ||
      code > static_cast<int32_t>(baton::Result::Timeout))
    violation("%s returned an undefined Result %d", op, code);
  if (baton::isError(result)) {
    const char* message = baton::lastErrorMessage();
    if (!message || !*message)
      violation("%s returned %s without an error message", op, baton::resultName(result));
  }
}

void watchdogBegin(const char* op) {
  startWatchdog();
  gWatchStartMs.store(nowMs(), std::memory_order_release);
  gWatchOp.store(op, std::memory_order_release);
}

void watchdogEnd() { gWatchOp.store(nullptr, std::memory_order_release); }

bool isFailureCode(baton::Result r) {
  return r == baton::Result::ErrorSemaphoreFailed || r == baton::Result::ErrorDeviceLost;
}

void SemaphoreModel::created(baton::Semaphore h, uint32_t newId, uint64_t initialValue) {
  *this = SemaphoreModel();
  handle = h;
  alive = true;
  id = newId;
  observed = maxRequested = initialValue;
  name = "s" + std::to_string(newId);
}

void SemaphoreModel::onGetValue(baton::Result r, uint64_t value) {
  using baton::Result;
  checkDefined(r, "Semaphore::getValue");
  if (!alive) {
    if (r != Result::ErrorInvalidHandle)
      violation("getValue of %s semaphore %s returned %s, not ErrorInvalidHandle",
                handle ? "destroyed" : "null", name.c_str(), baton::resultName(r));
    return;
  }
  if (r != Result::Success && !isFailureCode(r))
    violation("getValue of %s returned %s", name.c_str(), baton::resultName(r));
  if (r == Result::Success && failed)
    violation(
        "%s was seen failed (%s: '%s') but getValue now returns Success: a failed "
        "semaphore must stay failed",
        name.c_str(), baton::resultName(failureCode), failureReason.c_str());
  if (value < observed)
    violation("%s went backwards: getValue read %llu after %llu had been observed", name.c_str(),
              static_cast<unsigned long long>(value), static_cast<unsigned long long>(observed));
  if (value > maxRequested)
    violation("%s reached %llu, but nobody asked for more than %llu", name.c_str(),
              static_cast<unsigned long long>(value),
              static_cast<unsigned long long>(maxRequested));
  observed = value;
  if (isFailureCode(r)) {
    if (failed && failureCode != Result::Success && r != failureCode)
      violation("%s failed with %s, now reports %s", name.c_str(), baton::resultName(failureCode),
                baton::resultName(r));
    failed = true;
    failureCode = r;
    if (!frozenKnown) {
      frozenKnown = true;
      frozenValue = value;
    } else if (value != frozenValue) {
      violation(
          "%s's value moved from %llu to %llu after it failed (a failed semaphore keeps "
          "the value its failure found)",
          name.c_str(), static_cast<unsigned long long>(frozenValue),
          static_cast<unsigned long long>(value));
    }
  }
}

void SemaphoreModel::onSignal(baton::Result r, uint64_t value) {
  using baton::Result;
  checkDefined(r, "Semaphore::signal");
  if (!alive) {
    if (r != Result::ErrorInvalidHandle)
      violation("signal of a destroyed/null semaphore %s returned %s", name.c_str(),
                baton::resultName(r));
    return;
  }
  if (r == Result::Success) {
    if (failed)
      violation("host signal of %s to %llu succeeded after it failed", name.c_str(),
                static_cast<unsigned long long>(value));
    if (value <= observed)
      violation("host signal of %s to %llu succeeded although its value was already %llu",
                name.c_str(), static_cast<unsigned long long>(value),
                static_cast<unsigned long long>(observed));
    requested(value);
    observed = value;
  } else if (r == Result::ErrorNonIncreasingValue) {
    if (value > maxRequested)
      violation(
          "host signal of %s to %llu was refused as non-increasing, but its value cannot "
          "exceed %llu",
          name.c_str(), static_cast<unsigned long long>(value),
          static_cast<unsigned long long>(maxRequested));
  } else if (isFailureCode(r)) {
    failed = true;
    if (failureCode == Result::Success) failureCode = r;
  } else {
    violation("host signal of %s returned %s", name.c_str(), baton::resultName(r));
  }
}

void SemaphoreModel::onFail(baton::Result r, const std::string& reason) {
  using baton::Result;
  checkDefined(r, "Semaphore::fail");
  if (!alive) {
    if (r != Result::ErrorInvalidHandle)
      violation("fail of a destroyed/null semaphore %s returned %s", name.c_str(),
                baton::resultName(r));
    return;
  }
  if (r == Result::Success) {
    if (failed)
      violation("%s was already failed, yet a second fail() succeeded (the first failure wins)",
                name.c_str());
    failed = true;
    failureCode = Result::ErrorSemaphoreFailed;
    failureReason = reason;
  } else if (isFailureCode(r)) {
    failed = true;
  } else {
    violation("fail of %s returned %s", name.c_str(), baton::resultName(r));
  }
}

void SemaphoreModel::onFailureReason(baton::Result r, const char* text) {
  using baton::Result;
  checkDefined(r, "Semaphore::getFailureReason");
  if (!alive) {
    if (r != Result::ErrorInvalidHandle)
      violation("getFailureReason of a destroyed/null semaphore returned %s", baton::resultName(r));
    return;
  }
  if (r != Result::Success)
    violation("getFailureReason of %s returned %s", name.c_str(), baton::resultName(r));
  if (failed && !*text) violation("%s is failed but has no failure reason", name.c_str());
  if (*text) {
    failed = true;
    if (failureReason.empty())
      failureReason = text;
    else if (failureReason != text)
      violation("%s's failure reason changed from '%s' to '%s' (the first failure wins)",
                name.c_str(), failureReason.c_str(), text);
  }
}

bool SemaphoreModel::refresh(uint64_t* value) {
  uint64_t v = 0;
  const baton::Result r = handle.getValue(&v);
  onGetValue(r, v);
  if (value) *value = v;
  return alive && failed;
}

void SemaphoreModel::checkSignalSettled(uint64_t value, const char* when) {
  uint64_t v = 0;
  if (refresh(&v)) return;
  if (v < value)
    violation(
        "%s: a submitted signal of %s to %llu was neither reached nor failed (value %llu): a "
        "lost signal",
        when, name.c_str(), static_cast<unsigned long long>(value),
        static_cast<unsigned long long>(v));
}

void checkWaitResult(baton::Result r, const std::vector<WaitEntryModel>& entries,
                     baton::WaitMode mode, bool valid) {
  using baton::Result;
  using baton::resultName;
  checkDefined(r, "waitSemaphores");
  const bool all = mode == baton::WaitMode::All;
  if (!valid) {
    if (r != Result::ErrorInvalidHandle)
      violation("a host wait naming a destroyed/null semaphore returned %s", resultName(r));
    return;
  }
  if (entries.empty()) {
    if (r != Result::Success) violation("an empty host wait returned %s", resultName(r));
    return;
  }
  size_t reachable = 0, known = 0, knownFailedUnreached = 0;
  for (const WaitEntryModel& e : entries) {
    const SemaphoreModel& s = *e.semaphore;
    const uint64_t w = e.value;
    if (w <= s.maxRequested) ++reachable;
    if (w <= s.observed) ++known;
    if (s.failed && s.frozenKnown && w > s.frozenValue) ++knownFailedUnreached;
  }
  const size_t n = entries.size();
  switch (r) {
    case Result::Success:
      if (all ? reachable < n : reachable == 0)
        violation("a host wait (%s) succeeded, but a value it waited for was never signalled",
                  all ? "ALL" : "ANY");
      if (all)
        for (const WaitEntryModel& e : entries)
          if (e.value > e.semaphore->observed) e.semaphore->observed = e.value;
      break;
    case Result::Timeout:
      if (all ? known == n : known > 0)
        violation(
            "a host wait (%s) timed out although its values had been reached (a reached "
            "wait stays satisfied)",
            all ? "ALL" : "ANY");
      if (knownFailedUnreached > 0 && (all || known == 0))
        violation(
            "a host wait timed out on a semaphore known to have failed, instead of "
            "returning its failure");
      break;
    case Result::ErrorSemaphoreFailed:
    case Result::ErrorDeviceLost: {
      // Some entry must be failed now (and stay so).
      size_t failed = 0;
      for (const WaitEntryModel& e : entries)
        if (e.semaphore->refresh()) ++failed;
      if (failed == 0)
        violation("a host wait returned %s but none of its semaphores is failed", resultName(r));
      break;
    }
    default: violation("a host wait returned %s", resultName(r));
  }
}

void checkDrained(baton::Result r, const char* op) {
  checkDefined(r, op);
  if (r == baton::Result::Timeout)
    violation(
        "%s still found work pending 10 s after every waited value was signalled or failed: a "
        "lost signal or a hang",
        op);
}

}  // namespace baton_fuzz
