// The driver table: what the stream/event machinery (stream_backend.hpp) needs from an in-order
// stream + event driver. CUDA (impl/cuda) and HIP (impl/hip) each fill one table and keep only
// loading, error mapping and enumeration to themselves (IREE's CUDA and HIP drivers drifted
// apart because this logic existed twice; docs/architecture.md, 'Layers and files').
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

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "baton/fwd.hpp"
#include "baton/image.hpp"
#include "baton/instance.hpp"
#include "report.hpp"
#include "status.hpp"

namespace baton::stream {

using core::Status;

using HostFunction = void (*)(void* userData);

// An image to map (DriverTable::importImage): memory exported as OPAQUE_FD and what lies in it.
struct ImageImport {
  int fd = -1;
  uint64_t allocationSize = 0;
  uint64_t offset = 0;  // where level 0 starts
  bool dedicated = false;
  bool colorAttachment = false;
  ImageFormat format = ImageFormat::Undefined;
  uint32_t width = 0, height = 0, levels = 1, layers = 1;
};
// What DriverTable::importImage made; released by releaseImage.
struct ImageObjects {
  void* memory = nullptr;          // the imported memory (CUexternalMemory)
  void* mipmap = nullptr;          // CUmipmappedArray
  std::vector<void*> arrays;       // per level: CUarray (owned by the mipmapped array)
  std::vector<uint64_t> surfaces;  // per level: CUsurfObject
  uint64_t texture = 0;            // CUtexObject, or 0
};
// One region copied between device memory and one level's array (a CUDA_MEMCPY3D): `depth`
// layers of `height` rows of `widthBytes`, at byte column xBytes, row y and layer z of the
// array, and at `buffer` with rows `bufferPitch` bytes apart and layers `bufferRows` rows apart.
struct ImageCopy {
  bool toImage = false;
  uint64_t buffer = 0;  // a device address
  uint64_t bufferPitch = 0, bufferRows = 0;
  void* array = nullptr;
  uint64_t xBytes = 0;
  uint32_t y = 0, z = 0;
  uint64_t widthBytes = 0;
  uint32_t height = 0, depth = 0;
};

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

  // Native interop (docs/architecture.md, 'Vulkan interop: native and bridged'). Null when the
  // driver cannot do it; the device then imports nothing. Semaphores are timeline semaphores
  // exported as OPAQUE_FD (Vulkan): the import takes `fd` on success; signal and wait are
  // stream-ordered, for a value of the timeline.
  Status (*importTimelineFd)(int fd, void** semaphore);
  Status (*destroyExternalSemaphore)(void* semaphore);
  Status (*signalExternal)(void* semaphore, uint64_t value, void* stream);
  Status (*waitExternal)(void* semaphore, uint64_t value, void* stream);
  // Memory exported as OPAQUE_FD: the import takes `fd` on success; mapped ranges are freed
  // with memFree before the memory object is destroyed.
  Status (*importMemoryFd)(int fd, uint64_t size, bool dedicated, void** memory);
  Status (*mapExternalMemory)(void* memory, uint64_t offset, uint64_t size, uint64_t* address);
  Status (*destroyExternalMemory)(void* memory);

  // Graphs (graph command buffers). Null when the driver lacks an entry point; the device then
  // does not advertise kCapabilityGraphCommandBuffers. Nodes are added behind `dep` (null: a
  // root node) and *node receives the new one. Copies and fills name device addresses (mapped
  // page-locked host memory included); memcpy infers the direction (unified addressing).
  Status (*graphCreate)(void** graph);
  Status (*graphDestroy)(void* graph);
  Status (*graphAddMemcpy)(void* graph, void* dep, uint64_t dst, uint64_t src, uint64_t size,
                           void* context, void** node);
  Status (*graphAddMemset32)(void* graph, void* dep, uint64_t dst, uint32_t value, uint64_t count,
                             void* context, void** node);
  Status (*graphAddHost)(void* graph, void* dep, HostFunction function, void* userData,
                         void** node);
  // Adds a copy of `child` (the driver clones it; the caller still owns `child`).
  Status (*graphAddChild)(void* graph, void* dep, void* child, void** node);
  Status (*graphInstantiate)(void** exec, void* graph);
  // Success with *updated false when the driver refuses the update (another shape): the
  // executable graph is then unchanged; an error only for other failures.
  Status (*graphExecUpdate)(void* exec, void* graph, bool* updated);
  Status (*graphExecDestroy)(void* exec);
  Status (*graphLaunch)(void* exec, void* stream);
  // Capture of the calling thread's work on `stream` (thread-local mode: other threads' calls
  // are not restricted); streamEndCapture's *graph is owned by the caller.
  Status (*streamBeginCapture)(void* stream);
  Status (*streamEndCapture)(void* stream, void** graph);

