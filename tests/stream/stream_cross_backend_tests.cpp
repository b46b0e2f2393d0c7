// Semaphore graphs across the two GPU backends and the host: a value signalled by a HIP queue is
// waited for by a CUDA queue and a host queue, and back (CUDA -> HIP, host -> HIP), with every
// consumer submitted before its producer (wait-before-signal). A queue can wait GPU-side only for a
// signal of its own backend, so these waits are released when the value is reached: a producer held
// on its GPU by a gate shows that its consumers on the other backend are not issued early. Data
// crosses through HostPinned buffers: a consumer's host call (in stream order, after the wait)
// reads the producer's pinned words, and its GPU copies them on.
//
// Needs both backends in one process: in CI both BATON_CUDA_DRIVER and BATON_HIP_DRIVER name the
// fake driver (one emulation, two name sets); on the H100 CUDA loads libcuda.so.1 and
// BATON_HIP_DRIVER names libbaton_hip_over_cuda.so. Skips, with the reason, when either backend
// is absent. The fixture is the shared one on the HIP device (CrossBackendTest.<test>/hip), plus
// a CUDA device and a host device; the gates use the kernels of each GPU's hooks.
#include <atomic>
#include <cstring>
#include <thread>

#include "stream_test_support.hpp"

namespace baton_test {
namespace {

using baton::BackendKind;
using baton::MemoryKind;
using baton::Result;

constexpr uint64_t kWords = 1024;
constexpr uint64_t kBytes = kWords * 4;

// Why `kind` cannot run here, in the conformance fixture's words, or "" when it can.
std::string unusable(baton::Instance instance, BackendKind kind) {
  uint32_t count = 0;
  if (instance.enumerateBackends(&count, nullptr) != Result::Success) return lastError();
  std::vector<baton::BackendInfo> infos(count);
  if (instance.enumerateBackends(&count, infos.data()) != Result::Success) return lastError();
  const std::string name = baton::backendName(kind);
  for (const baton::BackendInfo& b : infos) {
    if (b.kind != kind) continue;
    if (!b.compiled) return name + ": not compiled into this build";
    if (!b.available) return name + ": unavailable: " + b.reason;
    if (b.deviceCount == 0) return name + ": no devices: " + b.reason;
    return "";
  }
  return name + ": not known to this build of baton";
}

// One GPU side of a graph: a device, the queue used on it and its gate kernels (when loaded).
struct Side {
  const char* name;
  baton::Device device;
  baton::Queue queue;
  const Kernels* kernels;  // null: no gate on this side, for the reason in noGate
  std::string noGate;
};

// Counts how often it ran: proves a submission was *issued* (natives run at issue time).
Result countIssue(const baton::NativeQueue&, void* userData) {
  static_cast<std::atomic<int>*>(userData)->fetch_add(1);
  return Result::Success;
}

// A host call copying words between host pointers (of pinned buffers of two devices).
struct CopyWords {
  const uint32_t* src;
  uint32_t* dst;
  uint64_t count;
  static Result run(void* user) {
    auto* self = static_cast<CopyWords*>(user);
    for (uint64_t i = 0; i < self->count; ++i)
      __atomic_store_n(&self->dst[i], __atomic_load_n(&self->src[i], __ATOMIC_SEQ_CST),
                       __ATOMIC_SEQ_CST);
    return Result::Success;
  }
};

class CrossBackendTest : public StreamBackendTest {
 protected:
  void SetUp() override {
    StreamBackendTest::SetUp();  // the HIP device, its 4 queues and kernels; skips without HIP
    if (IsSkipped() || HasFatalFailure()) return;
    const std::string why = unusable(*instance_, BackendKind::Cuda);
    if (!why.empty() && backendRequired(BackendKind::Cuda))
      ADD_FAILURE() << "cuda is required here (BATON_TEST_REQUIRE_BACKENDS) but skipped: " << why;
    if (!why.empty()) GTEST_SKIP() << why;
    using namespace baton;
    uint32_t count = 0;
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> all(count);
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, all.data()));
    for (PhysicalDevice p : all) {
      PhysicalDeviceProperties props;
      ASSERT_OK(p.getProperties(&props));
      if (props.backend == BackendKind::Cuda && !cudaPhysical_) {
        cudaPhysical_ = p;
        cudaProps_ = props;
      }
    }
    ASSERT_TRUE(cudaPhysical_);
    ASSERT_TRUE(hostPhysical_);
    DeviceCreateInfo info;
    info.queueCount = 2;
    ASSERT_OK(instance_->createDevice(cudaPhysical_, info, cuda_.put()));
    ASSERT_OK(instance_->createDevice(hostPhysical_, info, host_.put()));
    ASSERT_OK(cuda_->getQueue(0, &cudaQueue_));
    ASSERT_OK(host_->getQueue(0, &hostQueue_));
    ASSERT_OK(host_->getQueue(1, &hostQueue2_));
    if (const StreamHooks* cudaHooks = findStreamHooks(BackendKind::Cuda))
      cudaKernelsMissing_ = cudaKernels_.load(*cudaHooks, static_cast<int>(cudaProps_.ordinal));
  }

