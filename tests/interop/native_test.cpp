// Vulkan interop tests (docs/guide.md, 'Vulkan interop'), native mode: a CUDA device and the Vulkan
// device of the same GPU (equal UUIDs) share timeline semaphores and memory through OPAQUE_FD
// imports, so that CUDA streams wait for and signal Vulkan's timelines GPU-side. Covers the mode
// choice, wait-before-signal in both directions, chains across a Vulkan queue, CUDA queues, a host
// backend queue and the host, memory written by CUDA and read by a Vulkan compute shader and back,
// failure, device mismatch, and fd/thread leaks.
//
// Every test needs a CUDA driver, a baton CUDA device whose UUID is the Vulkan device's, and a
// Vulkan driver that exports timelines and memory as OPAQUE_FD; otherwise it skips and prints
// every reason (CI: no GPU, and lavapipe has no VK_KHR_external_semaphore_fd). On the H100 test
// machine, BATON_VULKAN_DEVICE=NVIDIA picks the NVIDIA Vulkan device.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/baton.hpp"
#include "baton/vulkan.hpp"
#include "process_counts.hpp"
#include "test_support.hpp"
#include "vulkan_context.hpp"

namespace {

using namespace baton;
using baton::test::openFds;
using baton::test::threadCount;
using baton::test::threadCountReaches;
using baton::test::VulkanBuffer;
using baton::test::VulkanContext;
using baton_test::containsText;
using baton_test::envUint;
using baton_test::kLongNs;
using baton_test::kShortNs;
using baton_test::lastError;
using baton_test::MessageSink;

const uint32_t kScaleAdd[] =
#include "scale_add.spv.h"
    ;

// scale_add.comp: what one pass does to a value.
constexpr uint32_t scaleAdd(uint32_t v, uint32_t add) { return v * 3u + add; }

// How long Queue::submit may take before the test calls it blocking: it must return at once
// even when its waits are far from met; this only bounds a broken one.
constexpr auto kSubmitReturns = std::chrono::seconds(2);

// A value far above any the tests signal, used to release Vulkan and CUDA waits when a test has
// failed half-way, so that teardown (vkDeviceWaitIdle, Device::destroy) cannot hang.
constexpr uint64_t kReleaseValue = 1u << 20;

// ---- host-side steps recorded into command buffers ---------------------------------------------

// What ran, in order, as host calls on the queues of a chain append to it (from baton's worker
// threads and the CUDA driver's host-function thread).
class Log {
 public:
  void add(std::string entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back(std::move(entry));
  }
  std::vector<std::string> entries() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> entries_;
};

struct LogStep {
  Log* log;
  const char* text;
};

Result logEntry(void* user) {
  auto* step = static_cast<LogStep*>(user);
  step->log->add(step->text);
  return Result::Success;
}

// Logs what a Vulkan fill left in host-visible memory: the first value, and whether every value
// equals it.
struct ReadStep {
  Log* log;
  const uint32_t* values;
  uint32_t count;
};

Result logWhatVulkanWrote(void* user) {
  auto* step = static_cast<ReadStep*>(user);
  bool uniform = true;
  for (uint32_t i = 1; i < step->count; ++i)
    uniform = uniform && step->values[i] == step->values[0];
  char text[64];
  std::snprintf(text, sizeof text, "host queue read 0x%x%s", step->values[0],
                uniform ? "" : " (not uniform)");
  step->log->add(text);
  return Result::Success;
}

Result failingStep(void*) { return Result::ErrorHostCallFailed; }

// A native callback that writes through Buffer::getDeviceAddress with the driver's own
// cuMemsetD32Async, as user kernels would, to show that the address is the native one. The
// function comes from the libcuda.so.1 baton loaded, so the test links no CUDA library (the
// prototype is cuda.h's, with CUdeviceptr = unsigned long long and CUstream a pointer).
using MemsetD32Async = int (*)(unsigned long long dst, unsigned int value, size_t count,
                               void* stream);

MemsetD32Async loadMemsetD32Async(std::string* why) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) {
    *why = std::string("libcuda.so.1 is not loaded: ") + dlerror();
    return nullptr;
  }
  auto fn = reinterpret_cast<MemsetD32Async>(dlsym(lib, "cuMemsetD32Async"));
  if (!fn) *why = std::string("cuMemsetD32Async: ") + dlerror();
  dlclose(lib);  // only drops the reference taken above: baton keeps the driver loaded
  return fn;
}

struct NativeFill {
  MemsetD32Async memsetD32Async;
  uint64_t address;
  uint32_t value;
  size_t count;  // 32-bit words
};

Result nativeFill(const NativeQueue& queue, void* user) {
  auto* fill = static_cast<NativeFill*>(user);
  if (queue.backend != BackendKind::Cuda || !queue.stream) return Result::ErrorInvalidState;
  return fill->memsetD32Async(fill->address, fill->value, fill->count, queue.stream) == 0
             ? Result::Success
             : Result::ErrorDriver;
}

// ---- the fixture ---------------------------------------------------------------------------

class NativeInterop : public ::testing::Test {
 protected:
  // One Vulkan device for the whole suite, as in interop_test.cpp.
  static void SetUpTestSuite() { vk = new VulkanContext; }
  static void TearDownTestSuite() {
    delete vk;
    vk = nullptr;
  }

  void SetUp() override {
    if (!vk->ok()) GTEST_SKIP() << "no usable Vulkan device: " << vk->skip;
    ASSERT_OK(createInstance(sink.instanceInfo(kAllBackends), instance.put()));
    const std::string why = whyNoNativeInterop();
    if (!why.empty()) GTEST_SKIP() << "native interop cannot be tested here: " << why;

    PhysicalDeviceProperties props;
    ASSERT_OK(cudaPhysical.getProperties(&props));
    // Two queues, so that chains can have a CUDA step waiting GPU-side on one queue while an
    // earlier step of the same chain runs on the other (a queue is in order).
    ASSERT_GE(props.maxQueues, 2u);
    DeviceCreateInfo twoQueues;
    twoQueues.queueCount = 2;
    ASSERT_OK(instance->createDevice(cudaPhysical, twoQueues, cuda.put()));
    ASSERT_OK(cuda->getQueue(0, &cudaQueue));
    ASSERT_OK(cuda->getQueue(1, &cudaQueue2));
    ASSERT_OK(instance->createDevice(hostPhysical, DeviceCreateInfo{}, host.put()));
    ASSERT_OK(host->getQueue(0, &hostQueue));
    pipeline = vk->createPipeline(kScaleAdd, sizeof kScaleAdd);
    ASSERT_TRUE(pipeline.pipeline);
  }

  void TearDown() override {
    if (!vk->ok()) return;
    if (HasFailure()) {
      // A failed test may have left a CUDA stream waiting GPU-side, or Vulkan work waiting, for
      // a value nobody will signal: release them all.
      for (const VulkanTimeline& t : timelines)
        if (vk->value(t.vulkan) < kReleaseValue) vk->signal(t.vulkan, kReleaseValue);
      for (VkSemaphore s : semaphores)
        if (vk->value(s) < kReleaseValue) vk->signal(s, kReleaseValue);
    }
    if (cuda) {
      EXPECT_OK(cuda->waitIdle(kLongNs));
    }
    if (host) {
      EXPECT_OK(host->waitIdle(kLongNs));
    }
    vkDeviceWaitIdle(vk->device);
    // Both sides are idle: the baton halves go first, then the Vulkan objects they borrowed.
    for (const VulkanTimeline& t : timelines) (void)destroyVulkanTimeline(vk->view(), t);
    if (pipeline.pipeline) vk->destroy(pipeline);
    for (VulkanBuffer& b : buffers) vk->destroy(b);
    for (VkSemaphore s : semaphores) vk->destroy(s);
  }

