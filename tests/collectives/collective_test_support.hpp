// What the collective tests share: the fixture (ranks of one process on the devices of one
// backend), element encoding for every ElementType, and a one-call "record, submit, signal".
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backend_fixture.hpp"
#include "collectives.hpp"
#include "elements.hpp"
#include "test_support.hpp"

namespace baton_test {

using namespace baton;

// ---- the fixture ------------------------------------------------------------------------------

// One rank of the process's group: its device, a queue per use, and its communicator.
// BATON_TEST_PROGRESS=1: the tests say on stderr where they are (for a run that hangs on a GPU
// machine without a debugger, whose output ends at the last line printed).
inline void progress(const char* where) {
  static const bool on = std::getenv("BATON_TEST_PROGRESS") != nullptr;
  if (on) std::fprintf(stderr, "[progress] %s\n", where);
}

struct Rank {
  UniqueDevice device;
  Queue compute, comm;  // queue 0 and queue 1
  UniqueCommunicator communicator;
};

// Ranks on the devices of one backend (CUDA or HIP) in this process. Skips, with the reason, when
// the backend, two devices or the collective library are absent — fails instead where
// BATON_TEST_REQUIRE_COLLECTIVES=1 (the registrations on the fake driver set it).
// tests/cuda/fake/fake_cuda.hpp's BatonFakeNcclStats, from the emulated NCCL (null elsewhere).
struct FakeNcclStats {
  uint64_t communicatorsLive, collectivesExecuted, p2pExecuted, opsAborted, opsLive, persistentLive;
};
using FakeNcclStatsFn = void (*)(FakeNcclStats*);
inline FakeNcclStatsFn fakeNcclStats(BackendKind kind) {
  const char* path =
      std::getenv(kind == BackendKind::Hip ? "BATON_RCCL_LIBRARY" : "BATON_NCCL_LIBRARY");
  void* module = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return module ? reinterpret_cast<FakeNcclStatsFn>(dlsym(module, "batonFakeNcclStats")) : nullptr;
}

class CollectiveTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  // The communicators go first, as an application's should: with non-blocking calls on a library
  // without ncclCommRevoke, a collective stuck on the GPU ends only at their abort, and freeing
  // memory on that device (cuMemFree synchronizes the device) would wait for it.
  void TearDown() override {
    progress("TearDown");
    for (Rank& r : ranks_) r.communicator.reset();
    progress("TearDown: communicators destroyed");
  }
  // physicals_: instance_'s physical devices of backend `kind`.
  void findPhysicals(BackendKind kind) {
    physicals_.clear();
    uint32_t count = 0;
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> all(count);
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, all.data()));
    for (PhysicalDevice p : all) {
      PhysicalDeviceProperties props;
      ASSERT_OK(p.getProperties(&props));
      if (props.backend == kind) physicals_.push_back(p);
    }
  }
  void SetUp() override {
    ASSERT_OK(createInstance(sink_.instanceInfo(), instance_.put()));
    const BackendKind kind = GetParam();
    const bool required = std::getenv("BATON_TEST_REQUIRE_COLLECTIVES") &&
                          std::string(std::getenv("BATON_TEST_REQUIRE_COLLECTIVES")) == "1" &&
                          backendRequired(kind);
    CollectiveSupport support;
    ASSERT_OK(instance_->getCollectiveSupport(kind, &support));
    ASSERT_NO_FATAL_FAILURE(findPhysicals(kind));
    std::string absent;
    if (!support.available)
      absent = std::string(backendName(kind)) + " collectives unavailable: " + support.reason;
    else if (physicals_.size() < minDevices_)
      absent = std::string(backendName(kind)) + ": " + std::to_string(physicals_.size()) +
               " device(s); the collective tests need " + std::to_string(minDevices_) +
               " (BATON_FAKE_CUDA_DEVICES=3 on the fake)";
    if (!absent.empty()) {
      if (required) FAIL() << absent << " (required here: BATON_TEST_REQUIRE_COLLECTIVES=1)";
      GTEST_SKIP() << absent;
    }
    support_ = support;
    // The emulated NCCL captures the collectives of ranks of one process, which the engine
    // refuses for NCCL itself (stream::checkGraphCapture): the suite's graph runs use them.
    // BATON_TEST_ALLOW_IN_PROCESS_CAPTURE=1 allows them on a real library too (experiments).
    const char* allow = std::getenv("BATON_TEST_ALLOW_IN_PROCESS_CAPTURE");
    baton::stream::setInProcessGraphCaptureAllowedForTests(fakeNcclStats(kind) != nullptr ||
                                                           (allow && std::string(allow) == "1"));
  }

  // `n` ranks (n <= devices), made with createCommunicators; timeout in ns (0: default). Call it
  // inside ASSERT_NO_FATAL_FAILURE: after a failure ranks_ holds fewer than `n`.
  void makeRanks(size_t n, uint64_t timeoutNs = 0) {
    ASSERT_LE(n, physicals_.size()) << "not enough devices";
    std::vector<Device> devices;
    for (size_t i = 0; i < n; ++i) {
      Rank r;
      DeviceCreateInfo info;
      info.queueCount = 2;
      ASSERT_OK(instance_->createDevice(physicals_[i], info, r.device.put()));
      ASSERT_OK(r.device->getQueue(0, &r.compute));
      ASSERT_OK(r.device->getQueue(1, &r.comm));
      devices.push_back(*r.device);
      ranks_.push_back(std::move(r));
    }
    std::vector<Communicator> comms(n);
    CommunicatorGroupCreateInfo info;
    info.timeoutNs = timeoutNs;
    info.debugName = "test";
    ASSERT_OK(instance_->createCommunicators(devices, info, comms.data()));
    for (size_t i = 0; i < n; ++i) ranks_[i].communicator.reset(comms[i]);
  }

  Buffer deviceBuffer(size_t rank, uint64_t bytes) {
    Buffer b;
    BufferCreateInfo info;
    info.size = bytes;
    EXPECT_OK(ranks_[rank].device->createBuffer(info, &b));
    buffers_.emplace_back(b);
    return b;
  }
  Buffer pinnedBuffer(size_t rank, uint64_t bytes) {
    Buffer b;
    BufferCreateInfo info;
    info.size = bytes;
    info.memory = MemoryKind::HostPinned;
    EXPECT_OK(ranks_[rank].device->createBuffer(info, &b));
    buffers_.emplace_back(b);
    return b;
  }
  // Writes `bytes` into b at offset 0, synchronously.
  void upload(size_t rank, Buffer b, const std::vector<uint8_t>& bytes) {
    for (size_t at = 0; at < bytes.size(); at += kMaxUpdateSize) {
      const uint64_t n = std::min<uint64_t>(kMaxUpdateSize, bytes.size() - at);
      runAndWait(rank, [&](CommandBuffer cb) { return cb.updateBuffer(b, at, n, &bytes[at]); });
    }
  }
  // Reads `bytes` bytes of b through a pinned staging buffer.
  std::vector<uint8_t> download(size_t rank, Buffer b, uint64_t bytes) {
    Buffer staging = pinnedBuffer(rank, bytes);
    runAndWait(rank, [&](CommandBuffer cb) { return cb.copyBuffer(b, 0, staging, 0, bytes); });
    void* p = nullptr;
    EXPECT_OK(staging.map(&p));
    std::vector<uint8_t> out(bytes);
    if (p) std::memcpy(out.data(), p, bytes);
    return out;
  }

  // Records with `record`, submits to `queue` (default: the rank's comm queue) with `waits`,
  // signalling `signal`.
  Result submit(size_t rank, const std::function<Result(CommandBuffer)>& record,
                std::vector<SemaphoreValue> waits, std::vector<SemaphoreValue> signals,
                Queue queue = Queue()) {
    CommandBuffer cb;
    Result r = ranks_[rank].device->createCommandBuffer(testCommandBufferInfo(), &cb);
    if (r != Result::Success) return r;
    commandBuffers_.emplace_back(cb);
    EXPECT_OK(cb.begin());
    r = record(cb);
    if (r != Result::Success) return r;
    EXPECT_OK(cb.end());
    SubmitInfo info;
    info.waits = waits;
    info.commandBuffers = Span<const CommandBuffer>(&cb, 1);
    info.signals = signals;
    return (queue ? queue : ranks_[rank].comm).submit(info);
  }
  // Submits `cb` alone to `queue`, signalling `signal` to `value`.
  static Result submitOne(Queue queue, CommandBuffer cb, Semaphore signal, uint64_t value = 1) {
    SubmitInfo info;
    info.commandBuffers = Span<const CommandBuffer>(&cb, 1);
    SemaphoreValue sv{signal, value};
    if (signal) info.signals = Span<const SemaphoreValue>(&sv, 1);
    return queue.submit(info);
  }
  void runAndWait(size_t rank, const std::function<Result(CommandBuffer)>& record) {
    Semaphore s = semaphore();
    ASSERT_OK(submit(rank, record, {}, {{s, 1}}, ranks_[rank].compute));
    ASSERT_OK(s.wait(1, kLongNs));
  }
  Semaphore semaphore(const char* name = nullptr) {
    Semaphore s;
    SemaphoreCreateInfo info;
    info.debugName = name;
    EXPECT_OK(instance_->createSemaphore(info, &s));
    semaphores_.emplace_back(s);
    return s;
  }
  Communicator comm(size_t rank) const { return *ranks_[rank].communicator; }

  size_t minDevices_ = 2;  // fewer: the test skips (set before SetUp)
  MessageSink sink_;
  UniqueInstance instance_;
  CollectiveSupport support_;
  std::vector<PhysicalDevice> physicals_;
  // Destroyed in reverse: the objects of the ranks' devices first, then the ranks (each its
  // communicator before its device).
  std::vector<Rank> ranks_;
  std::vector<UniqueSemaphore> semaphores_;
  std::vector<UniqueCommandBuffer> commandBuffers_;
  std::vector<UniqueBuffer> buffers_;
};

struct CollectiveParamName {
  std::string operator()(const ::testing::TestParamInfo<BackendKind>& info) const {
    return backendName(info.param);
  }
};

}  // namespace baton_test