  void TearDown() override {
    for (baton::UniqueDevice* d : {&cuda_, &host_})
      if (*d) {
        EXPECT_OK(d->release().destroy()) << "\n" << sink_.dump();
      }
    cudaKernels_.unload();
    StreamBackendTest::TearDown();
  }

  Side hipSide() {
    return {"hip", *device_, queue(0), kernelsMissing_.empty() ? &kernels_ : nullptr,
            kernelsMissing_};
  }
  Side cudaSide() {
    return {"cuda", *cuda_, cudaQueue_, cudaKernelsMissing_.empty() ? &cudaKernels_ : nullptr,
            cudaKernelsMissing_};
  }

  // `producer` fills device memory with `pattern` and copies it to its pinned buffer (behind a
  // gate when it has kernels). Submitted first: `consumer`'s queue waits for the producer's
  // signal, copies the producer's pinned words into its own pinned buffer (a host call), and on
  // through its device memory into a second pinned buffer; a host queue waits for the same signal
  // and reads the last word.
  void producerToConsumers(Side producer, Side consumer, uint32_t pattern) {
    SCOPED_TRACE(std::string(producer.name) + " -> " + consumer.name + " and host");
    auto pDevice = makeBuffer(producer.device, kBytes, MemoryKind::Device);
    auto pOut = makeBuffer(producer.device, kBytes, MemoryKind::HostPinned);
    auto cIn = makeBuffer(consumer.device, kBytes, MemoryKind::HostPinned);
    auto cDevice = makeBuffer(consumer.device, kBytes, MemoryKind::Device);
    auto cOut = makeBuffer(consumer.device, kBytes, MemoryKind::HostPinned);
    for (baton::Buffer b : {*pOut, *cIn, *cOut}) std::memset(map(b), 0, kBytes);
    auto produced = makeSemaphore("produced"), consumed = makeSemaphore("consumed"),
         hostSaw = makeSemaphore("host saw");

    std::atomic<int> issued{0};
    CopyWords copy{map<uint32_t>(*pOut), map<uint32_t>(*cIn), kWords};
    auto consumerWork = makeReplayCommands(consumer.device, [&](baton::CommandBuffer cb) {
      EXPECT_OK(cb.native(countIssue, &issued));
      EXPECT_OK(cb.hostCall(&CopyWords::run, &copy));
      EXPECT_OK(cb.copyBuffer(*cIn, 0, *cDevice, 0, kBytes));
      EXPECT_OK(cb.copyBuffer(*cDevice, 0, *cOut, 0, kBytes));
    });
    ASSERT_OK(submit(consumer.queue, {{*produced, 1}}, {*consumerWork}, {{*consumed, 1}}));
    HostRead reader{map<uint32_t>(*pOut) + kWords - 1};
    auto hostWork = makeCommands(
        *host_, [&](baton::CommandBuffer cb) { EXPECT_OK(cb.hostCall(&HostRead::run, &reader)); });
    ASSERT_OK(submit(hostQueue_, {{*produced, 1}}, {*hostWork}, {{*hostSaw, 1}}));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // issuing is asynchronous
    EXPECT_EQ(issued.load(), 0) << "held until the producer's signal exists";
    EXPECT_EQ(hostSaw->wait(1, 0), Result::Timeout);

    std::unique_ptr<Gate> gate;
    if (producer.kernels) gate = std::make_unique<Gate>(producer.device, *producer.kernels);
    auto producerWork = makeCommands(producer.device, [&](baton::CommandBuffer cb) {
      if (gate) gate->record(cb);
      EXPECT_OK(cb.fillBuffer(*pDevice, 0, kBytes, pattern));
      EXPECT_OK(cb.copyBuffer(*pDevice, 0, *pOut, 0, kBytes));
    });
    ASSERT_OK(submit(producer.queue, {}, {*producerWork}, {{*produced, 1}}));
    if (gate) {
      // Another backend cannot wait GPU-side for this signal: the consumers stay held until
      // the value is reached, which the gate prevents.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_EQ(issued.load(), 0) << "issued before the other backend's signal was reached";
      EXPECT_EQ(consumed->wait(1, 2 * kMs), Result::Timeout);
      EXPECT_EQ(hostSaw->wait(1, 0), Result::Timeout);
      gate->open();
    } else {
      std::printf("[ %s producer not gated: %s ]\n", producer.name, producer.noGate.c_str());
    }

    baton::SemaphoreValue both[] = {{*consumed, 1}, {*hostSaw, 1}};
    ASSERT_OK(instance_->waitSemaphores(both, baton::WaitMode::All, kLongNs)) << sink_.dump();
    EXPECT_EQ(issued.load(), 1);
    EXPECT_EQ(reader.seen.load(), pattern);
    auto* words = map<uint32_t>(*cOut);
    for (uint64_t i = 0; i < kWords; i += 97) ASSERT_EQ(words[i], pattern) << "word " << i;
    EXPECT_EQ(words[kWords - 1], pattern);
    EXPECT_OK(consumer.device.waitIdle());
    EXPECT_OK(producer.device.waitIdle());
  }