  // Every reason native interop cannot be tested with this Vulkan device, "; "-separated, or ""
  // when it can; then cudaPhysical is the CUDA device of the Vulkan device's GPU.
  std::string whyNoNativeInterop() {
    std::vector<std::string> why;
    VulkanInteropSupport support;
    if (queryVulkanInterop(vk->view(), Device(), &support) != Result::Success) {
      why.push_back("queryVulkanInterop failed: " + lastError());
    } else {
      if (!support.vulkanExternalSemaphoreFd ||
          !(support.vulkanSemaphoreExportTypes & VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT))
        why.push_back("the Vulkan driver of " + vk->name +
                      " cannot export timeline semaphores as OPAQUE_FD (no "
                      "VK_KHR_external_semaphore_fd)");
      if (!support.vulkanExternalMemoryFd ||
          !(support.vulkanMemoryExportTypes & VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT))
        why.push_back("the Vulkan driver of " + vk->name +
                      " cannot export buffer memory as OPAQUE_FD (no VK_KHR_external_memory_fd)");
    }

    uint32_t count = kBackendKindCount;
    BackendInfo backends[kBackendKindCount];
    if (instance->enumerateBackends(&count, backends) != Result::Success)
      why.push_back("enumerateBackends failed: " + lastError());
    for (uint32_t i = 0; i < count; ++i) {
      if (backends[i].kind != BackendKind::Cuda) continue;
      if (!backends[i].compiled) {
        why.push_back("baton was built without the CUDA backend");
      } else if (!backends[i].available) {
        why.push_back(std::string("no CUDA driver: ") + backends[i].reason);
      } else if (matchVulkanPhysicalDevice(*instance, vk->view(), &cudaPhysical) !=
                 Result::Success) {
        why.push_back("no CUDA device is the Vulkan device: " + lastError());
      } else {
        PhysicalDeviceProperties props;
        if (cudaPhysical.getProperties(&props) != Result::Success ||
            props.backend != BackendKind::Cuda)
          why.push_back("the device matching " + vk->name + " is not a CUDA device");
      }
    }

    uint32_t pdCount = 0;
    (void)instance->enumeratePhysicalDevices(&pdCount, nullptr);
    std::vector<PhysicalDevice> pds(pdCount);
    (void)instance->enumeratePhysicalDevices(&pdCount, pds.data());
    for (PhysicalDevice pd : pds) {
      PhysicalDeviceProperties props;
      if (pd.getProperties(&props) == Result::Success && props.backend == BackendKind::Host)
        hostPhysical = pd;
    }
    if (!hostPhysical) why.push_back("no host backend device");

    std::string text;
    for (size_t i = 0; i < why.size(); ++i) text += (i ? "; " : "") + why[i];
    return text;
  }

  // A timeline that baton creates (exportable) on the Vulkan device and imports natively into
  // the CUDA device. Destroyed at TearDown, once both sides are idle.
  void nativeTimeline(VulkanTimeline* out, VulkanFailurePolicy policy = VulkanFailurePolicy::Hold,
                      const char* name = "shared") {
    sharedTimeline(out, InteropModeRequest::Native, policy, name);
  }
  // The same in the mode `request` asks for (Native or Bridged: the mode it must get).
  void sharedTimeline(VulkanTimeline* out, InteropModeRequest request,
                      VulkanFailurePolicy policy = VulkanFailurePolicy::Hold,
                      const char* name = "shared") {
    VulkanTimelineCreateInfo info;
    info.vulkan = vk->view();
    info.device = *cuda;
    info.mode = request;
    info.failurePolicy = policy;
    info.debugName = name;
    ASSERT_OK(createVulkanTimeline(*instance, info, out));
    timelines.push_back(*out);
    ASSERT_EQ(out->mode,
              request == InteropModeRequest::Native ? InteropMode::Native : InteropMode::Bridged);
  }

  // A timeline the test creates exportable (freed at TearDown).
  VkSemaphore exportableTimeline(uint64_t initial = 0) {
    VkSemaphore s = vk->createExportableTimeline(initial);
    EXPECT_NE(s, VK_NULL_HANDLE);
    if (s) semaphores.push_back(s);
    return s;
  }
  VulkanSemaphoreImportInfo semaphoreImportInfo(VkSemaphore s, Device device,
                                                InteropModeRequest mode) const {
    VulkanSemaphoreImportInfo info;
    info.vulkan = vk->view();
    info.semaphore = s;
    info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    info.exportHandleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
    info.device = device;
    info.mode = mode;
    return info;
  }

  // A Vulkan timeline only Vulkan uses (freed at TearDown).
  VkSemaphore vulkanOnlyTimeline() {
    VkSemaphore s = vk->createTimeline();
    semaphores.push_back(s);
    return s;
  }

  // Host-visible Vulkan memory, mapped, zeroed (freed at TearDown).
  uint32_t* hostVisible(uint32_t uints, VulkanBuffer* out) {
    *out = vk->createHostBuffer(uints * sizeof(uint32_t));
    buffers.push_back(*out);
    void* p = nullptr;
    if (vkMapMemory(vk->device, out->memory, 0, VK_WHOLE_SIZE, 0, &p) != VK_SUCCESS) return nullptr;
    std::memset(p, 0, uints * sizeof(uint32_t));
    return static_cast<uint32_t*>(p);
  }

  // Exportable DEVICE_LOCAL Vulkan memory (freed at TearDown). Returns an empty buffer and says
  // why when the driver cannot make one of this kind.
  VulkanBuffer exportable(VkDeviceSize bytes, bool dedicated, std::string* why) {
    VulkanBuffer b = vk->createExportableBuffer(bytes, dedicated, why);
    if (b.buffer) buffers.push_back(b);
    return b;
  }
  // Either kind: suballocation-style where the driver allows it, else dedicated.
  VulkanBuffer exportableAnyKind(VkDeviceSize bytes, std::string* why) {
    VulkanBuffer b = exportable(bytes, false, why);
    return b.buffer ? b : exportable(bytes, true, why);
  }

  VulkanMemoryImportInfo nativeMemoryInfo(const VulkanBuffer& b) const {
    VulkanMemoryImportInfo info = vk->importInfo(b);
    info.mode = InteropModeRequest::Native;
    info.fd = -1;  // baton exports one
    return info;
  }

  UniqueBuffer cudaBuffer(MemoryKind kind, uint64_t bytes) {
    BufferCreateInfo info;
    info.size = bytes;
    info.memory = kind;
    UniqueBuffer b;
    EXPECT_OK(cuda->createBuffer(info, b.put()));
    return b;
  }
  static uint32_t* mapped(const UniqueBuffer& b) {
    void* p = nullptr;
    EXPECT_OK(b->map(&p));
    return static_cast<uint32_t*>(p);
  }

  UniqueSemaphore plain(const char* name) {
    UniqueSemaphore s;
    SemaphoreCreateInfo info;
    info.debugName = name;
    EXPECT_OK(instance->createSemaphore(info, s.put()));
    return s;
  }

  // A command buffer of `device`, begun.
  static UniqueCommandBuffer commands(const UniqueDevice& device) {
    UniqueCommandBuffer cb;
    EXPECT_OK(device->createCommandBuffer(cb.put()));
    EXPECT_OK(cb->begin());
    return cb;
  }

