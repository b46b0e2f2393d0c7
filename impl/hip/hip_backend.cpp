// The HIP backend: device enumeration, the driver table the shared stream machinery runs on
// (impl/stream) and createHipBackend() for the registry. Like impl/cuda, it holds only what is
// HIP's own: the runtime's current-device model, hipStreamAddCallback where 5.2 lacks
// hipLaunchHostFunc, the default memory pool, and interop limits (docs/architecture.md, 'Layers and
// files').
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "backend.hpp"
#include "baton/device.hpp"
#include "hip_symbols.hpp"
#include "stream_backend.hpp"

namespace baton::core {
std::unique_ptr<Backend> createHipBackend();
}

namespace baton::hip {
namespace {

using core::Status;

hipDeviceptr_t ptr(uint64_t address) {
  return reinterpret_cast<hipDeviceptr_t>(static_cast<uintptr_t>(address));
}
uint64_t address(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// HIP has no context objects to speak of (hipCtx* is deprecated): a thread works on its current
// device. The machinery's "context" is therefore the device ordinal, stored as ordinal + 1 so
// that no device is the null context.
void* contextOf(int ordinal) { return reinterpret_cast<void*>(static_cast<intptr_t>(ordinal) + 1); }
int ordinalOf(void* context) { return static_cast<int>(reinterpret_cast<intptr_t>(context) - 1); }

// ---- the driver table ---------------------------------------------------------------------

Status getCurrent(void** context) {
  // A thread that never chose a device works on device 0 (HIP's default device).
  int device = 0;
  Status st = BATON_HIP_STATUS(hipGetDevice, &device);
  *context = st.ok() ? contextOf(device) : nullptr;
  return st;
}
Status setCurrent(void* context) {
  if (!context) return Status();  // nothing to restore: HIP has no "no device" state
  return BATON_HIP_STATUS(hipSetDevice, ordinalOf(context));
}
Status streamCreate(void** stream) {
  // Non-blocking: baton's streams never synchronise with the null stream, which application
  // code in the same process may use.
  hipStream_t s = nullptr;
  Status st = BATON_HIP_STATUS(hipStreamCreateWithFlags, &s, hipStreamNonBlocking);
  *stream = s;
  return st;
}
Status streamDestroy(void* stream) {
  return BATON_HIP_STATUS(hipStreamDestroy, static_cast<hipStream_t>(stream));
}
Status streamSynchronize(void* stream) {
  return BATON_HIP_STATUS(hipStreamSynchronize, static_cast<hipStream_t>(stream));
}
Status streamWaitEvent(void* stream, void* event) {
  return BATON_HIP_STATUS(hipStreamWaitEvent, static_cast<hipStream_t>(stream),
                          static_cast<hipEvent_t>(event), 0u);
}
Status eventCreate(void** event, bool blockingSync) {
  hipEvent_t e = nullptr;
  unsigned flags = hipEventDisableTiming;
  if (blockingSync) flags |= hipEventBlockingSync;
  Status st = BATON_HIP_STATUS(hipEventCreateWithFlags, &e, flags);
  *event = e;
  return st;
}
Status eventDestroy(void* event) {
  return BATON_HIP_STATUS(hipEventDestroy, static_cast<hipEvent_t>(event));
}
Status eventRecord(void* event, void* stream) {
  return BATON_HIP_STATUS(hipEventRecord, static_cast<hipEvent_t>(event),
                          static_cast<hipStream_t>(stream));
}
Status eventQuery(void* event) {
  hipError_t r = BATON_HIP(hipEventQuery, static_cast<hipEvent_t>(event));
  if (r == hipSuccess) return Status();
  if (r == hipErrorNotReady) return Status(Result::NotReady);
  return toStatus(r, "hipEventQuery");
}
Status eventSynchronize(void* event) {
  return BATON_HIP_STATUS(hipEventSynchronize, static_cast<hipEvent_t>(event));
}

// hipStreamAddCallback's callback takes (stream, status, userData): a small heap record carries the
// machinery's function and data to it. Host functions are off the hot path (only submissions with
// host calls enqueue one: docs/architecture.md, 'Host calls'), so the allocation is not on every
// submission. A callback reached with an error status still runs the function: the machinery learns
// of the stream's error from the event recorded behind it, and the function is what reports the
// host call's own outcome.
struct CallbackRecord {
  stream::HostFunction function;
  void* userData;
  static void run(hipStream_t, hipError_t, void* data) {
    auto* self = static_cast<CallbackRecord*>(data);
    stream::HostFunction function = self->function;
    void* userData = self->userData;
    delete self;
    function(userData);
  }
};

Status launchHostFunc(void* stream, stream::HostFunction function, void* userData) {
  if (symbols().hipLaunchHostFunc)
    return BATON_HIP_STATUS(hipLaunchHostFunc, static_cast<hipStream_t>(stream), function,
                            userData);
  // HIP 5.2 declares hipLaunchHostFunc but does not export it.
  auto* record = new (std::nothrow) CallbackRecord{function, userData};
  if (!record)
    return Status(Result::ErrorOutOfHostMemory, "no memory for a hipStreamAddCallback record");
  hipError_t r = BATON_HIP(hipStreamAddCallback, static_cast<hipStream_t>(stream),
                           &CallbackRecord::run, static_cast<void*>(record), 0u);
  if (r != hipSuccess) delete record;
  return toStatus(r, "hipStreamAddCallback");
}
Status memcpyAsync(uint64_t dst, uint64_t src, uint64_t size, void* stream) {
  // hipMemcpyDefault: the runtime infers the direction from the addresses (unified addressing),
  // so device and mapped pinned host buffers copy the same way.
  return BATON_HIP_STATUS(hipMemcpyAsync, ptr(dst), ptr(src), static_cast<size_t>(size),
                          hipMemcpyDefault, static_cast<hipStream_t>(stream));
}
Status memcpyHtoDAsync(uint64_t dst, const void* src, uint64_t size, void* stream) {
  // 5.2's prototype takes a non-const source; the runtime only reads it.
  return BATON_HIP_STATUS(hipMemcpyHtoDAsync, ptr(dst), const_cast<void*>(src),
                          static_cast<size_t>(size), static_cast<hipStream_t>(stream));
}
Status memsetD32Async(uint64_t dst, uint32_t value, uint64_t count, void* stream) {
  return BATON_HIP_STATUS(hipMemsetD32Async, ptr(dst), static_cast<int>(value),
                          static_cast<size_t>(count), static_cast<hipStream_t>(stream));
}
Status memAllocAsync(uint64_t* out, uint64_t size, void* pool, void* stream) {
  if (!symbols().hipMallocFromPoolAsync)
    return Status(Result::ErrorNotSupported, "the HIP runtime has no hipMallocFromPoolAsync");
  void* p = nullptr;
  Status st = BATON_HIP_STATUS(hipMallocFromPoolAsync, &p, static_cast<size_t>(size),
                               static_cast<hipMemPool_t>(pool), static_cast<hipStream_t>(stream));
  *out = address(p);
  return st;
}
Status memFreeAsync(uint64_t address, void* stream) {
  if (!symbols().hipFreeAsync)
    return Status(Result::ErrorNotSupported, "the HIP runtime has no hipFreeAsync");
  return BATON_HIP_STATUS(hipFreeAsync, ptr(address), static_cast<hipStream_t>(stream));
}
Status memAlloc(uint64_t* out, uint64_t size) {
  void* p = nullptr;
  Status st = BATON_HIP_STATUS(hipMalloc, &p, static_cast<size_t>(size));
  *out = address(p);
  return st;
}
Status memFree(uint64_t address) { return BATON_HIP_STATUS(hipFree, ptr(address)); }
Status hostAlloc(void** host, uint64_t* deviceAddress, uint64_t size) {
  // Portable: pinned for every device, so the memory serves queues of several devices;
  // mapped into the device address space, which HostPinned buffers promise.
  void* p = nullptr;
  hipError_t r = BATON_HIP(hipHostMalloc, &p, static_cast<size_t>(size),
                           hipHostMallocPortable | hipHostMallocMapped);
  if (r != hipSuccess) {
    Status st = toStatus(r, "hipHostMalloc");
    if (st.code() == Result::ErrorOutOfDeviceMemory)
      return Status(Result::ErrorOutOfHostMemory, st.message());
    return st;
  }
  void* d = nullptr;
  r = BATON_HIP(hipHostGetDevicePointer, &d, p, 0u);
  if (r != hipSuccess) {
    (void)BATON_HIP(hipHostFree, p);
    return toStatus(r, "hipHostGetDevicePointer");
  }
  *host = p;
  *deviceAddress = address(d);
  return Status();
}
Status hostFree(void* host) { return BATON_HIP_STATUS(hipHostFree, host); }
// Shared host memory for cross-process timelines, as on CUDA (cuda_backend.cpp says why).
Status hostRegister(void* host, uint64_t size, uint64_t* deviceAddress) {
  BATON_TRY(BATON_HIP_STATUS(hipHostRegister, host, static_cast<size_t>(size),
                             hipHostRegisterPortable | hipHostRegisterMapped));
  void* d = nullptr;
  Status st = BATON_HIP_STATUS(hipHostGetDevicePointer, &d, host, 0u);
  if (!st.ok()) {
    (void)BATON_HIP(hipHostUnregister, host);
    return st;
  }
  *deviceAddress = reinterpret_cast<uintptr_t>(d);
  return Status();
}
Status hostUnregister(void* host) { return BATON_HIP_STATUS(hipHostUnregister, host); }
// hipStreamWaitValueGte with a full mask: *address >= value (ROCm compares plainly, CUDA
// cyclically; the values baton uses are ordered the same by both).
Status streamWaitValue64(void* stream, uint64_t address, uint64_t value) {
  return BATON_HIP_STATUS(hipStreamWaitValue64, static_cast<hipStream_t>(stream),
                          reinterpret_cast<void*>(static_cast<uintptr_t>(address)), value,
                          static_cast<unsigned>(hipStreamWaitValueGte), ~uint64_t{0});
}
Status streamWriteValue64(void* stream, uint64_t address, uint64_t value) {
  return BATON_HIP_STATUS(hipStreamWriteValue64, static_cast<hipStream_t>(stream),
                          reinterpret_cast<void*>(static_cast<uintptr_t>(address)), value, 0u);
}

// Memory shared with other processes: ROCm 5.2 exports no allocation as a descriptor (hipMemCreate
// and its kin came later), so hipMalloc memory travels as an IPC handle (shared_buffer.hpp).
Status ipcGetHandle(uint64_t address, uint8_t* handle) {
  static_assert(sizeof(hipIpcMemHandle_t) == stream::DriverTable::kIpcHandleBytes);
  hipIpcMemHandle_t h{};
  BATON_TRY(BATON_HIP_STATUS(hipIpcGetMemHandle, &h, ptr(address)));
  std::memcpy(handle, &h, sizeof h);
  return Status();
}
Status ipcOpenHandle(const uint8_t* handle, uint64_t* out) {
  hipIpcMemHandle_t h{};
  std::memcpy(&h, handle, sizeof h);
  void* p = nullptr;
  Status st = BATON_HIP_STATUS(hipIpcOpenMemHandle, &p, h, hipIpcMemLazyEnablePeerAccess);
  *out = address(p);
  return st;
}
Status ipcCloseHandle(uint64_t address) {
  return BATON_HIP_STATUS(hipIpcCloseMemHandle, ptr(address));
}

Status importMemoryFd(int fd, uint64_t size, bool dedicated, void** memory) {
  hipExternalMemoryHandleDesc desc{};
  desc.type = hipExternalMemoryHandleTypeOpaqueFd;
  desc.handle.fd = fd;
  desc.size = size;
  // hipExternalMemoryDedicated (0x1, CUDA's value) is only named by headers after 5.2.
  desc.flags = dedicated ? 0x1u : 0u;
  hipExternalMemory_t m = nullptr;
  Status st = BATON_HIP_STATUS(hipImportExternalMemory, &m, &desc);
  *memory = m;
  return st;
}
Status mapExternalMemory(void* memory, uint64_t offset, uint64_t size, uint64_t* out) {
  hipExternalMemoryBufferDesc desc{};
  desc.offset = offset;
  desc.size = size;
  void* p = nullptr;
  Status st = BATON_HIP_STATUS(hipExternalMemoryGetMappedBuffer, &p,
                               static_cast<hipExternalMemory_t>(memory), &desc);
  *out = address(p);
  return st;
}
Status destroyExternalMemory(void* memory) {
  return BATON_HIP_STATUS(hipDestroyExternalMemory, static_cast<hipExternalMemory_t>(memory));
}

// Graphs (graph command buffers): one-dimensional nodes in a chain.
hipGraphNode_t* depOf(void*& dep) { return reinterpret_cast<hipGraphNode_t*>(&dep); }
size_t depCount(void* dep) { return dep ? 1u : 0u; }
Status graphCreate(void** graph) {
  hipGraph_t g = nullptr;
  Status st = BATON_HIP_STATUS(hipGraphCreate, &g, 0u);
  *graph = g;
  return st;
}
Status graphDestroy(void* graph) {
  return BATON_HIP_STATUS(hipGraphDestroy, static_cast<hipGraph_t>(graph));
}
Status graphAddMemcpy(void* graph, void* dep, uint64_t dst, uint64_t src, uint64_t size,
                      void* /*context*/, void** node) {
  hipGraphNode_t n = nullptr;
  Status st = BATON_HIP_STATUS(hipGraphAddMemcpyNode1D, &n, static_cast<hipGraph_t>(graph),
                               depOf(dep), depCount(dep), ptr(dst), ptr(src),
                               static_cast<size_t>(size), hipMemcpyDefault);
  *node = n;
  return st;
}
Status graphAddMemset32(void* graph, void* dep, uint64_t dst, uint32_t value, uint64_t count,
                        void* /*context*/, void** node) {
  hipMemsetParams p{};
  p.dst = ptr(dst);
  p.value = value;
  p.elementSize = 4;
  p.width = static_cast<size_t>(count);
  p.height = 1;
  hipGraphNode_t n = nullptr;
  Status st = BATON_HIP_STATUS(hipGraphAddMemsetNode, &n, static_cast<hipGraph_t>(graph),
                               depOf(dep), depCount(dep), &p);
  *node = n;
  return st;
}
Status graphAddHost(void* graph, void* dep, stream::HostFunction function, void* userData,
                    void** node) {
  hipHostNodeParams p{};
  p.fn = function;
  p.userData = userData;
  hipGraphNode_t n = nullptr;
  Status st = BATON_HIP_STATUS(hipGraphAddHostNode, &n, static_cast<hipGraph_t>(graph), depOf(dep),
                               depCount(dep), &p);
  *node = n;
  return st;
}
Status graphAddChild(void* graph, void* dep, void* child, void** node) {
  hipGraphNode_t n = nullptr;
  Status st = BATON_HIP_STATUS(hipGraphAddChildGraphNode, &n, static_cast<hipGraph_t>(graph),
                               depOf(dep), depCount(dep), static_cast<hipGraph_t>(child));
  *node = n;
  return st;
}
Status graphInstantiate(void** exec, void* graph) {
  hipGraphExec_t e = nullptr;
  Status st =
      BATON_HIP_STATUS(hipGraphInstantiateWithFlags, &e, static_cast<hipGraph_t>(graph), 0ull);
  *exec = e;
  return st;
}
Status graphExecUpdate(void* exec, void* graph, bool* updated) {
  hipGraphNode_t errorNode = nullptr;
  hipGraphExecUpdateResult result = hipGraphExecUpdateError;
  hipError_t r = BATON_HIP(hipGraphExecUpdate, static_cast<hipGraphExec_t>(exec),
                           static_cast<hipGraph_t>(graph), &errorNode, &result);
  *updated = r == hipSuccess;
  if (r == hipErrorGraphExecUpdateFailure) return Status();  // refused: instantiate anew
  return toStatus(r, "hipGraphExecUpdate");
}
Status graphExecDestroy(void* exec) {
  return BATON_HIP_STATUS(hipGraphExecDestroy, static_cast<hipGraphExec_t>(exec));
}
Status graphLaunch(void* exec, void* stream) {
  return BATON_HIP_STATUS(hipGraphLaunch, static_cast<hipGraphExec_t>(exec),
                          static_cast<hipStream_t>(stream));
}
Status streamBeginCapture(void* stream) {
  return BATON_HIP_STATUS(hipStreamBeginCapture, static_cast<hipStream_t>(stream),
                          hipStreamCaptureModeThreadLocal);
}
Status streamEndCapture(void* stream, void** graph) {
  hipGraph_t g = nullptr;
  Status st = BATON_HIP_STATUS(hipStreamEndCapture, static_cast<hipStream_t>(stream), &g);
  *graph = g;
  return st;
}

// The driver table. No semaphore import: HIP 5.2's hipExternalSemaphoreHandleType has no timeline
// type (only binary OPAQUE_FD and Win32 kinds), so Vulkan timeline semaphores are bridged on HIP
// (docs/architecture.md, 'Vulkan interop: native and bridged'). Memory import where the runtime
// exports it.
stream::DriverTable makeTable() {
  stream::DriverTable t = {
      BackendKind::Hip,
      "HIP",
      getCurrent,
      setCurrent,
      streamCreate,
      streamDestroy,
      streamSynchronize,
      streamWaitEvent,
      eventCreate,
      eventDestroy,
      eventRecord,
      eventQuery,
      eventSynchronize,
      launchHostFunc,
      memcpyAsync,
      memcpyHtoDAsync,
      memsetD32Async,
      memAllocAsync,
      memFreeAsync,
      memAlloc,
      memFree,
      hostAlloc,
      hostFree,
      nullptr,  // importTimelineFd
      nullptr,  // destroyExternalSemaphore
      nullptr,  // signalExternal
      nullptr,  // waitExternal
      nullptr,
      nullptr,
      nullptr,
      // Graphs: set below where the runtime has them.
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      // Host registration and stream memory operations (shared timelines), virtual memory
      // management and IPC memory handles (shared buffers): set below where the runtime has them.
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      // Images: none (HIP 5.2 maps no external memory as arrays).
      nullptr,
      nullptr,
      nullptr,
      nullptr,
  };
  const Symbols& s = symbols();
  if (s.hipGraphCreate && s.hipGraphDestroy && s.hipGraphAddMemcpyNode1D &&
      s.hipGraphAddMemsetNode && s.hipGraphAddHostNode && s.hipGraphAddChildGraphNode &&
      s.hipGraphInstantiateWithFlags && s.hipGraphExecUpdate && s.hipGraphExecDestroy &&
      s.hipGraphLaunch && s.hipStreamBeginCapture && s.hipStreamEndCapture) {
    t.graphCreate = graphCreate;
    t.graphDestroy = graphDestroy;
    t.graphAddMemcpy = graphAddMemcpy;
    t.graphAddMemset32 = graphAddMemset32;
    t.graphAddHost = graphAddHost;
    t.graphAddChild = graphAddChild;
    t.graphInstantiate = graphInstantiate;
    t.graphExecUpdate = graphExecUpdate;
    t.graphExecDestroy = graphExecDestroy;
    t.graphLaunch = graphLaunch;
    t.streamBeginCapture = streamBeginCapture;
    t.streamEndCapture = streamEndCapture;
  }
  if (s.hipHostRegister && s.hipHostUnregister && s.hipStreamWaitValue64 &&
      s.hipStreamWriteValue64) {
    t.hostRegister = hostRegister;
    t.hostUnregister = hostUnregister;
    t.streamWaitValue64 = streamWaitValue64;
    t.streamWriteValue64 = streamWriteValue64;
  }
  if (s.hipIpcGetMemHandle && s.hipIpcOpenMemHandle && s.hipIpcCloseMemHandle) {
    t.ipcGetHandle = ipcGetHandle;
    t.ipcOpenHandle = ipcOpenHandle;
    t.ipcCloseHandle = ipcCloseHandle;
  }
  if (s.hipImportExternalMemory && s.hipExternalMemoryGetMappedBuffer &&
      s.hipDestroyExternalMemory) {
    t.importMemoryFd = importMemoryFd;
    t.mapExternalMemory = mapExternalMemory;
    t.destroyExternalMemory = destroyExternalMemory;
  }
  return t;
}

// Built once, after the runtime loaded; never destroyed before the devices that point at it.
const stream::DriverTable& table() {
  static const stream::DriverTable t = makeTable();
  return t;
}

// ---- devices --------------------------------------------------------------------------------

struct DeviceInfo {
  PhysicalDeviceProperties properties;
  hipMemPool_t pool = nullptr;  // the device's default pool, when it has one
};

// A device attribute, named in the message when the query fails
// ("hipDeviceGetAttribute(hipDeviceAttributeMemoryPoolsSupported) failed: ...").
#define BATON_HIP_ATTRIBUTE(out, ordinal, name)          \
  queryAttribute(out, ordinal, hipDeviceAttribute##name, \
                 "hipDeviceGetAttribute(hipDeviceAttribute" #name ")")
Status queryAttribute(int* value, int ordinal, hipDeviceAttribute_t a, const char* call) {
  *value = 0;
  return toStatus(BATON_HIP(hipDeviceGetAttribute, value, a, ordinal), call);
}

// As on CUDA (cuda_backend.cpp, describe), a failed query fails the description, and with it the
// backend's enumeration (ErrorBackendUnavailable, whose reason names the call and the runtime's
// error), rather than dropping the capability it decides: an engine chooses its code paths by
// capabilities, and a transient error would silently give the same GPU another feature set whose
// cause no later message could name. The same holds for the default memory pool. The attributes
// queried are all in the 5.x runtime this backend is built for; optional ones are queried only
// where the entry points they gate are exported.
Status describe(int ordinal, DeviceInfo* out) {
  const Symbols& s = symbols();
  hipDevice_t dev = 0;
  BATON_TRY(BATON_HIP_STATUS(hipDeviceGet, &dev, ordinal));
  PhysicalDeviceProperties& p = out->properties;
  p.backend = BackendKind::Hip;
  p.ordinal = static_cast<uint32_t>(ordinal);
  BATON_TRY(BATON_HIP_STATUS(hipDeviceGetName, p.name, static_cast<int>(sizeof p.name), dev));
  if (s.hipDeviceGetUuid) {
    hipUUID uuid{};
    BATON_TRY(BATON_HIP_STATUS(hipDeviceGetUuid, &uuid, dev));
    static_assert(sizeof uuid.bytes == sizeof p.uuid);
    std::memcpy(p.uuid, uuid.bytes, sizeof p.uuid);
  }
  size_t total = 0;
  BATON_TRY(BATON_HIP_STATUS(hipDeviceTotalMem, &total, dev));
  p.totalMemory = total;
  // gcnArchName is the architecture AMD's tools name ("gfx90a:sramecc+:xnack-").
  hipDeviceProp_t props{};
  BATON_TRY(BATON_HIP_STATUS(hipGetDeviceProperties, &props, ordinal));
  const size_t archLength = strnlen(props.gcnArchName, sizeof p.arch - 1);
  std::memcpy(p.arch, props.gcnArchName, archLength);
  p.arch[archLength] = '\0';
  int major = 0, minor = 0;
  BATON_TRY(BATON_HIP_ATTRIBUTE(&major, ordinal, ComputeCapabilityMajor));
  BATON_TRY(BATON_HIP_ATTRIBUTE(&minor, ordinal, ComputeCapabilityMinor));
  p.computeMajor = static_cast<uint32_t>(major);
  p.computeMinor = static_cast<uint32_t>(minor);
  p.maxQueues = kMaxQueues;

  uint64_t caps = kCapabilityDeviceMemory | kCapabilityNativeTimepointWaits;
  // Mapped pinned memory needs unified addressing, which every 64-bit Linux HIP platform has
  // (hipDeviceAttributeUnifiedAddressing is documented as CUDA-only).
  int mapHost = 0;
  BATON_TRY(BATON_HIP_ATTRIBUTE(&mapHost, ordinal, CanMapHostMemory));
  if (mapHost) caps |= kCapabilityHostPinnedMemory;
  if (s.hipDeviceGetDefaultMemPool && s.hipMallocFromPoolAsync && s.hipFreeAsync) {
    int pools = 0;
    BATON_TRY(BATON_HIP_ATTRIBUTE(&pools, ordinal, MemoryPoolsSupported));
    if (pools) {
      BATON_TRY(BATON_HIP_STATUS(hipDeviceGetDefaultMemPool, &out->pool, ordinal));
      if (out->pool) caps |= kCapabilityStreamOrderedAlloc;  // a runtime without one: not offered
    }
  }
  if (s.hipStreamWaitValue64 && s.hipStreamWriteValue64) {
    int waitValue = 0;
    BATON_TRY(BATON_HIP_ATTRIBUTE(&waitValue, ordinal, CanUseStreamWaitValue));
    if (waitValue) caps |= kCapabilityStreamMemOps64;
  }
  if (s.hipImportExternalMemory && s.hipExternalMemoryGetMappedBuffer && s.hipDestroyExternalMemory)
    caps |= kCapabilityExternalMemoryOpaqueFd;
  if (table().graphCreate) caps |= kCapabilityGraphCommandBuffers;
  // IPC memory has no device attribute: every device of a runtime that exports the calls has it.
  if (table().ipcGetHandle) caps |= kCapabilityShareableMemory;
  p.capabilities = caps;
  return Status();
}

class HipBackend final : public stream::StreamBackend {
 public:
  BackendKind kind() const override { return BackendKind::Hip; }

  Status load() override {
    const Driver& d = loadDriver();
    if (!d.loadStatus.ok()) return d.loadStatus;
    devices_.clear();
    noDevices_.clear();
    // A runtime that loaded but found no device is not an error: the backend is available with
    // 0 devices, and says why in the runtime's own words.
    if (!d.initStatus.ok()) {
      noDevices_ = d.initStatus.message();
      int count = 0;
      Status st = BATON_HIP_STATUS(hipGetDeviceCount, &count);
      if (!st.ok()) noDevices_ += "; " + st.message();
      return Status();
    }
    int count = 0;
    Status st = BATON_HIP_STATUS(hipGetDeviceCount, &count);
    if (!st.ok()) {
      if (st.code() != Result::ErrorBackendUnavailable)
        return Status(Result::ErrorBackendUnavailable, st.message());
      noDevices_ = st.message();  // hipErrorNoDevice: loaded, no AMD GPU
      return Status();
    }
    for (int i = 0; i < count; ++i) {
      DeviceInfo info;
      st = describe(i, &info);
      if (!st.ok())
        return Status(Result::ErrorBackendUnavailable,
                      core::format("describing HIP device %d: %s", i, st.message().c_str()));
      devices_.push_back(info);
    }
    if (count == 0) noDevices_ = "hipGetDeviceCount reports 0 devices";
    return Status();
  }

  uint32_t deviceCount() const override { return static_cast<uint32_t>(devices_.size()); }

  std::string noDevicesReason() const override { return noDevices_; }

  PhysicalDeviceProperties properties(uint32_t ordinal) const override {
    return devices_.at(ordinal).properties;
  }

  Status createDevice(uint32_t ordinal, core::Device& device,
                      std::unique_ptr<core::DeviceImpl>* out) override {
    const DeviceInfo& info = devices_.at(ordinal);
    stream::DeviceConfig config;
    config.driver = &table();
    config.context = contextOf(static_cast<int>(ordinal));
    config.ordinal = static_cast<int32_t>(ordinal);
    // The device's default pool: HIP 5.2 creates pools with hipMemPoolCreate too, but the default
    // pool is what hipMallocAsync uses, so baton's allocations share its cache with the
    // application's. Its release threshold is left as the application set it.
    config.memoryPool = info.pool;
    // Nothing to release: no context was retained and the default pool is the runtime's.
    config.release = [] {};
    *out = stream::createDevice(device, std::move(config));
    return Status();
  }

 private:
  std::vector<DeviceInfo> devices_;
  std::string noDevices_;
};

}  // namespace
}  // namespace baton::hip

namespace baton::core {
std::unique_ptr<Backend> createHipBackend() { return std::make_unique<hip::HipBackend>(); }
}  // namespace baton::core
