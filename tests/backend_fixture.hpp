// The fixture of the conformance suite: every TEST_P runs once per backend (host, cuda, hip) and
// skips, with the backend's own reason, where that backend is not available. Instance names end
// with the backend (SemaphoreTest.WaitAny/host) so a run shows what ran where.
#pragma once

#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace baton_test {

struct BackendParamName {
  std::string operator()(const ::testing::TestParamInfo<baton::BackendKind>& info) const {
    return baton::backendName(info.param);
  }
};

// Instantiates a BackendTest-derived suite for every backend baton knows.
#define BATON_INSTANTIATE_FOR_BACKENDS(Suite)                                   \
  INSTANTIATE_TEST_SUITE_P(                                                     \
      , Suite,                                                                  \
      ::testing::Values(::baton::BackendKind::Host, ::baton::BackendKind::Cuda, \
                        ::baton::BackendKind::Hip),                             \
      ::baton_test::BackendParamName())

// Whether BATON_TEST_REQUIRE_BACKENDS (backend names, comma-separated: "hip,cuda") names `kind`.
// The registrations on the fake driver set it: there a backend that no longer loads must fail
// the run, not skip every test of it.
inline bool backendRequired(baton::BackendKind kind) {
  const char* list = std::getenv("BATON_TEST_REQUIRE_BACKENDS");
  if (!list) return false;
  const std::string names = std::string(",") + list + ",";
  return names.find(std::string(",") + baton::backendName(kind) + ",") != std::string::npos;
}

class BackendTest : public ::testing::TestWithParam<baton::BackendKind> {
 protected:
  // Queues of the fixture's device: at least 2 (cross-queue tests need them), at most 4.
  static constexpr uint32_t kWantedQueues = 4;