  // Every physical device of the instance.
  std::vector<PhysicalDevice> physicalDevices() {
    uint32_t count = 0;
    EXPECT_OK(instance->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> pds(count);
    EXPECT_OK(instance->enumeratePhysicalDevices(&count, pds.data()));
    pds.resize(count);
    return pds;
  }

  // The HIP device of the Vulkan device's GPU (on an NVIDIA GPU through the translation
  // library), or null with the reason in *why.
  PhysicalDevice hipTwin(std::string* why) {
    PhysicalDeviceProperties cudaProps;
    EXPECT_OK(cudaPhysical.getProperties(&cudaProps));
    for (PhysicalDevice pd : physicalDevices()) {
      PhysicalDeviceProperties p;
      if (pd.getProperties(&p) != Result::Success || p.backend != BackendKind::Hip ||
          std::memcmp(p.uuid, cudaProps.uuid, 16) != 0)
        continue;
      if (!(p.capabilities & kCapabilityExternalMemoryOpaqueFd)) {
        *why = "the HIP runtime cannot import external memory";
        return PhysicalDevice();
      }
      return pd;
    }
    *why = "no HIP device is the Vulkan device " + vk->name +
           " (on an NVIDIA GPU: BATON_HIP_DRIVER=<libbaton_hip_over_cuda.so>)";
    return PhysicalDevice();
  }

  // One baton submission.
  static Result submit(Queue queue, std::vector<SemaphoreValue> waits,
                       std::vector<CommandBuffer> commandBuffers,
                       std::vector<SemaphoreValue> signals) {
    SubmitInfo info;
    info.waits = waits;
    info.commandBuffers = commandBuffers;
    info.signals = signals;
    return queue.submit(info);
  }

  // Host calls of a chain (LogStep, ReadStep: they point here). A failed test's TearDown may
  // release submissions it left waiting, so what their host calls use outlives the test body.
  LogStep* logStep(const char* text) { return &logSteps.emplace_back(LogStep{&log, text}); }
  ReadStep* readStep(const uint32_t* values, uint32_t count) {
    return &readSteps.emplace_back(ReadStep{&log, values, count});
  }

  static VulkanContext* vk;
  Log log;
  std::deque<LogStep> logSteps;
  std::deque<ReadStep> readSteps;
  NativeFill driverFill{};  // what nativeFill writes, for the same reason
  MessageSink sink;
  UniqueInstance instance;
  PhysicalDevice cudaPhysical, hostPhysical;
  UniqueDevice cuda, host;
  Queue cudaQueue, cudaQueue2, hostQueue;
  VulkanContext::Pipeline pipeline;
  std::vector<VulkanTimeline> timelines;
  std::vector<VulkanBuffer> buffers;
  std::vector<VkSemaphore> semaphores;
};

VulkanContext* NativeInterop::vk = nullptr;

// ---- mode choice ---------------------------------------------------------------------------

TEST_F(NativeInterop, QueryReportsBridgedSemaphoresAndNativeMemoryForTheVulkanGpu) {
  VulkanInteropSupport support;
  ASSERT_OK(queryVulkanInterop(vk->view(), *cuda, &support));
  EXPECT_TRUE(support.uuidMatches);
  EXPECT_TRUE(support.batonSemaphoreImportTypes & VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT);
  EXPECT_TRUE(support.batonMemoryImportTypes & VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT);
  // Native semaphore import is possible here, but Auto bridges (faster: see baton/vulkan.hpp).
  EXPECT_EQ(support.semaphoreMode, InteropMode::Bridged) << support.semaphoreReason;
  EXPECT_TRUE(containsText(support.semaphoreReason, "native import is possible"))
      << support.semaphoreReason;
  EXPECT_EQ(support.memoryMode, InteropMode::Native) << support.memoryReason;
  std::printf("[ info     ] %s: semaphores %s (%s); memory %s (%s)\n", vk->name.c_str(),
              interopModeName(support.semaphoreMode), support.semaphoreReason,
              interopModeName(support.memoryMode), support.memoryReason);
}

TEST_F(NativeInterop, AutoBridgesSemaphoresAndSaysNativeWasPossible) {
  VulkanTimelineCreateInfo info;
  info.vulkan = vk->view();
  info.initialValue = 7;
  info.device = *cuda;
  info.debugName = "auto";
  VulkanTimeline t;
  ASSERT_OK(createVulkanTimeline(*instance, info, &t));
  timelines.push_back(t);
  EXPECT_EQ(t.mode, InteropMode::Bridged);
  uint64_t value = 0;
  EXPECT_OK(t.baton.getValue(&value));
  EXPECT_EQ(value, 7u) << "the import starts at the Vulkan semaphore's value";

  VulkanInteropInfo ii;
  ASSERT_OK(getVulkanSemaphoreInterop(t.baton, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Bridged);
  EXPECT_EQ(ii.semaphore, t.vulkan);
  EXPECT_EQ(ii.device, vk->device);
  EXPECT_TRUE(containsText(ii.reason, "native import is possible")) << ii.reason;
  EXPECT_TRUE(containsText(ii.reason, "InteropModeRequest::Native")) << ii.reason;
  EXPECT_TRUE(sink.has(MessageSeverity::Info, "'auto' imported from Vulkan device")) << sink.dump();
  EXPECT_TRUE(sink.has(MessageSeverity::Info, "bridged mode")) << sink.dump();

  // The Auto timeline carries both directions between the CUDA queue and Vulkan: a CUDA signal
  // reaches a Vulkan host waiter, and a Vulkan host signal releases a held CUDA submission.
  ASSERT_OK(submit(cudaQueue, {}, {}, {{t.baton, 8}}));
  EXPECT_EQ(vk->wait(t.vulkan, 8, kLongNs), VK_SUCCESS);
  ASSERT_OK(submit(cudaQueue, {{t.baton, 9}}, {}, {{t.baton, 10}}));
  EXPECT_EQ(vk->signal(t.vulkan, 9), VK_SUCCESS);
  EXPECT_OK(t.baton.wait(10, kLongNs));

  // The same for a semaphore the application created exportable and imports itself; Native on
  // request still imports it natively.
  VkSemaphore own = exportableTimeline(3);
  ASSERT_TRUE(own);
  UniqueSemaphore imported;
  ASSERT_OK(importVulkanSemaphore(
      *instance, semaphoreImportInfo(own, *cuda, InteropModeRequest::Auto), imported.put()));
  ASSERT_OK(getVulkanSemaphoreInterop(*imported, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Bridged) << ii.reason;
  EXPECT_OK(imported->getValue(&value));
  EXPECT_EQ(value, 3u);
  imported.reset();
  ASSERT_OK(importVulkanSemaphore(
      *instance, semaphoreImportInfo(own, *cuda, InteropModeRequest::Native), imported.put()));
  ASSERT_OK(getVulkanSemaphoreInterop(*imported, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Native) << ii.reason;
}

TEST_F(NativeInterop, NativeRequestWithAnExportedFdSucceeds) {
  VkSemaphore s = exportableTimeline();
  ASSERT_TRUE(s);
  VulkanSemaphoreImportInfo info = semaphoreImportInfo(s, *cuda, InteropModeRequest::Native);
  info.fd = vk->exportFd(s);
  ASSERT_GE(info.fd, 0) << "vkGetSemaphoreFdKHR failed";
  UniqueSemaphore imported;
  ASSERT_OK(importVulkanSemaphore(*instance, info, imported.put()));
  VulkanInteropInfo ii;
  ASSERT_OK(getVulkanSemaphoreInterop(*imported, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Native);
  // The import carries the timeline: a CUDA signal reaches Vulkan.
  ASSERT_OK(submit(cudaQueue, {}, {}, {{*imported, 4}}));
  EXPECT_EQ(vk->wait(s, 4, kLongNs), VK_SUCCESS);
}

TEST_F(NativeInterop, BridgedRequestStaysBridgedAndWorks) {
  VulkanTimelineCreateInfo info;
  info.vulkan = vk->view();
  info.device = *cuda;
  info.mode = InteropModeRequest::Bridged;
  VulkanTimeline t;
  ASSERT_OK(createVulkanTimeline(*instance, info, &t));
  timelines.push_back(t);
  EXPECT_EQ(t.mode, InteropMode::Bridged);
  VulkanInteropInfo ii;
  ASSERT_OK(getVulkanSemaphoreInterop(t.baton, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Bridged);
  EXPECT_TRUE(containsText(ii.reason, "requested")) << ii.reason;
  // Forwarded on the host, but the same timeline: a CUDA queue signal reaches Vulkan.
  ASSERT_OK(submit(cudaQueue, {}, {}, {{t.baton, 1}}));
  EXPECT_EQ(vk->wait(t.vulkan, 1, kLongNs), VK_SUCCESS);
}

// A host thread waiting on a bridged timeline for a CUDA queue's signal returns once it sees the
// signal's event, without forwarding the value to Vulkan itself (Vulkan calls that cost more than
// the rest of the wake-up on the NVIDIA driver: docs/performance.md, 'Floors and where the time
// goes'): the queue's completion thread forwards it (Timepoint::forwardsExternals). Every value must
// still reach Vulkan.
TEST_F(NativeInterop, ABridgedCudaSignalReachesVulkanWhenAHostWaiterSawItFirst) {
  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(sharedTimeline(&t, InteropModeRequest::Bridged));
  // The waiter spins on the event, so it sees the completion before the completion thread does.
  ASSERT_OK(cuda->setHostWaitSpin(kHostWaitSpinForever));
  for (uint64_t v = 1; v <= 50; ++v) {
    ASSERT_OK(submit(cudaQueue, {}, {}, {{t.baton, v}}));
    ASSERT_OK(t.baton.wait(v, kLongNs));
    ASSERT_EQ(vk->wait(t.vulkan, v, baton_test::kLongNs), VK_SUCCESS)
        << "value " << v << " never reached Vulkan";
  }
  EXPECT_OK(cuda->setHostWaitSpin(kHostWaitSpinDefaultNs));
}

TEST_F(NativeInterop, ASemaphoreNotCreatedExportableIsBridgedAndSaysWhy) {
  VkSemaphore s = vulkanOnlyTimeline();
  VulkanSemaphoreImportInfo info = semaphoreImportInfo(s, *cuda, InteropModeRequest::Native);
  info.exportHandleTypes = 0;
  Semaphore refused;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &refused), Result::ErrorNotSupported);
  EXPECT_TRUE(containsText(lastError(), "exportable")) << lastError();
  EXPECT_FALSE(refused);
  info.mode = InteropModeRequest::Auto;
  UniqueSemaphore bridged;
  ASSERT_OK(importVulkanSemaphore(*instance, info, bridged.put()));
  VulkanInteropInfo ii;
  ASSERT_OK(getVulkanSemaphoreInterop(*bridged, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Bridged);
  EXPECT_TRUE(containsText(ii.reason, "exportable")) << ii.reason;
}

// ---- wait-before-signal ----------------------------------------------------------------------

TEST_F(NativeInterop, VulkanWaitsForAValueACudaQueueSignalsLater) {
  constexpr uint32_t kCount = 256;
  constexpr uint32_t kPattern = 0xC0FFEE;
  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&t));
  VulkanBuffer out;
  const uint32_t* values = hostVisible(kCount, &out);
  ASSERT_TRUE(values);
  VkCommandBuffer fill = vk->record([&](VkCommandBuffer cmd) {
    vkCmdFillBuffer(cmd, out.buffer, 0, VK_WHOLE_SIZE, kPattern);
    vk->cmdHostReadBarrier(cmd);
  });

  // Vulkan first: it waits for 1, which nothing has been asked to signal yet.
  ASSERT_EQ(vk->submit({{t.vulkan, 1}}, fill, {{t.vulkan, 2}}), VK_SUCCESS);
  std::this_thread::sleep_for(std::chrono::nanoseconds(kShortNs));
  EXPECT_EQ(vk->value(t.vulkan), 0u) << "the Vulkan submission ran before its wait was met";
  EXPECT_EQ(values[0], 0u);

  // Then a CUDA queue does some work of its own and signals 1.
  UniqueBuffer scratch = cudaBuffer(MemoryKind::Device, 4096);
  UniqueCommandBuffer cb = commands(cuda);
  ASSERT_OK(cb->fillBuffer(*scratch, 0, 4096, 1));
  ASSERT_OK(cb->end());
  ASSERT_OK(submit(cudaQueue, {}, {*cb}, {{t.baton, 1}}));

  // The host sees Vulkan's signal through baton and through Vulkan.
  ASSERT_OK(t.baton.wait(2, kLongNs));
  EXPECT_EQ(vk->wait(t.vulkan, 2, kLongNs), VK_SUCCESS);
  uint64_t value = 0;
  EXPECT_OK(t.baton.getValue(&value));
  EXPECT_GE(value, 2u);
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(values[i], kPattern) << "index " << i;
}

class CudaWaitsForVulkan : public NativeInterop, public ::testing::WithParamInterface<bool> {};

// Vulkan signals with a queue submission (true) or from the host, vkSignalSemaphore (false).
TEST_P(CudaWaitsForVulkan, CudaQueueWaitsForAValueVulkanSignalsLater) {
  const bool byQueue = GetParam();
  constexpr uint32_t kCount = 1024;
  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&t));
  UniqueSemaphore done = plain("done");
  UniqueBuffer pinned = cudaBuffer(MemoryKind::HostPinned, kCount * 4);
  uint32_t* values = mapped(pinned);
  ASSERT_TRUE(values);
  std::memset(values, 0, kCount * 4);
  UniqueCommandBuffer cb = commands(cuda);
  ASSERT_OK(cb->fillBuffer(*pinned, 0, kCount * 4, 0xABCD));
  ASSERT_OK(cb->end());

  // CUDA first: it waits for 1, which only Vulkan will signal. Submitted from another thread so
  // that a submit blocking on its wait is reported instead of hanging this one.
  auto submitted = std::async(std::launch::async, [&] {
    return submit(cudaQueue, {{t.baton, 1}}, {*cb}, {{*done, 1}});
  });
  if (submitted.wait_for(kSubmitReturns) != std::future_status::ready) {
    ADD_FAILURE() << "Queue::submit blocked on a wait that Vulkan had not been asked to signal";
    vk->signal(t.vulkan, 1);
    return;  // the future's destructor waits for the submit
  }
  ASSERT_OK(submitted.get());
  EXPECT_EQ(done->wait(1, kShortNs), Result::Timeout) << "the CUDA submission did not wait";
  EXPECT_EQ(values[0], 0u);

  if (byQueue) {
    ASSERT_EQ(vk->submit({}, VK_NULL_HANDLE, {{t.vulkan, 1}}), VK_SUCCESS);
  } else {
    ASSERT_EQ(vk->signal(t.vulkan, 1), VK_SUCCESS);
  }
  ASSERT_OK(done->wait(1, kLongNs));
  EXPECT_OK(t.baton.wait(1, kLongNs)) << "baton never observed Vulkan's signal";
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(values[i], 0xABCDu) << "index " << i;
}

INSTANTIATE_TEST_SUITE_P(, CudaWaitsForVulkan, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("VulkanQueueSignals")
                                             : std::string("VulkanHostSignals");
                         });

