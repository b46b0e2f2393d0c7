// Which baton callback, if any, the calling thread is running: backends open a CallbackScope
// around every host call and native callback they invoke. Entry points that would wait for a
// device's queues — Queue::waitIdle, Device::waitIdle, Device::destroy, Instance::destroy — ask
// refuseInsideOwnCallback first: from inside a callback of that device they can never be
// honoured (the callback is the work being waited for, and on GPU backends the thread running it
// is the one that would issue or complete the rest), so they return ErrorInvalidState at once
// instead of hanging, and leave the objects and the submission untouched.
//
// Thread safety: the scope is per thread (thread_local); nesting restores the outer scope.
#pragma once

#include <string>

#include "objects.hpp"
#include "status.hpp"
#include "trace.hpp"

namespace baton::core {

class CallbackScope {
 public:
  enum Kind { kHostCall, kNative };
  // `traceId`: the submission's Submission::traceId; the callback is then a slice of the calling
  // thread in the timeline trace (trace.hpp).
  CallbackScope(const Device* device, uint32_t queueIndex, Kind kind, uint64_t traceId = 0) noexcept
      : device_(device), queueIndex_(queueIndex), kind_(kind), outer_(tCurrent), traceId_(traceId) {
    tCurrent = this;
    trace::callBegin(kind == kNative ? trace::kNativeCall : trace::kHostCall, traceId);
  }
  ~CallbackScope() {
    trace::callEnd(kind_ == kNative ? trace::kNativeCall : trace::kHostCall, traceId_);
    tCurrent = outer_;
  }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;

  // The innermost callback running on this thread, or null.
  static const CallbackScope* current() noexcept { return tCurrent; }

  const Device* device() const noexcept { return device_; }
  uint32_t queueIndex() const noexcept { return queueIndex_; }
  const char* kindName() const noexcept {
    return kind_ == kHostCall ? "a host call" : "a native callback";
  }

 private:
  const Device* device_;
  uint32_t queueIndex_;
  Kind kind_;
  const CallbackScope* outer_;
  uint64_t traceId_;
  // Initial-exec TLS: read on every direct issue (see stream's tInternalThread).
  static inline thread_local const CallbackScope* tCurrent
      __attribute__((tls_model("initial-exec"))) = nullptr;
};

// ErrorInvalidState when the calling thread runs a callback of `device` (or, with `instance`
// set, of any device of that instance): `operation` would wait for the callback's own work.
// Success otherwise.
Status refuseInsideOwnCallback(const char* operation, const Device* device,
                               const Instance* instance = nullptr);

}  // namespace baton::core