  baton::PhysicalDevice cudaPhysical_;
  baton::PhysicalDeviceProperties cudaProps_;
  baton::UniqueDevice cuda_, host_;
  baton::Queue cudaQueue_, hostQueue_, hostQueue2_;
  Kernels cudaKernels_;
  std::string cudaKernelsMissing_ = "no CUDA test hooks linked in";
};

TEST_P(CrossBackendTest, HipSignalIsWaitedByCudaAndHostQueues) {
  producerToConsumers(hipSide(), cudaSide(), 0x41D0C0DAu);
}

TEST_P(CrossBackendTest, CudaSignalIsWaitedByHipAndHostQueues) {
  producerToConsumers(cudaSide(), hipSide(), 0xC0DA41D0u);
}

// A host queue produces (a host call writes the HIP device's pinned memory), HIP consumes and
// copies it through its device memory, and CUDA and the host consume HIP's result — every
// consumer submitted before its producer, the host queue's producer last.
TEST_P(CrossBackendTest, HostToHipToCudaAndHost) {
  auto hipIn = makeBuffer(*device_, 4, MemoryKind::HostPinned);
  auto hipDevice = makeBuffer(*device_, 4, MemoryKind::Device);
  auto hipOut = makeBuffer(*device_, 4, MemoryKind::HostPinned);
  auto cudaIn = makeBuffer(*cuda_, 4, MemoryKind::HostPinned);
  auto cudaOut = makeBuffer(*cuda_, 4, MemoryKind::HostPinned);
  for (baton::Buffer b : {*hipIn, *hipOut, *cudaIn, *cudaOut}) *map<uint32_t>(b) = 0;
  auto toHip = makeSemaphore("host->hip"), fromHip = makeSemaphore("hip->cuda,host"),
       cudaDone = makeSemaphore("cuda done"), hostDone = makeSemaphore("host done");

  CopyWords toCuda{map<uint32_t>(*hipOut), map<uint32_t>(*cudaIn), 1};
  auto cudaWork = makeCommands(*cuda_, [&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.hostCall(&CopyWords::run, &toCuda));
    EXPECT_OK(cb.copyBuffer(*cudaIn, 0, *cudaOut, 0, 4));
  });
  ASSERT_OK(submit(cudaQueue_, {{*fromHip, 1}}, {*cudaWork}, {{*cudaDone, 1}}));
  HostRead reader{map<uint32_t>(*hipOut)};
  auto hostRead = makeCommands(
      *host_, [&](baton::CommandBuffer cb) { EXPECT_OK(cb.hostCall(&HostRead::run, &reader)); });
  ASSERT_OK(submit(hostQueue_, {{*fromHip, 1}}, {*hostRead}, {{*hostDone, 1}}));
  auto hipWork = makeCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.copyBuffer(*hipIn, 0, *hipDevice, 0, 4));
    EXPECT_OK(cb.copyBuffer(*hipDevice, 0, *hipOut, 0, 4));
  });
  ASSERT_OK(submit(queue(1), {{*toHip, 1}}, {*hipWork}, {{*fromHip, 1}}));
  EXPECT_EQ(fromHip->wait(1, kShortNs), Result::Timeout) << "nothing signalled host->hip yet";
  // The producer, on a second host queue (on the first it would wait behind its consumer).
  HostWrite writer{map<uint32_t>(*hipIn), 0xFEEDu};
  auto hostWrite = makeCommands(
      *host_, [&](baton::CommandBuffer cb) { EXPECT_OK(cb.hostCall(&HostWrite::run, &writer)); });
  ASSERT_OK(submit(hostQueue2_, {}, {*hostWrite}, {{*toHip, 1}}));

  baton::SemaphoreValue both[] = {{*cudaDone, 1}, {*hostDone, 1}};
  ASSERT_OK(instance_->waitSemaphores(both, baton::WaitMode::All, kLongNs)) << sink_.dump();
  EXPECT_EQ(reader.seen.load(), 0xFEEDu);
  EXPECT_EQ(*map<uint32_t>(*cudaOut), 0xFEEDu);
}