// ---- chains ----------------------------------------------------------------------------------

TEST_F(NativeInterop, ChainAcrossCudaVulkanHostQueueAndHostOnOneTimeline) {
  // host signals 1 -> CUDA queue 0 (2) -> Vulkan fill (3) -> host backend queue reads it (4)
  // -> CUDA queue 1 (5) -> host waits for 5. Submitted back to front, so every wait is a
  // wait-before-signal. The CUDA steps use two queues: a queue is in order, so a step waiting
  // GPU-side for 4 would hold the step behind it that produces 2.
  constexpr uint32_t kCount = 256;
  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&t));
  VulkanBuffer out;
  const uint32_t* values = hostVisible(kCount, &out);
  ASSERT_TRUE(values);
  UniqueCommandBuffer cudaFirst = commands(cuda), cudaLast = commands(cuda);
  UniqueCommandBuffer hostStep = commands(host);
  ASSERT_OK(cudaFirst->hostCall(&logEntry, logStep("cuda queue 0")));
  ASSERT_OK(cudaLast->hostCall(&logEntry, logStep("cuda queue 1")));
  ASSERT_OK(hostStep->hostCall(&logWhatVulkanWrote, readStep(values, kCount)));
  for (const UniqueCommandBuffer* cb : {&cudaFirst, &cudaLast, &hostStep}) ASSERT_OK((*cb)->end());
  VkCommandBuffer fill = vk->record([&](VkCommandBuffer cmd) {
    vkCmdFillBuffer(cmd, out.buffer, 0, VK_WHOLE_SIZE, 0x5EED);
    vk->cmdHostReadBarrier(cmd);
  });

  ASSERT_OK(submit(cudaQueue2, {{t.baton, 4}}, {*cudaLast}, {{t.baton, 5}}));
  ASSERT_OK(submit(hostQueue, {{t.baton, 3}}, {*hostStep}, {{t.baton, 4}}));
  ASSERT_EQ(vk->submit({{t.vulkan, 2}}, fill, {{t.vulkan, 3}}), VK_SUCCESS);
  ASSERT_OK(submit(cudaQueue, {{t.baton, 1}}, {*cudaFirst}, {{t.baton, 2}}));
  std::this_thread::sleep_for(std::chrono::nanoseconds(kShortNs));
  EXPECT_TRUE(log.entries().empty()) << "a step ran before the host started the chain";
  EXPECT_EQ(vk->value(t.vulkan), 0u);

  ASSERT_OK(t.baton.signal(1));
  ASSERT_OK(t.baton.wait(5, kLongNs));
  EXPECT_EQ(vk->wait(t.vulkan, 5, kLongNs), VK_SUCCESS);
  EXPECT_EQ(log.entries(),
            (std::vector<std::string>{"cuda queue 0", "host queue read 0x5eed", "cuda queue 1"}));
}