  // Timelines shared with other processes (shared_timeline.hpp): page-locks `size` bytes of host
  // memory (a shared mapping) for every device and gives its device address; 64-bit stream
  // memory operations on such an address: a wait until the value, compared cyclically as the
  // drivers do, is at least `value`, and a write ordered after the stream's earlier work (with a
  // memory barrier). Null where the driver lacks them; a device that cannot use them says so
  // (kCapabilityStreamMemOps64).
  Status (*hostRegister)(void* host, uint64_t size, uint64_t* deviceAddress);
  Status (*hostUnregister)(void* host);
  Status (*streamWaitValue64)(void* stream, uint64_t address, uint64_t value);
  Status (*streamWriteValue64)(void* stream, uint64_t address, uint64_t value);

  // Memory shared with other processes (shared_buffer.hpp: kBufferShareable, Device::importBuffer).
  // Virtual memory management with POSIX descriptors (CUDA); null where the driver lacks it:
  //   vmmGranularity  the allocation granularity of device `ordinal` (sizes are multiples of it)
  //   vmmCreate       a physical allocation of `size` bytes on device `ordinal`, exportable as a
  //                   POSIX descriptor
  //   vmmExport       a new descriptor of it (close-on-exec; the caller's)
  //   vmmImport       a handle of the allocation behind `fd` (the caller keeps `fd`)
  //   vmmDevice       the ordinal of the device the allocation lives on (-1: not on a device)
  //   vmmRelease      gives a handle back; the memory lives while a handle, a mapping or a
  //                   descriptor of it does, in any process
  //   vmmMap          reserves `size` bytes of addresses, maps the allocation's first `size`
  //                   bytes there and lets device `ordinal` read and write them; an allocation
  //                   smaller than `size` is refused (ErrorDriver), with nothing left behind
  //   vmmUnmap        unmaps a vmmMap range and frees its addresses
  Status (*vmmGranularity)(int ordinal, uint64_t* granularity);
  Status (*vmmCreate)(int ordinal, uint64_t size, uint64_t* handle);
  Status (*vmmExport)(uint64_t handle, int* fd);
  Status (*vmmImport)(int fd, uint64_t* handle);
  Status (*vmmDevice)(uint64_t handle, int* ordinal);
  Status (*vmmRelease)(uint64_t handle);
  Status (*vmmMap)(int ordinal, uint64_t handle, uint64_t size, uint64_t* address);
  Status (*vmmUnmap)(uint64_t address, uint64_t size);
  // IPC memory handles (HIP 5.2, which exports no allocations as descriptors): the 64-byte handle
  // of memAlloc memory; its opening in another process (not the exporting one: the drivers
  // refuse that), mapped until closed. Null where the driver lacks them.
  static constexpr size_t kIpcHandleBytes = 64;
  Status (*ipcGetHandle)(uint64_t address, uint8_t* handle);
  Status (*ipcOpenHandle)(const uint8_t* handle, uint64_t* address);
  Status (*ipcCloseHandle)(uint64_t address);

  // Images (importVulkanImage's native mode; null where the driver cannot map image memory as
  // arrays: HIP 5.2 has no such call). importImage imports the memory and maps it as a
  // mipmapped array with its levels, a surface per level and a texture over all (see
  // baton/image.hpp, NativeImage); on failure nothing is left and the fd is the caller's.
  // releaseImage destroys what importImage made. memcpyImageAsync / graphAddMemcpyImage copy
  // between device memory and a level's array.
  Status (*importImage)(const ImageImport& in, ImageObjects* out);
  void (*releaseImage)(ImageObjects& objects);
  Status (*memcpyImageAsync)(const ImageCopy& copy, void* stream);
  Status (*graphAddMemcpyImage)(void* graph, void* dep, const ImageCopy& copy, void* context,
                                void** node);
};