// One timeline through a ring of queues of three backends: step i runs on HIP, CUDA or the host
// (i % 3), waits for i and signals i + 1. Every queue's steps are submitted in order, the queues
// last to first, so each wait is for a value whose signal is submitted later, on another backend;
// the host starts the ring.
TEST_P(CrossBackendTest, RingThroughHipCudaAndHostQueues) {
  auto s = makeSemaphore("ring");
  const uint64_t kSteps = 3 * 50;
  baton::Queue ring[] = {queue(2), cudaQueue_, hostQueue_};
  for (int q = 2; q >= 0; --q)
    for (uint64_t step = 1 + static_cast<uint64_t>(q); step <= kSteps; step += 3)
      ASSERT_OK(submit(ring[q], {{*s, step}}, {}, {{*s, step + 1}}));
  EXPECT_EQ(s->wait(2, kShortNs), Result::Timeout) << "the ring started without the host";
  ASSERT_OK(s->signal(1));
  ASSERT_OK(s->wait(kSteps + 1, kLongNs)) << sink_.dump();
  uint64_t v = 0;
  ASSERT_OK(s->getValue(&v));
  EXPECT_EQ(v, kSteps + 1);
}

// A failed HIP submission (its host call fails) fails its signal; the CUDA and host queues that
// wait for it fail their own signals with the first reason, and nothing of theirs runs.
TEST_P(CrossBackendTest, HipFailureReachesCudaAndHostWaiters) {
  auto out = makeBuffer(*cuda_, 4, MemoryKind::HostPinned);
  *map<uint32_t>(*out) = 0;
  auto hipSignal = makeSemaphore("hip failed"), cudaDone = makeSemaphore("cuda after"),
       hostDone = makeSemaphore("host after");
  std::atomic<int> ran{0};
  auto cudaWork = makeCommands(
      *cuda_, [&](baton::CommandBuffer cb) { EXPECT_OK(cb.fillBuffer(*out, 0, 4, 0xBADu)); });
  ASSERT_OK(submit(cudaQueue_, {{*hipSignal, 1}}, {*cudaWork}, {{*cudaDone, 1}}));
  auto hostWork = makeCommands(*host_, [&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.hostCall(
        [](void* user) {
          static_cast<std::atomic<int>*>(user)->fetch_add(1);
          return Result::Success;
        },
        &ran));
  });
  ASSERT_OK(submit(hostQueue_, {{*hipSignal, 1}}, {*hostWork}, {{*hostDone, 1}}));
  auto failing = makeCommands([&](baton::CommandBuffer cb) {
    EXPECT_OK(cb.hostCall([](void*) { return Result::ErrorInvalidState; }, nullptr));
  });
  ASSERT_OK(submit(queue(0), {}, {*failing}, {{*hipSignal, 1}}));

  for (baton::Semaphore s : {*hipSignal, *cudaDone, *hostDone}) {
    EXPECT_EQ(s.wait(1, kLongNs), Result::ErrorSemaphoreFailed);
    char reason[512];
    ASSERT_OK(s.getFailureReason(reason, sizeof reason));
    EXPECT_TRUE(containsText(reason, "ErrorInvalidState")) << reason;
  }
  EXPECT_OK(cuda_->waitIdle());
  EXPECT_OK(host_->waitIdle());
  EXPECT_EQ(*map<uint32_t>(*out), 0u) << "the CUDA consumer ran although HIP failed";
  EXPECT_EQ(ran.load(), 0) << "the host consumer ran although HIP failed";
}