TEST_F(NativeInterop, ChainAcrossSeveralTimelines) {
  // host signals P=1 -> CUDA queue 0 (A=1) -> Vulkan fill (B=1) -> host backend queue reads it
  // (P=2) -> CUDA queue 1 (A=2) -> host waits for A=2. A and B are native timelines, P a plain
  // baton semaphore; submitted back to front.
  constexpr uint32_t kCount = 256;
  VulkanTimeline a, b;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&a, VulkanFailurePolicy::Hold, "A"));
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&b, VulkanFailurePolicy::Hold, "B"));
  UniqueSemaphore p = plain("P");
  VulkanBuffer out;
  const uint32_t* values = hostVisible(kCount, &out);
  ASSERT_TRUE(values);
  UniqueCommandBuffer cudaFirst = commands(cuda), cudaLast = commands(cuda);
  UniqueCommandBuffer hostStep = commands(host);
  ASSERT_OK(cudaFirst->hostCall(&logEntry, logStep("cuda queue 0")));
  ASSERT_OK(cudaLast->hostCall(&logEntry, logStep("cuda queue 1")));
  ASSERT_OK(hostStep->hostCall(&logWhatVulkanWrote, readStep(values, kCount)));
  for (const UniqueCommandBuffer* cb : {&cudaFirst, &cudaLast, &hostStep}) ASSERT_OK((*cb)->end());
  VkCommandBuffer fill = vk->record([&](VkCommandBuffer cmd) {
    vkCmdFillBuffer(cmd, out.buffer, 0, VK_WHOLE_SIZE, 0xB0B);
    vk->cmdHostReadBarrier(cmd);
  });

  ASSERT_OK(submit(cudaQueue2, {{*p, 2}}, {*cudaLast}, {{a.baton, 2}}));
  ASSERT_OK(submit(hostQueue, {{b.baton, 1}}, {*hostStep}, {{*p, 2}}));
  ASSERT_EQ(vk->submit({{a.vulkan, 1}}, fill, {{b.vulkan, 1}}), VK_SUCCESS);
  ASSERT_OK(submit(cudaQueue, {{*p, 1}}, {*cudaFirst}, {{a.baton, 1}}));
  std::this_thread::sleep_for(std::chrono::nanoseconds(kShortNs));
  EXPECT_TRUE(log.entries().empty()) << "a step ran before the host started the chain";

  ASSERT_OK(p->signal(1));
  ASSERT_OK(a.baton.wait(2, kLongNs));
  EXPECT_EQ(vk->wait(a.vulkan, 2, kLongNs), VK_SUCCESS);
  EXPECT_EQ(vk->value(b.vulkan), 1u);
  EXPECT_EQ(log.entries(),
            (std::vector<std::string>{"cuda queue 0", "host queue read 0xb0b", "cuda queue 1"}));
}

TEST_F(NativeInterop, RoundsOfCudaAndVulkanOnSharedMemoryAllSubmittedUpFront) {
  // CUDA step r waits for 2r, snapshots the shared memory into pinned memory (r > 0), writes
  // element 0, and signals 2r+1; Vulkan round r waits for 2r+1, runs scale_add over the memory
  // and signals 2r+2. Every Vulkan round is submitted before any CUDA step, and every CUDA step
  // before any has run: each CUDA wait is for a value only Vulkan will signal.
  constexpr uint32_t kCount = 1024;
  constexpr uint32_t kRounds = 20;
  constexpr uint64_t kBytes = kCount * 4;
  std::string why;
  VulkanBuffer shared = exportableAnyKind(kBytes, &why);
  ASSERT_TRUE(shared.buffer) << why;
  UniqueBuffer memory;
  ASSERT_OK(importVulkanMemory(*cuda, nativeMemoryInfo(shared), memory.put()));
  UniqueBuffer snapshots = cudaBuffer(MemoryKind::HostPinned, kRounds * kBytes);
  const uint32_t* snapshot = mapped(snapshots);
  ASSERT_TRUE(snapshot);
  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&t));

  VkCommandBuffer pass = vk->record([&](VkCommandBuffer cmd) {
    vk->cmdAcquireFromExternal(cmd, shared);
    vk->cmdDispatch(cmd, pipeline, shared, kCount, 1);
    vk->cmdReleaseToExternal(cmd, shared);
  });
  for (uint64_t r = 0; r < kRounds; ++r)
    ASSERT_EQ(vk->submit({{t.vulkan, 2 * r + 1}}, pass, {{t.vulkan, 2 * r + 2}}), VK_SUCCESS);

  std::vector<UniqueCommandBuffer> steps;
  for (uint32_t r = 0; r <= kRounds; ++r) {
    steps.push_back(commands(cuda));
    const UniqueCommandBuffer& cb = steps.back();
    if (r == 0) {
      ASSERT_OK(cb->fillBuffer(*memory, 0, kBytes, 5));
    } else {
      ASSERT_OK(cb->copyBuffer(*memory, 0, *snapshots, (r - 1) * kBytes, kBytes));
      ASSERT_OK(cb->updateBuffer(*memory, 0, 4, &r));
    }
    ASSERT_OK(cb->end());
    std::vector<SemaphoreValue> waits;
    if (r) waits.push_back({t.baton, 2ull * r});
    ASSERT_OK(submit(cudaQueue, waits, {*cb}, {{t.baton, 2ull * r + 1}})) << "step " << r;
  }
  ASSERT_OK(t.baton.wait(2 * kRounds + 1, kLongNs));

  std::vector<uint32_t> expected(kCount, 5);
  for (uint32_t r = 0; r < kRounds; ++r) {
    for (uint32_t& v : expected) v = scaleAdd(v, 1);
    for (uint32_t i = 0; i < kCount; ++i)
      ASSERT_EQ(snapshot[r * kCount + i], expected[i]) << "round " << r << ", index " << i;
    expected[0] = r + 1;
  }
}

TEST_F(NativeInterop, HostPublishedSignalsFlowWhileTheDriverThrottlesTheSubmitter) {
  // The demo's pattern, without its work: CUDA step r waits for 2r (Vulkan's), runs a host call
  // and signals 2r+1, which only baton's completion thread can publish (a host call's signals
  // are not GPU-side); Vulkan round r waits for 2r+1 and signals 2r+2. Everything is submitted up
  // front, so the CUDA stream fills with waits and host functions and the issuing side is held
  // back (by the driver, or by baton's limit on unfinished operations per stream) until the GPU
  // catches up: the completion thread must keep publishing meanwhile. A completion thread that
  // waited for the issuing side there deadlocked the demo; here that hangs the test (the run's
  // time limit reports it).
  constexpr uint64_t kRounds = 400;
  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&t));
  for (uint64_t r = 0; r < kRounds; ++r)
    ASSERT_EQ(vk->submit({{t.vulkan, 2 * r + 1}}, VK_NULL_HANDLE, {{t.vulkan, 2 * r + 2}}),
              VK_SUCCESS);
  std::atomic<uint64_t> calls{0};
  UniqueCommandBuffer step = commands(cuda);
  ASSERT_OK(step->hostCall(
      [](void* user) {
        static_cast<std::atomic<uint64_t>*>(user)->fetch_add(1);
        return Result::Success;
      },
      &calls));
  ASSERT_OK(step->end());
  auto start = std::chrono::steady_clock::now();
  auto ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  for (uint64_t r = 0; r < kRounds; ++r) {
    std::vector<SemaphoreValue> waits;
    if (r) waits.push_back({t.baton, 2 * r});
    ASSERT_OK(submit(cudaQueue, waits, {*step}, {{t.baton, 2 * r + 1}})) << "step " << r;
  }
  const double submitted = ms();
  ASSERT_OK(t.baton.wait(2 * kRounds, kLongNs));
  std::printf("%llu rounds: submitted in %.1f ms, all done in %.1f ms\n",
              static_cast<unsigned long long>(kRounds), submitted, ms());
  EXPECT_EQ(calls.load(), kRounds);
  EXPECT_EQ(vk->wait(t.vulkan, 2 * kRounds, kLongNs), VK_SUCCESS);
}