// Ends a capture of `stream` (d.streamEndCapture). A failed end may leave the stream capturing,
// and every later capture on it would fail: one more end (its graph, if any, dropped) ends it;
// when that fails too, *broken is set and the stream must be replaced. Returns the first end's
// status; *graph receives the captured graph (the caller's), null on a failure.
inline Status endCapture(const DriverTable& d, void* stream, void** graph, bool* broken) {
  *graph = nullptr;
  Status st = d.streamEndCapture(stream, graph);
  if (st.ok()) return st;
  *graph = nullptr;
  void* again = nullptr;
  if (d.streamEndCapture(stream, &again).ok()) {
    if (again) (void)d.graphDestroy(again);
  } else {
    *broken = true;
  }
  return st;
}

// Makes `context` current on this thread for the scope and restores what was current before, so
// that baton leaves a user thread's context as it found it (a thread that submits to a CUDA queue
// may be running its own runtime-API code on another device). The common case — the context is
// already current — costs one getCurrent.
//
// Its driver calls (cuCtxGetCurrent/cuCtxSetCurrent, hipGetDevice/hipSetDevice) can fail, and a
// failure is never passed over: a driver call made in whatever context happens to be current acts
// on another device, or fails later naming a call that is not the cause.
//   - Entering: status() is then the failed call's error ("cuCtxSetCurrent failed:
//     CUDA_ERROR_..."), and the operation that needed the context makes no driver call and fails
//     with it (BATON_TRY(scope.status())). Release paths (kRelease: destructors and frees, which
//     have nobody to return an error to) go ahead without the context instead, since a release
//     names the object it releases and leaking it would be worse, and report the failure as a
//     warning through the debug callback.
//   - Restoring, in the destructor: the operation has happened (an import has taken the caller's
//     fd), so its result stands; the failure is reported as a warning through the debug callback,
//     naming the call, since the calling thread is left with the device's context current. It
//     also sets tContextReplaced: baton's own threads, which keep their device's context current
//     without a scope, run scopes for other devices too (a release that another device's
//     completion causes), and must then make theirs current again.
// The debug callbacks are those of every live instance (the scope does not know the object's).
inline thread_local bool tContextReplaced __attribute__((tls_model("initial-exec"))) = false;

class ContextScope {
 public:
  ContextScope(const DriverTable& driver, void* context) : driver_(driver), context_(context) {
    enter();
  }
  // For releases: `what` says what is released ("freeing memory").
  enum Release { kRelease };
  ContextScope(const DriverTable& driver, void* context, Release, const char* what)
      : driver_(driver), context_(context) {
    enter();
    if (!status_.ok())
      warn(core::format("%s without %s: %s", what,
                        hip() ? "the device made current" : "the device's context made current",
                        status_.message().c_str()));
  }
  ~ContextScope() {
    if (!restore_) return;
    Status st = driver_.setCurrent(previous_);
    if (st.ok()) return;
    tContextReplaced = true;
    warn(core::format(hip() ? "the calling thread's current device could not be restored after a "
                              "baton call, so the baton device stays current on it: %s"
                            : "the calling thread's current context could not be restored after a "
                              "baton call, so the baton device's context stays current on it: %s",
                      st.message().c_str()));
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

  // Whether the context is current; status() is Success then, else what failed.
  bool ok() const noexcept { return status_.ok(); }
  const Status& status() const noexcept { return status_; }

 private:
  void enter() {
    void* current = nullptr;
    // Without the current context, what to restore is unknown: that fails the scope too.
    status_ = driver_.getCurrent(&current);
    if (!status_.ok() || current == context_) return;
    status_ = driver_.setCurrent(context_);
    if (!status_.ok()) return;
    previous_ = current;
    restore_ = true;
  }
  // HIP has no context objects: the machinery's "context" is the current device there.
  bool hip() const noexcept { return driver_.kind == BackendKind::Hip; }
  void warn(const std::string& text) const {
    core::message(nullptr, MessageSeverity::Warning, std::string(driver_.name) + ": " + text);
  }

  const DriverTable& driver_;
  void* context_;
  void* previous_ = nullptr;
  bool restore_ = false;
  Status status_;
};

}  // namespace baton::stream
