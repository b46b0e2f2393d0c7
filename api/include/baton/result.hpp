/// \file
/// baton/result.hpp — result codes and error reporting.
///
/// Every fallible baton call returns a [[nodiscard]] Result (destroy() included). Success codes
/// (>= 0) are not errors: Success, NotReady (an answer not complete yet: an enumeration's array
/// was too small, a queue-ordered buffer is not allocated yet) and Timeout (a host wait ended with
/// its values unmet: its timeout expired, or it polled with timeout 0; waits never return
/// NotReady). Error codes (< 0) always come with a message that names the operation, the object
/// and, where there is one, the native error (CUresult name, VkResult). The message reaches the
/// caller twice:
///   - lastErrorMessage(): per thread, the message of the most recent error on this thread;
///   - the debug callback given at instance creation (InstanceCreateInfo::debugCallback).
/// No baton call throws.
#pragma once

#include <cstdint>

#include "baton/export.h"

namespace baton {

/// The outcome of every fallible baton call (see baton/result.hpp): Success, NotReady and
/// Timeout (>= 0) are not errors; the error codes (< 0) come with a message. The C API's
/// baton_result has the same values.
enum class Result : int32_t {
  Success = 0,   ///< the call did what it was asked
  NotReady = 1,  ///< not complete yet (an array too small, a buffer not allocated yet)
  Timeout = 2,   ///< a wait ended unmet (its timeout expired, or a poll); not an error

  ErrorInvalidArgument = -1,     ///< a field or argument is out of its documented range
  ErrorInvalidHandle = -2,       ///< a null, destroyed, stale or wrong-type handle
  ErrorDeviceMismatch = -3,      ///< objects of different devices (or instances) used together
  ErrorNonIncreasingValue = -4,  ///< a signal value not greater than the semaphore's value
  ErrorSemaphoreFailed = -5,     ///< a waited semaphore failed; the message has the first reason
  ErrorDeviceLost = -6,          ///< a sticky device fault; the device accepts no more work
  ErrorOutOfHostMemory = -7,     ///< a host allocation or a handle slot could not be obtained
  ErrorOutOfDeviceMemory = -8,   ///< a device allocation failed
  ErrorBackendUnavailable = -9,  ///< the backend's driver is absent or failed to initialise
  ErrorNotSupported = -10,       ///< the backend or device lacks the capability asked for
  ErrorHostCallFailed = -11,     ///< a hostCall or native callback returned an error
  ErrorObjectInUse = -12,        ///< destroyed while in use; see each destroy() for the outcome
  ErrorDriver = -13,             ///< any other native driver error; the message has its name
  ErrorInvalidState = -14,       ///< the object is not in a state that allows the call
};

/// The enumerator's name, e.g. "ErrorSemaphoreFailed". Never null; unknown values give
/// `"Result(<n>)"` from a static buffer per thread. Thread safe.
BATON_API const char* resultName(Result result) noexcept;

/// True for the error codes (< 0); Success, NotReady and Timeout are not errors.
constexpr bool isError(Result result) noexcept { return static_cast<int32_t>(result) < 0; }

/// The message of the most recent error returned to this thread by any baton call, or "" when
/// none has been returned yet. The pointer stays valid until this thread's next baton call.
/// Thread safe (per-thread storage).
BATON_API const char* lastErrorMessage() noexcept;

}  // namespace baton