// ---- memory ----------------------------------------------------------------------------------

class NativeMemory : public NativeInterop, public ::testing::WithParamInterface<bool> {};

// Device-local Vulkan memory, from an ordinary (false) or a dedicated (true) allocation: CUDA
// writes it four ways, a Vulkan compute shader reads and rewrites it, CUDA copies it back.
TEST_P(NativeMemory, WrittenByCudaReadByAVulkanShaderAndBack) {
  const bool dedicated = GetParam();
  constexpr uint32_t kCount = 4096;
  constexpr uint32_t kQuarter = kCount / 4;
  constexpr uint64_t kBytes = kCount * 4, kQuarterBytes = kQuarter * 4;
  constexpr uint32_t kAdd = 4;
  std::string why;
  VulkanBuffer shared = exportable(kBytes, dedicated, &why);
  if (!shared.buffer && !dedicated && containsText(why, "only from dedicated"))
    GTEST_SKIP() << why << " (the dedicated variant covers it)";
  ASSERT_TRUE(shared.buffer) << why;

  UniqueBuffer memory;
  ASSERT_OK(importVulkanMemory(*cuda, nativeMemoryInfo(shared), memory.put()));
  VulkanInteropInfo ii;
  ASSERT_OK(getVulkanMemoryInterop(*memory, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Native) << ii.reason;
  EXPECT_EQ(ii.memory, shared.memory);
  EXPECT_EQ(ii.device, vk->device);
  EXPECT_TRUE(containsText(ii.reason, "native")) << ii.reason;
  uint64_t size = 0;
  ASSERT_OK(memory->getSize(&size));
  EXPECT_EQ(size, kBytes);
  // DEVICE_LOCAL memory has no host pointer: map says so instead of handing out a bad one.
  void* host = &size;
  EXPECT_EQ(memory->map(&host), Result::ErrorNotSupported);
  EXPECT_TRUE(containsText(lastError(), "host")) << lastError();
  EXPECT_EQ(host, nullptr);
  uint64_t address = 0;
  ASSERT_OK(memory->getDeviceAddress(&address));
  ASSERT_NE(address, 0u);

  // CUDA writes: quarter 0 fill, quarter 1 update, quarter 2 copy from pinned memory, quarter 3
  // the driver's memset through the native address.
  std::vector<uint32_t> ramp(kQuarter);
  for (uint32_t i = 0; i < kQuarter; ++i) ramp[i] = 2000 + i;
  UniqueBuffer source = cudaBuffer(MemoryKind::HostPinned, kQuarterBytes);
  uint32_t* src = mapped(source);
  ASSERT_TRUE(src);
  for (uint32_t i = 0; i < kQuarter; ++i) src[i] = 3000 + i;
  driverFill = NativeFill{loadMemsetD32Async(&why), address + 3 * kQuarterBytes, 11, kQuarter};
  ASSERT_TRUE(driverFill.memsetD32Async) << why;
  UniqueCommandBuffer write = commands(cuda);
  ASSERT_OK(write->fillBuffer(*memory, 0, kQuarterBytes, 7));
  ASSERT_OK(write->updateBuffer(*memory, kQuarterBytes, kQuarterBytes, ramp.data()));
  ASSERT_OK(write->copyBuffer(*source, 0, *memory, 2 * kQuarterBytes, kQuarterBytes));
  ASSERT_OK(write->native(&nativeFill, &driverFill));
  ASSERT_OK(write->end());
  auto written = [&](uint32_t i) -> uint32_t {
    switch (i / kQuarter) {
      case 0: return 7;
      case 1: return 2000 + i % kQuarter;
      case 2: return 3000 + i % kQuarter;
      default: return 11;
    }
  };

  UniqueBuffer readback = cudaBuffer(MemoryKind::HostPinned, kBytes);
  const uint32_t* result = mapped(readback);
  ASSERT_TRUE(result);
  UniqueCommandBuffer read = commands(cuda);
  ASSERT_OK(read->copyBuffer(*memory, 0, *readback, 0, kBytes));
  ASSERT_OK(read->end());

  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&t));
  VkCommandBuffer pass = vk->record([&](VkCommandBuffer cmd) {
    vk->cmdAcquireFromExternal(cmd, shared);
    vk->cmdDispatch(cmd, pipeline, shared, kCount, kAdd);
    vk->cmdReleaseToExternal(cmd, shared);
  });
  // Vulkan first (waits for CUDA's 1), then CUDA writes (1) and reads back after Vulkan (2).
  ASSERT_EQ(vk->submit({{t.vulkan, 1}}, pass, {{t.vulkan, 2}}), VK_SUCCESS);
  ASSERT_OK(submit(cudaQueue, {}, {*write}, {{t.baton, 1}}));
  ASSERT_OK(submit(cudaQueue, {{t.baton, 2}}, {*read}, {{t.baton, 3}}));
  ASSERT_OK(t.baton.wait(3, kLongNs));
  for (uint32_t i = 0; i < kCount; ++i)
    ASSERT_EQ(result[i], scaleAdd(written(i), kAdd)) << "index " << i;
}

INSTANTIATE_TEST_SUITE_P(, NativeMemory, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Dedicated") : std::string("Ordinary");
                         });

TEST_F(NativeInterop, MemoryImportOfARangeMapsThatRange) {
  // Vulkan fills the whole allocation with one pattern; CUDA fills only the imported range
  // [offset, offset + size) with another; Vulkan copies the allocation to host-visible memory.
  // 64 KiB keeps the offset aligned for any driver.
  constexpr uint64_t kOffset = 64 * 1024, kSize = 64 * 1024, kTotal = 3 * 64 * 1024;
  std::string why;
  VulkanBuffer shared = exportableAnyKind(kTotal, &why);
  ASSERT_TRUE(shared.buffer) << why;
  VulkanBuffer out;
  const uint32_t* values = hostVisible(kTotal / 4, &out);
  ASSERT_TRUE(values);
  VulkanMemoryImportInfo info = nativeMemoryInfo(shared);
  info.offset = kOffset;
  info.size = kSize;
  UniqueBuffer range;
  ASSERT_OK(importVulkanMemory(*cuda, info, range.put()));
  uint64_t size = 0;
  ASSERT_OK(range->getSize(&size));
  EXPECT_EQ(size, kSize);
  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&t));

  VkCommandBuffer fill = vk->record([&](VkCommandBuffer cmd) {
    vk->cmdAcquireFromExternal(cmd, shared);
    vkCmdFillBuffer(cmd, shared.buffer, 0, kTotal, 0xAAAAAAAA);
    vk->cmdReleaseToExternal(cmd, shared);
  });
  VkCommandBuffer copy = vk->record([&](VkCommandBuffer cmd) {
    vk->cmdAcquireFromExternal(cmd, shared);
    VkBufferCopy region{0, 0, kTotal};
    vkCmdCopyBuffer(cmd, shared.buffer, out.buffer, 1, &region);
    vk->cmdHostReadBarrier(cmd);
  });
  UniqueCommandBuffer cb = commands(cuda);
  ASSERT_OK(cb->fillBuffer(*range, 0, kSize, 0x77777777));
  ASSERT_OK(cb->end());
  ASSERT_EQ(vk->submit({}, fill, {{t.vulkan, 1}}), VK_SUCCESS);
  ASSERT_EQ(vk->submit({{t.vulkan, 2}}, copy, {{t.vulkan, 3}}), VK_SUCCESS);
  ASSERT_OK(submit(cudaQueue, {{t.baton, 1}}, {*cb}, {{t.baton, 2}}));
  ASSERT_OK(t.baton.wait(3, kLongNs));
  for (uint64_t i = 0; i < kTotal / 4; ++i) {
    const bool inside = i * 4 >= kOffset && i * 4 < kOffset + kSize;
    ASSERT_EQ(values[i], inside ? 0x77777777u : 0xAAAAAAAAu) << "byte offset " << i * 4;
  }
}