// Where HIP runs on the same GPU as CUDA (the translation library on an NVIDIA GPU), both name it
// by the same UUID — the one Vulkan's deviceUUID matches. Compared only for devices of the same
// name: two backends on different GPUs have nothing to agree on.
TEST_P(CrossBackendTest, SameGpuHasTheSameUuidOnHipAndCuda) {
  int compared = 0;
  for (const baton::PhysicalDeviceProperties& hipProps : gpuProps_) {
    uint32_t count = 0;
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, nullptr));
    std::vector<baton::PhysicalDevice> all(count);
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, all.data()));
    for (baton::PhysicalDevice p : all) {
      baton::PhysicalDeviceProperties c;
      ASSERT_OK(p.getProperties(&c));
      if (c.backend != BackendKind::Cuda || c.ordinal != hipProps.ordinal ||
          std::strcmp(c.name, hipProps.name) != 0)
        continue;
      EXPECT_EQ(std::memcmp(c.uuid, hipProps.uuid, sizeof c.uuid), 0)
          << "cuda:" << c.ordinal << " and hip:" << hipProps.ordinal << " (" << c.name
          << ") report different UUIDs";
      ++compared;
    }
  }
  if (compared == 0)
    GTEST_SKIP() << "no HIP device has the name of the CUDA device of its ordinal (hip:0 \""
                 << props_.name << "\", cuda:0 \"" << cudaProps_.name << "\")";
  std::printf("%d device(s): the same UUID on HIP and CUDA\n", compared);
}

INSTANTIATE_TEST_SUITE_P(, CrossBackendTest, ::testing::Values(BackendKind::Hip),
                         BackendParamName());

}  // namespace
}  // namespace baton_test
