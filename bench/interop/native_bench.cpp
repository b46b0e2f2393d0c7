// The Vulkan <-> CUDA half of baton-interop-bench: a shared timeline between the Vulkan device and
// the CUDA device with the same UUID, through baton (native import, and bridged for comparison) and
// through raw Vulkan + CUDA calls, in one run.
//
//   ping-pong   N rounds, all submitted up front from the host: CUDA submission k waits
//               T >= 2k-2 and signals 2k-1, Vulkan submission k (no command buffer) waits
//               T >= 2k-1 and signals 2k; then a host wait for 2N. Mean µs per round trip, median
//               over runs. baton: a CUDA queue submission with one wait and one signal on the
//               imported timeline. raw: cuWaitExternalSemaphoresAsync +
//               cuSignalExternalSemaphoresAsync on a raw stream, on a second exportable timeline
//               imported with cuImportExternalSemaphore; the host waits with vkWaitSemaphores.
//   host wake   a CUDA submission held by a GPU gate (a kernel spinning on a host-pinned flag)
//               signals v; the host opens the gate once the waiter is asleep; µs from opening to
//               the waiter's return. baton: Semaphore::wait; against vkWaitSemaphores on the
//               same VkSemaphore (milliseconds on the NVIDIA driver: docs/performance.md,
//               'Measured primitives'). Two raw rows: a raw
//               external-semaphore signal seen by vkWaitSemaphores, and the floor (the gate's
//               exit seen by cuEventSynchronize).
//
// Raw CUDA goes through baton's own symbol table (no libcuda link; impl/cuda/cuda_symbols.hpp),
// kernels are PTX (tests/cuda/ptx_kernels.hpp), as in bench/cuda. The ping-pong variants
// alternate within a repetition, so drift hits all of them. Every wait is bounded: a lost signal
// ends the run with a message instead of hanging.
#include <cuda.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "baton/baton.hpp"
#include "baton/vulkan.hpp"
#include "bench_util.hpp"
#include "cuda_symbols.hpp"
#include "ptx_kernels.hpp"
#include "sampler.hpp"  // the process's threads and their CPU clocks