// HIP imports Vulkan memory natively (hipImportExternalMemory, OPAQUE_FD) where its device is
// the Vulkan device: on the H100 through the translation library (BATON_HIP_DRIVER). Ordered
// through the host: HIP's semaphore interop is bridged, and this test is about the memory.
TEST_F(NativeInterop, HipImportsVulkanMemoryNatively) {
  std::string skip;
  PhysicalDevice hipPhysical = hipTwin(&skip);
  if (!hipPhysical) GTEST_SKIP() << skip;
  UniqueDevice hip;
  ASSERT_OK(instance->createDevice(hipPhysical, DeviceCreateInfo{}, hip.put()));
  Queue hipQueue;
  ASSERT_OK(hip->getQueue(0, &hipQueue));

  constexpr uint64_t kTotal = 64 * 1024, kOffset = 16 * 1024, kSize = 8 * 1024;
  std::string why;
  VulkanBuffer shared = exportableAnyKind(kTotal, &why);
  ASSERT_TRUE(shared.buffer) << why;
  VulkanBuffer out;
  const uint32_t* values = hostVisible(kTotal / 4, &out);
  ASSERT_TRUE(values);
  UniqueBuffer imported;
  ASSERT_OK(importVulkanMemory(*hip, nativeMemoryInfo(shared), imported.put()));
  VulkanInteropInfo ii;
  ASSERT_OK(getVulkanMemoryInterop(*imported, &ii));
  EXPECT_EQ(ii.mode, InteropMode::Native) << ii.reason;

  VkSemaphore done = vulkanOnlyTimeline();
  VkCommandBuffer fill = vk->record([&](VkCommandBuffer cmd) {
    vk->cmdAcquireFromExternal(cmd, shared);
    vkCmdFillBuffer(cmd, shared.buffer, 0, kTotal, 0xAAAAAAAA);
    vk->cmdReleaseToExternal(cmd, shared);
  });
  ASSERT_EQ(vk->submit({}, fill, {{done, 1}}), VK_SUCCESS);
  ASSERT_EQ(vk->wait(done, 1, kLongNs), VK_SUCCESS);

  UniqueCommandBuffer cb = commands(hip);
  ASSERT_OK(cb->fillBuffer(*imported, kOffset, kSize, 0x55555555));
  ASSERT_OK(cb->end());
  UniqueSemaphore hipDone = plain("hip-done");
  ASSERT_OK(submit(hipQueue, {}, {*cb}, {{*hipDone, 1}}));
  ASSERT_OK(hipDone->wait(1, kLongNs));

  VkCommandBuffer copy = vk->record([&](VkCommandBuffer cmd) {
    vk->cmdAcquireFromExternal(cmd, shared);
    VkBufferCopy region{0, 0, kTotal};
    vkCmdCopyBuffer(cmd, shared.buffer, out.buffer, 1, &region);
    vk->cmdHostReadBarrier(cmd);
  });
  ASSERT_EQ(vk->submit({}, copy, {{done, 2}}), VK_SUCCESS);
  ASSERT_EQ(vk->wait(done, 2, kLongNs), VK_SUCCESS);
  for (uint64_t i = 0; i < kTotal / 4; ++i) {
    const bool inside = i * 4 >= kOffset && i * 4 < kOffset + kSize;
    ASSERT_EQ(values[i], inside ? 0x55555555u : 0xAAAAAAAAu) << "byte offset " << i * 4;
  }
  EXPECT_OK(hip->waitIdle(kLongNs));
}

// A capturable native callback that stays in its capture (at end() of a graph command buffer)
// until `released`, having said it started; 10 s at most.
struct LongCapture {
  std::atomic<bool> started{false}, released{false};
  static Result run(const NativeQueue&, void* user) {
    auto* c = static_cast<LongCapture*>(user);
    c->started = true;
    for (int i = 0; i < 1000 && !c->released; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return Result::Success;
  }
};

// Imported memory released on another thread while a graph command buffer of the same device
// captures: the release waits for the capture's end. Under HIP, the mapping is freed with
// hipFree, which synchronizes the device, and a device synchronization during a stream capture
// ends it invalidated (end() would fail); CUDA is checked the same way.
TEST_F(NativeInterop, ImportedMemoryReleasedDuringACaptureIsReleasedAfterIt) {
  std::string noHip;
  PhysicalDevice hipPhysical = hipTwin(&noHip);
  UniqueDevice hip;
  if (hipPhysical) {
    ASSERT_OK(instance->createDevice(hipPhysical, DeviceCreateInfo{}, hip.put()));
  } else {
    std::printf("HIP not checked: %s\n", noHip.c_str());
  }
  std::string why;
  VulkanBuffer shared = exportableAnyKind(64 * 1024, &why);
  ASSERT_TRUE(shared.buffer) << why;
  for (UniqueDevice* device : {&cuda, &hip}) {
    if (!*device) continue;
    SCOPED_TRACE(device == &cuda ? "cuda" : "hip");
    PhysicalDevice physical;
    ASSERT_OK((*device)->getPhysicalDevice(&physical));
    PhysicalDeviceProperties props;
    ASSERT_OK(physical.getProperties(&props));
    if (!(props.capabilities & kCapabilityGraphCommandBuffers)) {
      std::printf("%s not checked: no graph command buffers\n", backendName(props.backend));
      continue;
    }
    UniqueBuffer imported;
    ASSERT_OK(importVulkanMemory(**device, nativeMemoryInfo(shared), imported.put()));
    CommandBufferCreateInfo graph;
    graph.usage = CommandBufferUsage::Graph;
    UniqueCommandBuffer cb;
    ASSERT_OK((*device)->createCommandBuffer(graph, cb.put()));
    ASSERT_OK(cb->begin());
    LongCapture capture;
    ASSERT_OK(cb->native(&LongCapture::run, &capture, kNativeCapturable));
    std::thread releasing([&] {
      while (!capture.started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      imported.reset();  // the last reference: the mapping and the import go
      capture.released = true;
    });
    EXPECT_OK(cb->end()) << "the capture was not disturbed by the release";
    releasing.join();
    Queue queue;
    ASSERT_OK((*device)->getQueue(0, &queue));
    UniqueSemaphore done = plain("done");
    ASSERT_OK(submit(queue, {}, {*cb}, {{*done, 1}}));
    EXPECT_OK(done->wait(1, kLongNs));
    EXPECT_OK((*device)->waitIdle(kLongNs));
  }
}

// ---- failure ---------------------------------------------------------------------------------

TEST_F(NativeInterop, FailedTimelineReleasesVulkanAndFailsBatonWaiters) {
  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&t, VulkanFailurePolicy::Release));
  VkSemaphore after = vulkanOnlyTimeline();
  ASSERT_EQ(vk->submit({{t.vulkan, 5}}, VK_NULL_HANDLE, {{after, 1}}), VK_SUCCESS);
  // A CUDA submission waiting for 5, which nobody has been asked to signal: waited GPU-side.
  UniqueSemaphore done = plain("done");
  ASSERT_OK(submit(cudaQueue, {{t.baton, 5}}, {}, {{*done, 1}}));
  EXPECT_EQ(done->wait(1, kShortNs), Result::Timeout);

  ASSERT_OK(t.baton.fail("simulation diverged"));
  EXPECT_EQ(vk->wait(after, 1, kLongNs), VK_SUCCESS) << "the Vulkan wait was not released";
  EXPECT_GE(vk->value(t.vulkan), 5u);
  EXPECT_TRUE(sink.has(MessageSeverity::Warning, "VulkanFailurePolicy::Release")) << sink.dump();
  EXPECT_EQ(t.baton.wait(5, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "simulation diverged")) << lastError();
  // The CUDA submission did wait on a failed value: its signal fails too, although its wait was
  // already in the stream when the failure came.
  EXPECT_EQ(done->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "simulation diverged")) << lastError();

  // The queue is not stuck behind the released GPU-side wait.
  UniqueSemaphore later = plain("later");
  ASSERT_OK(submit(cudaQueue, {}, {}, {{*later, 1}}));
  EXPECT_OK(later->wait(1, kLongNs));
}