  void SetUp() override {
    using namespace baton;
    const BackendKind kind = GetParam();
    ASSERT_OK(createInstance(sink_.instanceInfo(), instance_.put()));

    uint32_t count = 0;
    ASSERT_OK(instance_->enumerateBackends(&count, nullptr));
    std::vector<BackendInfo> infos(count);
    ASSERT_OK(instance_->enumerateBackends(&count, infos.data()));
    infos.resize(count);
    const BackendInfo* info = nullptr;
    for (const BackendInfo& b : infos)
      if (b.kind == kind) info = &b;
    std::string absent;
    if (!info)
      absent = ": not known to this build of baton";
    else if (!info->compiled)
      absent =
          std::string(": ") + (info->reason[0] ? info->reason : "not compiled into this build");
    else if (!info->available)
      absent =
          std::string(": unavailable: ") + (info->reason[0] ? info->reason : "(no reason given)");
    else if (info->deviceCount == 0)
      absent = std::string(": no devices") +
               (info->reason[0] ? std::string(": ") + info->reason : std::string());
    if (!absent.empty()) {
      if (backendRequired(kind))
        FAIL() << backendName(kind) << absent
               << "\n(required here by BATON_TEST_REQUIRE_BACKENDS: it must not skip)";
      GTEST_SKIP() << backendName(kind) << absent;
    }

    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> physicals(count);
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, physicals.data()));
    physicals.resize(count);
    for (PhysicalDevice p : physicals) {
      PhysicalDeviceProperties props;
      ASSERT_OK(p.getProperties(&props));
      if (props.backend == kind) {
        physical_ = p;
        props_ = props;
        break;
      }
    }
    ASSERT_TRUE(physical_) << backendName(kind) << " reports " << info->deviceCount
                           << " devices but enumeratePhysicalDevices lists none";
    ASSERT_GE(props_.maxQueues, 2u) << "the conformance suite needs devices with 2+ queues";

    DeviceCreateInfo deviceInfo;
    deviceInfo.queueCount = std::min(kWantedQueues, props_.maxQueues);
    ASSERT_OK(instance_->createDevice(physical_, deviceInfo, device_.put()));
    for (uint32_t i = 0; i < deviceInfo.queueCount; ++i) {
      Queue q;
      ASSERT_OK(device_->getQueue(i, &q));
      queues_.push_back(q);
    }
  }

  void TearDown() override {
    // Tests destroy what they create (their Unique locals are gone by now), so destroying the
    // device and the instance must find no live children.
    if (device_) {
      EXPECT_OK(device_.release().destroy()) << "\n" << sink_.dump();
    }
    if (instance_) {
      EXPECT_OK(instance_.release().destroy()) << "\n" << sink_.dump();
    }
  }

  baton::BackendKind backend() const { return GetParam(); }
  bool hostBackend() const { return GetParam() == baton::BackendKind::Host; }
  uint32_t queueCount() const { return static_cast<uint32_t>(queues_.size()); }
  // Queue i modulo the queue count, so tests written for 4 queues still run with 2.
  baton::Queue queue(uint32_t i) const { return queues_[i % queues_.size()]; }
  baton::Instance instance() const { return *instance_; }
  baton::Device device() const { return *device_; }

  baton::UniqueSemaphore makeSemaphore(uint64_t initialValue = 0, const char* name = nullptr) {
    baton::SemaphoreCreateInfo info;
    info.initialValue = initialValue;
    info.debugName = name;
    baton::UniqueSemaphore s;
    EXPECT_OK(instance_->createSemaphore(info, s.put()));
    return s;
  }

  std::vector<baton::UniqueSemaphore> makeSemaphores(size_t n, uint64_t initialValue = 0) {
    std::vector<baton::UniqueSemaphore> out;
    for (size_t i = 0; i < n; ++i) out.push_back(makeSemaphore(initialValue));
    return out;
  }

  // A command buffer recorded by `record` (begin, record, end).
  // Recorded with the suite's usage (testCommandBufferInfo: graph command buffers in the -graph
  // registrations).
  baton::UniqueCommandBuffer makeCommandBuffer(
      const std::function<void(baton::CommandBuffer)>& record) {
    return makeCommandBuffer(testCommandBufferInfo(), record);
  }
  // Always replayed: for native callbacks that are not capturable.
  baton::UniqueCommandBuffer makeReplayCommandBuffer(
      const std::function<void(baton::CommandBuffer)>& record) {
    return makeCommandBuffer(baton::CommandBufferCreateInfo(), record);
  }
  baton::UniqueCommandBuffer makeCommandBuffer(
      const baton::CommandBufferCreateInfo& info,
      const std::function<void(baton::CommandBuffer)>& record) {
    baton::UniqueCommandBuffer cb;
    EXPECT_OK(device_->createCommandBuffer(info, cb.put()));
    EXPECT_OK(cb->begin());
    record(*cb);
    EXPECT_OK(cb->end());
    return cb;
  }

  baton::UniqueBuffer makeBuffer(uint64_t size,
                                 baton::MemoryKind memory = baton::MemoryKind::HostPinned) {
    baton::BufferCreateInfo info;
    info.size = size;
    info.memory = memory;
    baton::UniqueBuffer b;
    EXPECT_OK(device_->createBuffer(info, b.put()));
    return b;
  }

  // Host pointer of a mappable (HostPinned) buffer.
  template <class T = uint8_t>
  T* map(baton::Buffer buffer) {
    void* p = nullptr;
    EXPECT_OK(buffer.map(&p));
    return static_cast<T*>(p);
  }

  // One SubmitInfo on `q`. The vectors live until the call returns, as Span requires.
  baton::Result submit(baton::Queue q, std::vector<baton::SemaphoreValue> waits,
                       std::vector<baton::CommandBuffer> commandBuffers,
                       std::vector<baton::SemaphoreValue> signals) {
    baton::SubmitInfo info;
    info.waits = waits;
    info.commandBuffers = commandBuffers;
    info.signals = signals;
    return q.submit(info);
  }

  MessageSink sink_;
  baton::UniqueInstance instance_;
  baton::PhysicalDevice physical_;
  baton::PhysicalDeviceProperties props_;
  baton::UniqueDevice device_;
  std::vector<baton::Queue> queues_;
};

// An ordered log of events appended from host callbacks (queue worker threads) and read by the
// test thread.
class EventLog {
 public:
  void add(int event) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(event);
  }
  std::vector<int> events() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<int> events_;
};

// userData of a host callback that appends `event` to `log`. Keep entries alive (and at a stable
// address) until the submissions that use them have finished.
struct LogEntry {
  EventLog* log;
  int event;
  baton::Result result = baton::Result::Success;  // what the callback returns
};

inline baton::Result appendToLog(void* userData) {
  auto* e = static_cast<LogEntry*>(userData);
  e->log->add(e->event);
  return e->result;
}

inline baton::Result appendToLogNative(const baton::NativeQueue&, void* userData) {
  return appendToLog(userData);
}

}  // namespace baton_test