namespace baton::bench {
namespace {

using test::vkStruct;
using test::VulkanContext;

const cuda::Symbols* cu = nullptr;

// Generous: a native round trip takes well under a millisecond (docs/performance.md, 'Measured
// primitives'), a bridged one a few ms at worst.
constexpr uint64_t kPingPongTimeoutNs = 60'000'000'000ull;
constexpr uint64_t kWakeTimeoutNs = 5'000'000'000ull;
// The default mode's round trip / raw native: a target of the CUDA backend's hot path
// (docs/performance.md).
constexpr double kRoundTripTarget = 0.5;

void batonOk(Result r, const char* what) {
  if (r != Result::Success) fatal(what, lastErrorMessage());
}
void cuOk(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) fatal(what, cuda::resultName(r).c_str());
}
void vkOk(VkResult r, const char* what) {
  if (r != VK_SUCCESS) fatal(what, ("VkResult " + std::to_string(r)).c_str());
}

// A wait that must succeed in time; on failure, what each side had reached.
void waitBaton(Semaphore s, uint64_t value, uint64_t timeoutNs, const char* what) {
  Result r = s.wait(value, timeoutNs);
  if (r == Result::Success) return;
  uint64_t reached = 0;
  (void)s.getValue(&reached);
  char detail[640];
  std::snprintf(detail, sizeof detail, "waiting for %llu: %s (baton reads %llu) %s",
                static_cast<unsigned long long>(value), resultName(r),
                static_cast<unsigned long long>(reached),
                r == Result::Timeout ? "" : lastErrorMessage());
  fatal(what, detail);
}
void waitVulkan(VulkanContext& vk, VkSemaphore s, uint64_t value, uint64_t timeoutNs,
                const char* what) {
  VkResult r = vk.wait(s, value, timeoutNs);
  if (r == VK_SUCCESS) return;
  char detail[256];
  std::snprintf(detail, sizeof detail, "vkWaitSemaphores for %llu: VkResult %d (Vulkan reads %llu)",
                static_cast<unsigned long long>(value), r,
                static_cast<unsigned long long>(vk.value(s)));
  fatal(what, detail);
}

// CPU time of the whole process (every thread: baton's issuing, completion and watcher threads,
// the driver's), in µs.
double cpuUs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

// ---- the environment ----------------------------------------------------------------------

struct Env {
  Instance instance;
  Device device;
  Queue queue;
  PhysicalDeviceProperties props;
  CUdevice cuDevice = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction waitFlag = nullptr;
  CUstream stream = nullptr;        // raw
  CUevent event = nullptr;          // raw
  CUevent blockingEvent = nullptr;  // raw, CU_EVENT_BLOCKING_SYNC: a waiter sleeps in the driver
  Buffer gateBuffer;
  uint32_t* gateFlag = nullptr;
  uint64_t gateAddress = 0;
  CommandBuffer gate;  // baton: the gate kernel, through native()
};

void closeGate(Env& e) { __atomic_store_n(e.gateFlag, 0u, __ATOMIC_SEQ_CST); }
void openGate(Env& e) { __atomic_store_n(e.gateFlag, 1u, __ATOMIC_SEQ_CST); }

CUresult launchGate(Env& e, CUstream stream) {
  void* params[] = {&e.gateAddress};
  return cu->cuLaunchKernel(e.waitFlag, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr);
}
Result gateNative(const NativeQueue& q, void* user) {
  return launchGate(*static_cast<Env*>(user), static_cast<CUstream>(q.stream)) == CUDA_SUCCESS
             ? Result::Success
             : Result::ErrorDriver;
}

// Why the Vulkan device cannot share a timeline with CUDA natively, or "".
std::string vulkanSkipReason(VulkanContext& vk) {
  VulkanInteropSupport support;
  if (queryVulkanInterop(vk.view(), Device(), &support) != Result::Success)
    return std::string("queryVulkanInterop failed: ") + lastErrorMessage();
  if (!(support.vulkanSemaphoreExportTypes & VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT))
    return "the Vulkan device " + vk.name + " cannot export timeline semaphores as OPAQUE_FD (" +
           (support.vulkanExternalSemaphoreFd
                ? "VK_KHR_external_semaphore_fd is offered, but not for timelines)"
                : "no VK_KHR_external_semaphore_fd)");
  // VulkanContext enables the extension wherever it is offered; this catches a context that
  // did not.
  if (!vkGetDeviceProcAddr(vk.device, "vkGetSemaphoreFdKHR"))
    return "VK_KHR_external_semaphore_fd is not enabled on the VkDevice of " + vk.name;
  return "";
}

// Sets up the CUDA side: the baton device that is the Vulkan device, the raw context, stream,
// kernel and gate. Returns why it cannot, or "" (CUDA failures after that point are fatal).
std::string setupCuda(VulkanContext& vk, Env& e) {
  InstanceCreateInfo ii;
  ii.backendMask = backendBit(BackendKind::Cuda);
  if (createInstance(ii, &e.instance) != Result::Success)
    return std::string("createInstance: ") + lastErrorMessage();
  uint32_t count = 0;
  batonOk(e.instance.enumerateBackends(&count, nullptr), "enumerateBackends");
  std::vector<BackendInfo> backends(count);
  batonOk(e.instance.enumerateBackends(&count, backends.data()), "enumerateBackends");
  for (const BackendInfo& b : backends)
    if (b.kind == BackendKind::Cuda && !b.available)
      return std::string("the CUDA backend is unavailable: ") + b.reason;
  PhysicalDevice physical;
  if (matchVulkanPhysicalDevice(e.instance, vk.view(), &physical) != Result::Success)
    return std::string("no CUDA device is the Vulkan device: ") + lastErrorMessage();
  batonOk(physical.getProperties(&e.props), "PhysicalDevice::getProperties");

  cu = &cuda::symbols();
  if (!cu->cuImportExternalSemaphore || !cu->cuDestroyExternalSemaphore ||
      !cu->cuSignalExternalSemaphoresAsync || !cu->cuWaitExternalSemaphoresAsync ||
      !cu->cuModuleLoadData || !cu->cuModuleUnload || !cu->cuModuleGetFunction ||
      !cu->cuLaunchKernel)
    return "the CUDA driver lacks the external semaphore or module entry points";

  batonOk(e.instance.createDevice(physical, DeviceCreateInfo{}, &e.device), "createDevice");
  batonOk(e.device.getQueue(0, &e.queue), "getQueue");
  cuOk(cu->cuDeviceGet(&e.cuDevice, static_cast<int>(e.props.ordinal)), "cuDeviceGet");
  cuOk(cu->cuDevicePrimaryCtxRetain(&e.ctx, e.cuDevice), "cuDevicePrimaryCtxRetain");
  cuOk(cu->cuCtxSetCurrent(e.ctx), "cuCtxSetCurrent");
  cuOk(cu->cuModuleLoadData(&e.module, baton_test::kPtxKernels), "cuModuleLoadData");
  cuOk(cu->cuModuleGetFunction(&e.waitFlag, e.module, "baton_wait_flag"), "cuModuleGetFunction");
  cuOk(cu->cuStreamCreate(&e.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  cuOk(cu->cuEventCreate(&e.event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  cuOk(cu->cuEventCreate(&e.blockingEvent, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC),
       "cuEventCreate (blocking sync)");

  BufferCreateInfo gate;
  gate.size = 4;
  gate.memory = MemoryKind::HostPinned;
  batonOk(e.device.createBuffer(gate, &e.gateBuffer), "createBuffer (gate)");
  void* host = nullptr;
  batonOk(e.gateBuffer.map(&host), "Buffer::map (gate)");
  e.gateFlag = static_cast<uint32_t*>(host);
  batonOk(e.gateBuffer.getDeviceAddress(&e.gateAddress), "Buffer::getDeviceAddress (gate)");
  closeGate(e);
  batonOk(e.device.createCommandBuffer(&e.gate), "createCommandBuffer");
  batonOk(e.gate.begin(), "CommandBuffer::begin");
  batonOk(e.gate.native(gateNative, &e), "CommandBuffer::native");
  batonOk(e.gate.end(), "CommandBuffer::end");
  return "";
}

void teardown(Env& e) {
  if (e.device) (void)e.device.waitIdle(kWakeTimeoutNs);
  if (e.stream) (void)cu->cuStreamSynchronize(e.stream);
  if (e.gate) (void)e.gate.destroy();
  if (e.gateBuffer) (void)e.gateBuffer.destroy();
  if (e.device) (void)e.device.destroy();
  if (e.instance) (void)e.instance.destroy();
  if (e.event) (void)cu->cuEventDestroy(e.event);
  if (e.blockingEvent) (void)cu->cuEventDestroy(e.blockingEvent);
  if (e.stream) (void)cu->cuStreamDestroy(e.stream);
  if (e.module) (void)cu->cuModuleUnload(e.module);
  if (e.ctx) (void)cu->cuDevicePrimaryCtxRelease(e.cuDevice);
}

// ---- the raw timeline: exportable VkSemaphore, its OPAQUE_FD imported into CUDA ---------------

struct RawTimeline {
  VkSemaphore vk = VK_NULL_HANDLE;
  CUexternalSemaphore ext = nullptr;
  uint64_t value = 0;  // reached, between runs
};

RawTimeline createRawTimeline(VulkanContext& vk) {
  auto getFd = reinterpret_cast<PFN_vkGetSemaphoreFdKHR>(
      vkGetDeviceProcAddr(vk.device, "vkGetSemaphoreFdKHR"));
  auto exportInfo =
      vkStruct<VkExportSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO);
  exportInfo.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  auto type = vkStruct<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                                  &exportInfo);
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  auto info = vkStruct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type);
  RawTimeline t;
  vkOk(vkCreateSemaphore(vk.device, &info, nullptr, &t.vk), "vkCreateSemaphore (exportable)");
  auto fdInfo = vkStruct<VkSemaphoreGetFdInfoKHR>(VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR);
  fdInfo.semaphore = t.vk;
  fdInfo.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  int fd = -1;
  vkOk(getFd(vk.device, &fdInfo, &fd), "vkGetSemaphoreFdKHR");
  CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
  desc.handle.fd = fd;
  CUresult r = cu->cuImportExternalSemaphore(&t.ext, &desc);
  if (r != CUDA_SUCCESS) close(fd);  // CUDA owns the fd only after a successful import
  cuOk(r, "cuImportExternalSemaphore (timeline fd)");
  return t;
}

void destroy(VulkanContext& vk, RawTimeline& t) {
  if (t.ext) (void)cu->cuDestroyExternalSemaphore(t.ext);
  if (t.vk) vk.destroy(t.vk);
  t = RawTimeline();
}

CUresult rawWait(Env& e, const RawTimeline& t, uint64_t value) {
  CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS p{};
  p.params.fence.value = value;
  return cu->cuWaitExternalSemaphoresAsync(&t.ext, &p, 1, e.stream);
}
CUresult rawSignal(Env& e, const RawTimeline& t, uint64_t value) {
  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS p{};
  p.params.fence.value = value;
  return cu->cuSignalExternalSemaphoresAsync(&t.ext, &p, 1, e.stream);
}

// A baton timeline shared with Vulkan, and the value it has reached between runs.
struct Shared {
  VulkanTimeline t;
  uint64_t value = 0;
  bool ok = false;
};

// ---- ping-pong ------------------------------------------------------------------------------

// One run of `rounds` round trips through baton; returns µs per round trip.
double pingPongBaton(Env& e, VulkanContext& vk, Shared& s, uint32_t rounds) {
  const uint64_t b = s.value;
  Clock::time_point t0 = Clock::now();
  for (uint64_t k = 1; k <= rounds; ++k) {
    SemaphoreValue wait{s.t.baton, b + 2 * k - 2}, signal{s.t.baton, b + 2 * k - 1};
    SubmitInfo info;
    info.waits = Span<const SemaphoreValue>(&wait, 1);
    info.signals = Span<const SemaphoreValue>(&signal, 1);
    batonOk(e.queue.submit(info), "Queue::submit (ping-pong, CUDA side)");
    vkOk(vk.submit({{s.t.vulkan, b + 2 * k - 1}}, VK_NULL_HANDLE, {{s.t.vulkan, b + 2 * k}}),
         "vkQueueSubmit (ping-pong, Vulkan side)");
  }
  waitBaton(s.t.baton, b + 2 * rounds, kPingPongTimeoutNs, "ping-pong through baton");
  double us = usBetween(t0, Clock::now()) / rounds;
  s.value = b + 2 * rounds;
  vkOk(vkQueueWaitIdle(vk.queue), "vkQueueWaitIdle");
  batonOk(e.queue.waitIdle(kPingPongTimeoutNs), "Queue::waitIdle");
  return us;
}

// The same graph with raw calls.
double pingPongRaw(Env& e, VulkanContext& vk, RawTimeline& t, uint32_t rounds) {
  const uint64_t b = t.value;
  Clock::time_point t0 = Clock::now();
  for (uint64_t k = 1; k <= rounds; ++k) {
    cuOk(rawWait(e, t, b + 2 * k - 2), "cuWaitExternalSemaphoresAsync");
    cuOk(rawSignal(e, t, b + 2 * k - 1), "cuSignalExternalSemaphoresAsync");
    vkOk(vk.submit({{t.vk, b + 2 * k - 1}}, VK_NULL_HANDLE, {{t.vk, b + 2 * k}}),
         "vkQueueSubmit (raw ping-pong)");
  }
  waitVulkan(vk, t.vk, b + 2 * rounds, kPingPongTimeoutNs, "raw ping-pong");
  double us = usBetween(t0, Clock::now()) / rounds;
  t.value = b + 2 * rounds;
  vkOk(vkQueueWaitIdle(vk.queue), "vkQueueWaitIdle");
  cuOk(cu->cuStreamSynchronize(e.stream), "cuStreamSynchronize");
  return us;
}

// ---- host wake ------------------------------------------------------------------------------

// baton: a CUDA submission held by the gate signals v of `s`; `vulkanWaiter` picks whether the
// host waits with Semaphore::wait or with vkWaitSemaphores on the VkSemaphore.
std::vector<double> wakeBaton(Env& e, VulkanContext& vk, Shared& s, uint32_t samples,
                              bool vulkanWaiter) {
  auto arm = [&](uint64_t v) {
    closeGate(e);
    SemaphoreValue signal{s.t.baton, v};
    SubmitInfo info;
    info.commandBuffers = Span<const CommandBuffer>(&e.gate, 1);
    info.signals = Span<const SemaphoreValue>(&signal, 1);
    batonOk(e.queue.submit(info), "Queue::submit (gated signal)");
  };
  auto open = [&](uint64_t) { openGate(e); };
  std::vector<double> out;
  if (vulkanWaiter)
    out = oneWay(
        samples, s.value,
        [&](uint64_t v) {
          waitVulkan(vk, s.t.vulkan, v, kWakeTimeoutNs, "host wake (vkWaitSemaphores)");
        },
        arm, open);
  else
    out = oneWay(
        samples, s.value,
        [&](uint64_t v) { waitBaton(s.t.baton, v, kWakeTimeoutNs, "host wake (baton)"); }, arm,
        open);
  s.value += samples;
  batonOk(e.queue.waitIdle(kWakeTimeoutNs), "Queue::waitIdle");
  return out;
}

// raw: the gate kernel on the raw stream, then an external-semaphore signal of the raw timeline
// seen by vkWaitSemaphores, or (t null) an event seen by cuEventSynchronize: a plain event, on
// which the waiter spins (the context's default scheduling on this machine), or with `blocking`
// a CU_EVENT_BLOCKING_SYNC one, on which it sleeps in the driver until the GPU's interrupt: the
// floor of a waiter that does not spin.
std::vector<double> wakeRaw(Env& e, VulkanContext& vk, RawTimeline* t, uint32_t samples,
                            bool blocking = false) {
  CUevent event = blocking ? e.blockingEvent : e.event;
  auto arm = [&](uint64_t v) {
    closeGate(e);
    cuOk(launchGate(e, e.stream), "cuLaunchKernel (gate)");
    if (t)
      cuOk(rawSignal(e, *t, v), "cuSignalExternalSemaphoresAsync");
    else
      cuOk(cu->cuEventRecord(event, e.stream), "cuEventRecord");
  };
  auto open = [&](uint64_t) { openGate(e); };
  std::vector<double> out;
  if (t) {
    out = oneWay(
        samples, t->value,
        [&](uint64_t v) {
          waitVulkan(vk, t->vk, v, kWakeTimeoutNs, "raw host wake (vkWaitSemaphores)");
        },
        arm, open);
    t->value += samples;
  } else {
    out = oneWay(
        samples, 0,
        [&](uint64_t) {
          cuOk(cu->cuCtxSetCurrent(e.ctx), "cuCtxSetCurrent");  // the waiter's own thread
          cuOk(cu->cuEventSynchronize(event), "cuEventSynchronize");
        },
        arm, open);
  }
  cuOk(cu->cuStreamSynchronize(e.stream), "cuStreamSynchronize");
  return out;
}

// raw: the gate kernel, then a host function (cuLaunchHostFunc) that wakes a waiter asleep on a
// condition variable: how soon the driver's callback thread runs after the GPU passes it, i.e.
// the floor of waking a sleeping host thread through a host function instead of an interrupt
// (CU_EVENT_BLOCKING_SYNC above).
struct HostFunctionWake {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
};
void CUDA_CB hostFunctionWake(void* user) {
  auto* w = static_cast<HostFunctionWake*>(user);
  {
    std::lock_guard<std::mutex> lock(w->mutex);
    w->done = true;
  }
  w->cv.notify_one();
}
std::vector<double> wakeRawHostFunction(Env& e, VulkanContext&, uint32_t samples) {
  HostFunctionWake w;
  auto arm = [&](uint64_t) {
    closeGate(e);
    cuOk(launchGate(e, e.stream), "cuLaunchKernel (gate)");
    cuOk(cu->cuLaunchHostFunc(e.stream, hostFunctionWake, &w), "cuLaunchHostFunc");
  };
  auto open = [&](uint64_t) { openGate(e); };
  std::vector<double> out = oneWay(
      samples, 0,
      [&](uint64_t) {
        std::unique_lock<std::mutex> lock(w.mutex);
        w.cv.wait(lock, [&] { return w.done; });
        w.done = false;
      },
      arm, open);
  cuOk(cu->cuStreamSynchronize(e.stream), "cuStreamSynchronize");
  return out;
}

// ---- one direction at a time --------------------------------------------------------------------

// Each sample arms the receiving side first (its wait for value v is enqueued and issued), then
// takes t0, makes the sending side signal v and spins (no sleep: the path's latency, not a
// wake-up's) until the receiver's work after the wait has run. Medians in µs.

// What a baton CUDA submission runs after its wait: an event recorded on its stream (and a flag
// saying the callback ran, i.e. that the submission was issued).
struct Marker {
  Env* e;
  std::atomic<int> issued{0};
};
Result recordMarker(const NativeQueue& q, void* user) {
  auto* m = static_cast<Marker*>(user);
  CUresult r = cu->cuEventRecord(m->e->event, static_cast<CUstream>(q.stream));
  m->issued.fetch_add(1, std::memory_order_release);
  return r == CUDA_SUCCESS ? Result::Success : Result::ErrorDriver;
}

void spinOnEvent(CUevent event, const char* what) {
  const Clock::time_point start = Clock::now();
  for (;;) {
    CUresult r = cu->cuEventQuery(event);
    if (r == CUDA_SUCCESS) return;
    if (r != CUDA_ERROR_NOT_READY) cuOk(r, what);
    if (usBetween(start, Clock::now()) > kWakeTimeoutNs / 1000.0) fatal(what, "timed out");
  }
}
void spinOnVulkan(VulkanContext& vk, VkSemaphore s, uint64_t value, const char* what) {
  const Clock::time_point start = Clock::now();
  while (vk.value(s) < value)
    if (usBetween(start, Clock::now()) > kWakeTimeoutNs / 1000.0) fatal(what, "timed out");
}

// Vulkan signals v (a queue submission, or vkSignalSemaphore from the host); a CUDA stream waits
// for it. raw: cuWaitExternalSemaphoresAsync + an event; baton: a submission on the shared
// timeline whose native callback records the event after the wait.
std::vector<double> vulkanToCudaRaw(Env& e, VulkanContext& vk, RawTimeline& t, uint32_t samples,
                                    bool hostSignal) {
  std::vector<double> out;
  for (uint32_t i = 0; i < samples; ++i) {
    const uint64_t v = ++t.value;
    cuOk(rawWait(e, t, v), "cuWaitExternalSemaphoresAsync");
    cuOk(cu->cuEventRecord(e.event, e.stream), "cuEventRecord");
    const Clock::time_point t0 = Clock::now();
    if (hostSignal)
      vkOk(vk.signal(t.vk, v), "vkSignalSemaphore");
    else
      vkOk(vk.submit({}, VK_NULL_HANDLE, {{t.vk, v}}), "vkQueueSubmit (signal)");
    spinOnEvent(e.event, "raw Vulkan -> CUDA");
    out.push_back(usBetween(t0, Clock::now()));
  }
  vkOk(vkQueueWaitIdle(vk.queue), "vkQueueWaitIdle");
  return out;
}
std::vector<double> vulkanToCudaBaton(Env& e, VulkanContext& vk, Shared& s, uint32_t samples,
                                      bool hostSignal) {
  Marker marker{&e};
  CommandBuffer cb;
  batonOk(e.device.createCommandBuffer(&cb), "createCommandBuffer");
  batonOk(cb.begin(), "begin");
  batonOk(cb.native(recordMarker, &marker), "native");
  batonOk(cb.end(), "end");
  std::vector<double> out;
  for (uint32_t i = 0; i < samples; ++i) {
    const uint64_t v = ++s.value;
    SemaphoreValue wait{s.t.baton, v};
    SubmitInfo info;
    info.waits = Span<const SemaphoreValue>(&wait, 1);
    info.commandBuffers = Span<const CommandBuffer>(&cb, 1);
    const int issuedBefore = marker.issued.load(std::memory_order_acquire);
    batonOk(e.queue.submit(info), "Queue::submit (waits for Vulkan)");
    // Native: issued at once (a GPU-side wait on the imported semaphore); give the issuing
    // thread its time. Bridged: held until baton sees Vulkan's value.
    if (s.t.mode == InteropMode::Native)
      while (marker.issued.load(std::memory_order_acquire) == issuedBefore) {
      }
    const Clock::time_point t0 = Clock::now();
    if (hostSignal)
      vkOk(vk.signal(s.t.vulkan, v), "vkSignalSemaphore");
    else
      vkOk(vk.submit({}, VK_NULL_HANDLE, {{s.t.vulkan, v}}), "vkQueueSubmit (signal)");
    while (marker.issued.load(std::memory_order_acquire) == issuedBefore) {
    }
    spinOnEvent(e.event, "baton Vulkan -> CUDA");
    out.push_back(usBetween(t0, Clock::now()));
  }
  vkOk(vkQueueWaitIdle(vk.queue), "vkQueueWaitIdle");
  batonOk(e.queue.waitIdle(kWakeTimeoutNs), "Queue::waitIdle");
  (void)cb.destroy();
  return out;
}

// CUDA signals v; a Vulkan queue submission waits for it and signals a Vulkan-only timeline,
// which the host reads. raw: cuSignalExternalSemaphoresAsync on an idle stream; baton: a
// submission signalling the shared timeline.
std::vector<double> cudaToVulkanRaw(Env& e, VulkanContext& vk, RawTimeline& t, VkSemaphore after,
                                    uint64_t* afterValue, uint32_t samples) {
  std::vector<double> out;
  for (uint32_t i = 0; i < samples; ++i) {
    const uint64_t v = ++t.value, u = ++*afterValue;
    vkOk(vk.submit({{t.vk, v}}, VK_NULL_HANDLE, {{after, u}}), "vkQueueSubmit (wait)");
    const Clock::time_point t0 = Clock::now();
    cuOk(rawSignal(e, t, v), "cuSignalExternalSemaphoresAsync");
    spinOnVulkan(vk, after, u, "raw CUDA -> Vulkan");
    out.push_back(usBetween(t0, Clock::now()));
  }
  cuOk(cu->cuStreamSynchronize(e.stream), "cuStreamSynchronize");
  return out;
}
std::vector<double> cudaToVulkanBaton(Env& e, VulkanContext& vk, Shared& s, VkSemaphore after,
                                      uint64_t* afterValue, uint32_t samples) {
  std::vector<double> out;
  for (uint32_t i = 0; i < samples; ++i) {
    const uint64_t v = ++s.value, u = ++*afterValue;
    vkOk(vk.submit({{s.t.vulkan, v}}, VK_NULL_HANDLE, {{after, u}}), "vkQueueSubmit (wait)");
    SemaphoreValue signal{s.t.baton, v};
    SubmitInfo info;
    info.signals = Span<const SemaphoreValue>(&signal, 1);
    const Clock::time_point t0 = Clock::now();
    batonOk(e.queue.submit(info), "Queue::submit (signals for Vulkan)");
    spinOnVulkan(vk, after, u, "baton CUDA -> Vulkan");
    out.push_back(usBetween(t0, Clock::now()));
  }
  batonOk(e.queue.waitIdle(kWakeTimeoutNs), "Queue::waitIdle");
  return out;
}

// ---- output ---------------------------------------------------------------------------------

constexpr double kNone = NAN;  // a figure this run could not take

void header() {
  std::printf("  %-42s %10s %10s %8s  %s\n", "figure (us)", "baton", "raw", "ratio", "raw is");
}
void row(const char* name, double baton, double raw, const char* note) {
  char b[32] = "-", r[32] = "-", q[32] = "-";
  if (!std::isnan(baton)) std::snprintf(b, sizeof b, "%.1f", baton);
  if (!std::isnan(raw)) std::snprintf(r, sizeof r, "%.1f", raw);
  if (!std::isnan(baton) && !std::isnan(raw) && raw > 0)
    std::snprintf(q, sizeof q, "%.2fx", baton / raw);
  std::printf("  %-42s %10s %10s %8s  %s\n", name, b, r, q, note);
}

}  // namespace

void runCuda(VulkanContext& vk, const Options& options) {
  // Every reason at once, so that one line says all that is missing.
  std::string why = vulkanSkipReason(vk);
  Env e;
  std::string cudaWhy = setupCuda(vk, e);
  if (!cudaWhy.empty()) why += (why.empty() ? "" : "; ") + cudaWhy;
  if (!why.empty()) {
    std::printf("native: skipped: %s\n", why.c_str());
    if (cudaWhy.empty())
      teardown(e);
    else if (e.instance)
      (void)e.instance.destroy();
    return;
  }

  // The shared timelines: native (may be refused until the backend provides it) and bridged.
  Shared native, bridged;
  std::string nativeWhy;
  VulkanTimelineCreateInfo ti;
  ti.vulkan = vk.view();
  ti.device = e.device;
  ti.mode = InteropModeRequest::Native;
  ti.debugName = "bench-native";
  Result r = createVulkanTimeline(e.instance, ti, &native.t);
  if (r != Result::Success) {
    nativeWhy = std::string("createVulkanTimeline(mode Native) returned ") + resultName(r) + ": " +
                lastErrorMessage();
  } else if (native.t.mode != InteropMode::Native) {
    nativeWhy = "createVulkanTimeline(mode Native) returned a bridged timeline";
    (void)destroyVulkanTimeline(vk.view(), native.t);
  } else {
    native.ok = true;
  }
  ti.mode = InteropModeRequest::Bridged;
  ti.debugName = "bench-bridged";
  batonOk(createVulkanTimeline(e.instance, ti, &bridged.t), "createVulkanTimeline (Bridged)");
  bridged.ok = true;
  RawTimeline raw = createRawTimeline(vk);

  char uuid[40];
  for (int i = 0; i < 16; ++i) std::snprintf(uuid + 2 * i, 3, "%02x", e.props.uuid[i]);
  std::printf("\nVulkan <-> CUDA: Vulkan %s = CUDA device %u %s (UUID %s)\n", vk.name.c_str(),
              e.props.ordinal, e.props.name, uuid);
  std::printf(
      "  ping-pong: %u rounds per run, mean per round trip, median of %u runs; host wake: "
      "median of %u samples\n",
      options.pingPongRounds, options.reps, options.wakeSamples);
  if (!nativeWhy.empty()) std::printf("native: skipped: %s\n", nativeWhy.c_str());
  header();

  // Warm-up (module loads, first submissions, watcher threads), not counted.
  if (native.ok) (void)pingPongBaton(e, vk, native, 10);
  (void)pingPongRaw(e, vk, raw, 10);
  (void)pingPongBaton(e, vk, bridged, 10);
  std::vector<double> ppNative, ppRaw, ppBridged;
  // Process CPU per round trip, summed over the runs: whether a design spins while it waits.
  double cpuNative = 0, cpuRaw = 0, cpuBridged = 0;
  std::map<double*, sampler::ThreadCpu> threadCpu;  // by variant
  auto timedCpu = [&](double* sum, auto&& run) {
    sampler::ThreadCpu& byThread = threadCpu[sum];
    byThread.begin();
    const double c0 = cpuUs();
    const double us = run();
    *sum += cpuUs() - c0;
    byThread.end();
    return us;
  };
  for (uint32_t rep = 0; rep < options.reps; ++rep) {
    if (native.ok)
      ppNative.push_back(timedCpu(
          &cpuNative, [&] { return pingPongBaton(e, vk, native, options.pingPongRounds); }));
    ppRaw.push_back(
        timedCpu(&cpuRaw, [&] { return pingPongRaw(e, vk, raw, options.pingPongRounds); }));
    ppBridged.push_back(timedCpu(
        &cpuBridged, [&] { return pingPongBaton(e, vk, bridged, options.pingPongRounds); }));
  }
  double pn = native.ok ? median(ppNative) : kNone, pr = median(ppRaw), pb = median(ppBridged);
  row("ping-pong vk <-> CUDA queue, native", pn, pr,
      "raw: vkQueueSubmit + cu{Wait,Signal}ExternalSemaphoresAsync, one imported timeline");
  row("ping-pong vk <-> CUDA queue, bridged", pb, pr,
      "the raw ping-pong above (ratio: the host hop)");
  const double trips = static_cast<double>(options.reps) * options.pingPongRounds;
  // The raw ping-pong runs while the baton imports above exist: their watcher threads
  // ("baton-bridge", waiting in vkWaitSemaphores, which uses CPU on the NVIDIA driver) and
  // baton's idle queues are not raw's cost.
  const sampler::ThreadCpu& rawThreads = threadCpu[&cpuRaw];
  const double rawOwn = cpuRaw - (rawThreads.ns("baton-") - rawThreads.ns("baton-interop")) / 1e3;
  row("  process CPU per round trip, native", native.ok ? cpuNative / trips : kNone, rawOwn / trips,
      "CPU time of all threads / round trips (raw: without baton's threads)");
  row("  process CPU per round trip, bridged", cpuBridged / trips, rawOwn / trips,
      "the same; a thread spinning through a round trip would show its wall time");
  for (auto [sum, name] : {std::pair<double*, const char*>{&cpuNative, "native"},
                           {&cpuBridged, "bridged"},
                           {&cpuRaw, "raw"}})
    if (threadCpu.count(sum))
      std::printf("    by thread, %s (us per round trip): %s\n", name,
                  threadCpu[sum].text(trips).c_str());

  double wn = kNone, wnVk = kNone;
  if (native.ok) {
    wn = median(wakeBaton(e, vk, native, options.wakeSamples, false));
    wnVk = median(wakeBaton(e, vk, native, options.wakeSamples, true));
  }
  row("host wake on CUDA signal, native", wn, wnVk, "vkWaitSemaphores on the same VkSemaphore");
  double wr = median(wakeRaw(e, vk, &raw, options.wakeSamples));
  row("  raw: CUDA ext signal -> vkWaitSemaphores", kNone, wr,
      "a raw stream signalling the raw timeline");
  double c0 = cpuUs();
  double floor = median(wakeRaw(e, vk, nullptr, options.wakeSamples));
  const double floorCpu = (cpuUs() - c0) / options.wakeSamples;
  row("  raw: CUDA event -> cuEventSynchronize", kNone, floor,
      "the floor: the gate's exit + an event (the waiter spins)");
  c0 = cpuUs();
  double sleepFloor = median(wakeRaw(e, vk, nullptr, options.wakeSamples, true));
  const double sleepFloorCpu = (cpuUs() - c0) / options.wakeSamples;
  row("  raw: blocking-sync event -> cuEventSync.", kNone, sleepFloor,
      "the floor of a waiter that sleeps (CU_EVENT_BLOCKING_SYNC: the GPU's interrupt)");
  double hostFunctionCpu = kNone, hostFunction = kNone;
  if (cu->cuLaunchHostFunc) {
    c0 = cpuUs();
    hostFunction = median(wakeRawHostFunction(e, vk, options.wakeSamples));
    hostFunctionCpu = (cpuUs() - c0) / options.wakeSamples;
  }
  row("  raw: host function -> sleeping waiter", kNone, hostFunction,
      "cuLaunchHostFunc behind the gate notifies a condition variable");
  c0 = cpuUs();
  double wb = median(wakeBaton(e, vk, bridged, options.wakeSamples, false));
  const double wbCpu = (cpuUs() - c0) / options.wakeSamples;
  double wbVk = median(wakeBaton(e, vk, bridged, options.wakeSamples, true));
  row("host wake on CUDA signal, bridged", wb, wbVk, "vkWaitSemaphores on the same VkSemaphore");
  // The same waits told to spin for as long as they last (Device::setHostWaitSpin), as raw's
  // cuEventSynchronize does under the context's default scheduling: the spinning floor's peer.
  batonOk(e.device.setHostWaitSpin(baton::kHostWaitSpinForever), "Device::setHostWaitSpin");
  double wsn = kNone;
  if (native.ok) wsn = median(wakeBaton(e, vk, native, options.wakeSamples, false));
  c0 = cpuUs();
  const double wsb = median(wakeBaton(e, vk, bridged, options.wakeSamples, false));
  const double wsbCpu = (cpuUs() - c0) / options.wakeSamples;
  batonOk(e.device.setHostWaitSpin(baton::kHostWaitSpinDefaultNs), "Device::setHostWaitSpin");
  row("host wake, spinning waiter, native", wsn, floor,
      "setHostWaitSpin(kHostWaitSpinForever); raw: CUDA event -> cuEventSynchronize");
  row("host wake, spinning waiter, bridged", wsb, floor,
      "setHostWaitSpin(kHostWaitSpinForever); raw: CUDA event -> cuEventSynchronize");
  std::printf(
      "  process CPU per host-wake sample (each waits ~%lld us before the gate opens): baton "
      "bridged %.1f us, baton bridged spinning %.1f us, raw spinning %.1f us, raw blocking-sync "
      "%.1f us, raw host function %.1f us\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::microseconds>(kSettle).count()),
      wbCpu, wsbCpu, floorCpu, sleepFloorCpu, hostFunctionCpu);

  // One direction at a time, GPU waiters (the host only spins to see the end).
  {
    const uint32_t n = options.wakeSamples;
    VkSemaphore after = vk.createTimeline();
    uint64_t afterValue = 0;
    const double rawVq = median(vulkanToCudaRaw(e, vk, raw, n, false));
    const double rawVh = median(vulkanToCudaRaw(e, vk, raw, n, true));
    const double rawCv = median(cudaToVulkanRaw(e, vk, raw, after, &afterValue, n));
    for (Shared* sh : {&native, &bridged}) {
      if (!sh->ok) continue;
      const bool nat = sh == &native;
      std::string name =
          std::string("vk queue signal -> CUDA queue, ") + (nat ? "native" : "bridged");
      row(name.c_str(), median(vulkanToCudaBaton(e, vk, *sh, n, false)), rawVq,
          "raw: vkQueueSubmit signal -> cuWaitExternalSemaphoresAsync -> event");
      name = std::string("vk host signal -> CUDA queue, ") + (nat ? "native" : "bridged");
      row(name.c_str(), median(vulkanToCudaBaton(e, vk, *sh, n, true)), rawVh,
          "raw: vkSignalSemaphore -> cuWaitExternalSemaphoresAsync -> event");
      name = std::string("CUDA signal -> vk queue, ") + (nat ? "native" : "bridged");
      row(name.c_str(), median(cudaToVulkanBaton(e, vk, *sh, after, &afterValue, n)), rawCv,
          "raw: cuSignalExternalSemaphoresAsync -> vk queue wait -> signal seen by the host");
    }
    vkOk(vkQueueWaitIdle(vk.queue), "vkQueueWaitIdle");
    vk.destroy(after);
  }

  // The targets of the CUDA backend's hot path (docs/performance.md), for the default mode (Auto
  // bridges semaphores: baton/vulkan.hpp).
  {
    const double ratio = pb / pr;
    std::printf(
        "targets (default mode, bridged): round trip / raw native %.2fx <= %.2fx: %s; host wake "
        "of a spinning waiter %.1f us <= 4x the spinning floor (%.1f us): %s; a sleeping waiter "
        "%.1f us against the sleeping floor %.1f us (%.2fx)\n",
        ratio, kRoundTripTarget, ratio <= kRoundTripTarget ? "met" : "NOT MET", wsb, 4 * floor,
        wsb <= 4 * floor ? "met" : "NOT MET", wb, sleepFloor, wb / sleepFloor);
  }
  vkOk(vkQueueWaitIdle(vk.queue), "vkQueueWaitIdle");
  batonOk(e.device.waitIdle(kWakeTimeoutNs), "Device::waitIdle");
  cuOk(cu->cuStreamSynchronize(e.stream), "cuStreamSynchronize");
  if (native.ok) (void)destroyVulkanTimeline(vk.view(), native.t);
  (void)destroyVulkanTimeline(vk.view(), bridged.t);
  destroy(vk, raw);
  teardown(e);
}

}  // namespace baton::bench