TEST_F(NativeInterop, AFailedCudaProducerFailsTheChainAndReleasesVulkan) {
  // CUDA queue 0 (a failing host call) -> shared timeline -> CUDA queue 1 -> host; Vulkan, also
  // waiting on the shared timeline, is released by the Release policy instead of hanging.
  VulkanTimeline t;
  ASSERT_NO_FATAL_FAILURE(nativeTimeline(&t, VulkanFailurePolicy::Release));
  UniqueSemaphore last = plain("last");
  VkSemaphore after = vulkanOnlyTimeline();
  ASSERT_EQ(vk->submit({{t.vulkan, 1}}, VK_NULL_HANDLE, {{after, 1}}), VK_SUCCESS);
  ASSERT_OK(submit(cudaQueue2, {{t.baton, 1}}, {}, {{*last, 1}}));

  UniqueCommandBuffer producer = commands(cuda);
  ASSERT_OK(producer->hostCall(&failingStep, nullptr));
  ASSERT_OK(producer->end());
  ASSERT_OK(submit(cudaQueue, {}, {*producer}, {{t.baton, 1}}));

  EXPECT_EQ(last->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "hostCall")) << lastError();
  EXPECT_EQ(t.baton.wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(vk->wait(after, 1, kLongNs), VK_SUCCESS) << "the Vulkan wait was not released";
}

TEST_F(NativeInterop, NativeImportIntoAnotherGpuIsADeviceMismatch) {
  PhysicalDeviceProperties mine;
  ASSERT_OK(cudaPhysical.getProperties(&mine));
  const std::vector<PhysicalDevice> pds = physicalDevices();
  PhysicalDevice other;
  for (PhysicalDevice pd : pds) {
    PhysicalDeviceProperties p;
    ASSERT_OK(pd.getProperties(&p));
    if (p.backend == BackendKind::Cuda && std::memcmp(p.uuid, mine.uuid, sizeof p.uuid) != 0)
      other = pd;
  }
  if (!other) GTEST_SKIP() << "only one CUDA device: no other GPU to mismatch";
  UniqueDevice otherDevice;
  ASSERT_OK(instance->createDevice(other, DeviceCreateInfo{}, otherDevice.put()));

  VkSemaphore s = exportableTimeline();
  ASSERT_TRUE(s);
  VulkanSemaphoreImportInfo info = semaphoreImportInfo(s, *otherDevice, InteropModeRequest::Native);
  Semaphore refused;
  EXPECT_EQ(importVulkanSemaphore(*instance, info, &refused), Result::ErrorDeviceMismatch);
  EXPECT_TRUE(containsText(lastError(), "UUID")) << lastError();
  EXPECT_FALSE(refused);
  info.mode = InteropModeRequest::Auto;  // bridges, and warns: probably the wrong device
  UniqueSemaphore bridged;
  ASSERT_OK(importVulkanSemaphore(*instance, info, bridged.put()));
  EXPECT_TRUE(sink.has(MessageSeverity::Warning, "UUID")) << sink.dump();

  std::string why;
  VulkanBuffer shared = exportableAnyKind(4096, &why);
  ASSERT_TRUE(shared.buffer) << why;
  Buffer refusedBuffer;
  EXPECT_EQ(importVulkanMemory(*otherDevice, nativeMemoryInfo(shared), &refusedBuffer),
            Result::ErrorDeviceMismatch);
  EXPECT_TRUE(containsText(lastError(), "UUID")) << lastError();
  EXPECT_FALSE(refusedBuffer);
}

// ---- lifetimes and leaks -------------------------------------------------------------------

TEST_F(NativeInterop, NoFdOrThreadLeaksFromNativeImports) {
  // Each round imports timelines and memory natively (baton exporting the fd, and the test
  // exporting it), uses them, and destroys them; failed imports leave the fd with the caller.
  const uint64_t rounds = envUint("BATON_INTEROP_LEAK_ROUNDS", 200);
  UniqueSemaphore progress = plain("progress");
  uint64_t step = 0;
  auto round = [&] {
    VulkanTimelineCreateInfo created;
    created.vulkan = vk->view();
    created.device = *cuda;
    created.mode = InteropModeRequest::Native;
    VulkanTimeline t;
    ASSERT_OK(createVulkanTimeline(*instance, created, &t));
    ASSERT_OK(submit(cudaQueue, {}, {}, {{t.baton, 1}}));
    ASSERT_EQ(vk->wait(t.vulkan, 1, kLongNs), VK_SUCCESS);
    ASSERT_OK(t.baton.wait(1, kLongNs));
    // Vulkan and the watcher may see the value before baton retires the CUDA submission that
    // signalled it; destroying the import before then would be "destroyed with work pending".
    ASSERT_OK(cudaQueue.waitIdle(kLongNs));
    EXPECT_OK(destroyVulkanTimeline(vk->view(), t));

    VkSemaphore s = vk->createExportableTimeline();
    ASSERT_TRUE(s);
    VulkanSemaphoreImportInfo info = semaphoreImportInfo(s, *cuda, InteropModeRequest::Native);
    info.fd = vk->exportFd(s);
    ASSERT_GE(info.fd, 0);
    UniqueSemaphore imported;
    ASSERT_OK(importVulkanSemaphore(*instance, info, imported.put()));  // the fd is baton's now
    imported.reset();
    // The host backend cannot import natively: refused, and the fd is still the caller's.
    info = semaphoreImportInfo(s, *host, InteropModeRequest::Native);
    info.fd = vk->exportFd(s);
    ASSERT_GE(info.fd, 0);
    Semaphore refused;
    EXPECT_EQ(importVulkanSemaphore(*instance, info, &refused), Result::ErrorNotSupported);
    EXPECT_NE(fcntl(info.fd, F_GETFD), -1) << "a failed import closed the caller's fd";
    close(info.fd);
    vk->destroy(s);

    std::string why;
    VulkanBuffer shared = vk->createExportableBuffer(64 * 1024, false, &why);
    if (!shared.buffer) shared = vk->createExportableBuffer(64 * 1024, true, &why);
    ASSERT_TRUE(shared.buffer) << why;
    UniqueBuffer memory, memoryFromFd;
    ASSERT_OK(importVulkanMemory(*cuda, nativeMemoryInfo(shared), memory.put()));
    VulkanMemoryImportInfo fromFd = nativeMemoryInfo(shared);
    fromFd.fd = vk->exportFd(shared.memory);
    ASSERT_GE(fromFd.fd, 0);
    ASSERT_OK(importVulkanMemory(*cuda, fromFd, memoryFromFd.put()));
    UniqueCommandBuffer cb = commands(cuda);
    ASSERT_OK(cb->fillBuffer(*memory, 0, 4096, 1));
    ASSERT_OK(cb->copyBuffer(*memoryFromFd, 0, *memory, 4096, 4096));
    ASSERT_OK(cb->end());
    ++step;
    ASSERT_OK(submit(cudaQueue, {}, {*cb}, {{*progress, step}}));
    ASSERT_OK(progress->wait(step, kLongNs));
    memory.reset();
    memoryFromFd.reset();
    vk->destroy(shared);
  };

  // Warm up once: the Vulkan and CUDA drivers open files and start threads lazily.
  ASSERT_NO_FATAL_FAILURE(round());
  const size_t fds = openFds();
  const size_t threads = threadCount();
  for (uint64_t i = 0; i < rounds; ++i) ASSERT_NO_FATAL_FAILURE(round()) << "round " << i;
  EXPECT_TRUE(threadCountReaches(threads)) << threadCount() << " threads, expected " << threads;
  EXPECT_EQ(openFds(), fds) << "after " << rounds << " rounds";
}

}  // namespace
