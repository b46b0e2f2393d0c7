// The driver table: what the stream/event machinery (stream_backend.hpp) needs from an in-order
// stream + event driver. CUDA (impl/cuda) and HIP (impl/hip) each fill one table and keep only
// loading, error mapping and enumeration to themselves (DESIGN §2: IREE's CUDA and HIP drivers
// drifted apart because this logic existed twice).
//
// Every entry returns a Status: Success, NotReady (eventQuery only), or an error whose message
// names the call and the native error ("cuEventRecord failed: CUDA_ERROR_ILLEGAL_ADDRESS (...)").
// Errors that leave the device unusable (sticky faults: illegal address, launch failure, ECC)
// carry Result::ErrorDeviceLost, which is how the shared code recognises them.
//
// Handles are opaque: `void*` for contexts, streams, events and memory pools, uint64_t for device
// addresses (CUdeviceptr / hipDeviceptr_t). Entries are called with the device's context current
// (see ContextScope), from any thread, never from inside a host function.
#pragma once

#include <cstdint>

#include "baton/fwd.hpp"
#include "status.hpp"

namespace baton::stream {

using core::Status;

using HostFunction = void (*)(void* userData);

struct DriverTable {
  BackendKind kind;
  const char* name;  // "CUDA", "HIP": used in messages

  // The calling thread's current context (null when none), and making one current.
  Status (*getCurrent)(void** context);
  Status (*setCurrent)(void* context);

  // A stream of the current context that does not synchronise with the legacy default stream.
  Status (*streamCreate)(void** stream);
  Status (*streamDestroy)(void* stream);
  Status (*streamSynchronize)(void* stream);
  Status (*streamWaitEvent)(void* stream, void* event);

  // Events never record timing. `blockingSync`: eventSynchronize sleeps instead of spinning.
  Status (*eventCreate)(void** event, bool blockingSync);
  Status (*eventDestroy)(void* event);
  Status (*eventRecord)(void* event, void* stream);
  Status (*eventQuery)(void* event);  // Success (completed), NotReady, or an error
  Status (*eventSynchronize)(void* event);

  Status (*launchHostFunc)(void* stream, HostFunction function, void* userData);

  Status (*memcpyAsync)(uint64_t dst, uint64_t src, uint64_t size, void* stream);
  Status (*memcpyHtoDAsync)(uint64_t dst, const void* src, uint64_t size, void* stream);
  Status (*memsetD32Async)(uint64_t dst, uint32_t value, uint64_t count, void* stream);

  // Stream-ordered allocation from `pool` (the backend's per-device pool); null when the device
  // has none (the capability is then not advertised).
  Status (*memAllocAsync)(uint64_t* address, uint64_t size, void* pool, void* stream);
  Status (*memFreeAsync)(uint64_t address, void* stream);

  // Blocking allocation: device memory, and page-locked host memory mapped into the device's
  // address space (portable across contexts).
  Status (*memAlloc)(uint64_t* address, uint64_t size);
  Status (*memFree)(uint64_t address);
  Status (*hostAlloc)(void** host, uint64_t* deviceAddress, uint64_t size);
  Status (*hostFree)(void* host);

  // Native interop (DESIGN §5). Null when the driver cannot do it; the device then imports
  // nothing. Semaphores are timeline semaphores exported as OPAQUE_FD (Vulkan): the import takes
  // `fd` on success; signal and wait are stream-ordered, for a value of the timeline.
  Status (*importTimelineFd)(int fd, void** semaphore);
  Status (*destroyExternalSemaphore)(void* semaphore);
  Status (*signalExternal)(void* semaphore, uint64_t value, void* stream);
  Status (*waitExternal)(void* semaphore, uint64_t value, void* stream);
  // Memory exported as OPAQUE_FD: the import takes `fd` on success; mapped ranges are freed
  // with memFree before the memory object is destroyed.
  Status (*importMemoryFd)(int fd, uint64_t size, bool dedicated, void** memory);
  Status (*mapExternalMemory)(void* memory, uint64_t offset, uint64_t size, uint64_t* address);
  Status (*destroyExternalMemory)(void* memory);
};

// Makes `context` current on this thread for the scope and restores what was current before, so
// that baton leaves a user thread's context as it found it (a thread that submits to a CUDA queue
// may be running its own runtime-API code on another device). The common case — the context is
// already current — costs one getCurrent.
class ContextScope {
 public:
  ContextScope(const DriverTable& driver, void* context) noexcept
      : driver_(driver), context_(context) {
    void* current = nullptr;
    if (!driver_.getCurrent(&current).ok()) current = nullptr;
    if (current != context_) {
      if (driver_.setCurrent(context_).ok()) {
        previous_ = current;
        restore_ = true;
      }
    }
  }
  // For the thread that keeps `context` current (a stream queue's issuing thread, which makes it
  // current when it starts and after every native callback): no driver call here.
  enum Current { kCurrent };
  ContextScope(const DriverTable& driver, void* context, Current) noexcept
      : driver_(driver), context_(context) {}
  ~ContextScope() {
    if (restore_) (void)driver_.setCurrent(previous_);
  }
  // Makes the context current again after user code (a native callback) may have changed it;
  // the scope still restores what the thread had before the scope began.
  void reapply() noexcept {
    void* current = nullptr;
    if (driver_.getCurrent(&current).ok() && current == context_) return;
    (void)driver_.setCurrent(context_);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  const DriverTable& driver_;
  void* context_;
  void* previous_ = nullptr;
  bool restore_ = false;
};

}  // namespace baton::stream
