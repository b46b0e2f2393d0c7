// The fault sweep (docs/testing.md, 'Reliability'): every driver call a representative workload
// makes is made to fail, one at a time, and baton must stay defined. Written once for CUDA and HIP
// (the backends share impl/stream, and inject at the same wrapper), parameterised by backend like
// tests/stream; the hooks of each backend linked in (fault_hooks_*.cpp) select the instances.
//
// How: the workload runs once with call counting on, which lists every (entry point, number of
// calls) it really made; then once per (entry point, occurrence) pair with that one call failing,
// for each injected error: out of memory and invalid value (transient) and illegal address
// (sticky: the device is lost; every run creates its own instance and devices, so a lost device
// never outlives its run); then a few runs with seeded random faults. Each run checks:
//   - every baton call returns a defined Result, and every error it returns names the failed
//     driver call and its error ("cuEventRecord failed: CUDA_ERROR_INVALID_VALUE (...)");
//   - every semaphore value whose signal the workload had submitted is reached or fails (or its
//     device is lost), and a failure names the driver call and its error;
//   - every host wait returns within a bound (a Timeout there is a hang, reported with the pair;
//     a watchdog aborts the run, naming the pair, if a call that cannot be bounded never returns);
//   - a deallocaBuffer that returned Success consumed the buffer's handle (a second one returns
//     ErrorInvalidHandle, whatever happened to the free on the queue); one that returned an error
//     consumed nothing (Buffer::destroy of it succeeds) — queue.hpp's rule;
//   - after teardown, no baton thread is left (/proc/self/task, after a settle period) and the
//     stream machinery's counters (baton::stream::stats(): events, timepoints, records in flight)
//     are back at their baseline; ASan and LeakSanitizer check the rest (CI runs this under them).
// No failure is exempt from naming itself: capability and memory-pool queries fail the
// enumeration or the device's creation with their error, and a failed context switch fails the
// operation (or the submission) that needed it (fault_cases.cpp pins each of these at its call).
// Call counts that depend on timing (event polling) differ from run to run: a pair that a faulted
// run does not reach is counted as not reached, not as injected.
//
// Knobs (environment): BATON_FAULT_SWEEP_MAX_OCCURRENCES (occurrences swept per entry point,
// spread over its calls; default 8, 0 = all), BATON_FAULT_SWEEP_RANDOM_RUNS (default 8),
// BATON_FAULT_SWEEP_VERBOSE=1 (print every run), BATON_FAULT_SWEEP_ONLY (run only the pairs whose
// label contains this text, such as "cuEventSynchronize#0 out of memory", and no random runs) with
// BATON_FAULT_SWEEP_REPEAT (each such pair that many times, default 1): to chase one pair's
// failure under load.
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"
#include "fault_hooks.hpp"
#include "stream_backend.hpp"
#include "test_support.hpp"

namespace baton_test {
namespace {

using baton::Result;

// How long a host wait for a value that must be reached or fail may take before it counts as a
// hang: detection is one event query or one wake of a completion thread, but sanitizer builds on
// a loaded 2-core CI machine are slow.
constexpr uint64_t kBoundNs = 10'000 * kMs;
// How long a whole run may take before the watchdog declares a hang in a call that has no
// timeout (device or instance destroy) and aborts.
constexpr auto kRunLimit = std::chrono::seconds(120);
// How long threads and counters may take to settle after teardown (threads exit after their
// objects are released; the last reference may drop on another thread).
constexpr auto kSettle = std::chrono::seconds(3);

const char* kFaultNames[] = {"out of memory", "invalid value", "illegal address"};

// Entry points that release a driver object. Failing one before the driver is called would leak
// the driver's own object (memory, the emulated stream's thread) by construction, which no
// library can prevent: there the driver is called and its result then replaced
// (injectFaultAfterCall), as when a release reports an error of earlier asynchronous work. Not the
// queue-ordered frees (cuMemFreeAsync, hipFreeAsync): baton releases the memory of one that fails
// itself (impl/stream/issuer.hpp, Dealloca), so they fail before the call, and LeakSanitizer
// checks that nothing leaks (after the call, the memory would be freed twice).
bool releases(const std::string& api) {
  if (api.find("FreeAsync") != std::string::npos) return false;
  for (const char* word : {"Destroy", "Free", "Release"})
    if (api.find(word) != std::string::npos) return true;
  return false;
}

size_t threadCount() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

bool definedResult(Result r) {
  const int32_t v = static_cast<int32_t>(r);
  return v >= static_cast<int32_t>(Result::ErrorInvalidState) &&
         v <= static_cast<int32_t>(Result::Timeout);
}

// What one run injected, and what its messages must name.
struct Injection {
  std::string label;          // "cuEventRecord#3 invalid value", "random seed 5"
  const char* api = nullptr;  // null: nothing injected at a chosen call (record, random)
  const char* error = nullptr;
  bool sticky = false;
  bool any = false;  // random faults: messages name the error, any entry point
};

// Aborts the process, naming the run, when a run outlives kRunLimit (a hang in a call that has
// no timeout). A gtest failure could not be reported from a hung thread.
class Watchdog {
 public:
  Watchdog() : thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void arm(const std::string& label) {
    std::lock_guard<std::mutex> lock(mutex_);
    label_ = label;
    deadline_ = Clock::now() + kRunLimit;
    armed_ = true;
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      if (armed_ && Clock::now() > deadline_) {
        std::fprintf(stderr, "fault sweep: HANG: the run with %s did not finish in %lld s\n",
                     label_.c_str(), static_cast<long long>(kRunLimit.count()));
        std::fflush(stderr);
        std::abort();
      }
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool armed_ = false;
  std::string label_;
  Clock::time_point deadline_;
  std::thread thread_;
};

// Host call and native callback of the workload: they run on baton's threads.
struct HostWrite {
  uint32_t* target = nullptr;
  std::atomic<uint32_t> runs{0};
  static Result run(void* user) {
    auto* self = static_cast<HostWrite*>(user);
    if (self->target) __atomic_store_n(self->target, self->runs.load() + 1, __ATOMIC_SEQ_CST);
    self->runs.fetch_add(1);
    return Result::Success;
  }
};
struct NativeCall {
  std::atomic<uint32_t> runs{0};
  static Result run(const baton::NativeQueue& q, void* user) {
    auto* self = static_cast<NativeCall*>(user);
    if (!q.stream) return Result::ErrorInvalidArgument;  // a GPU queue always has its stream
    self->runs.fetch_add(1);
    return Result::Success;
  }
};

// What a run found.
struct Outcome {
  std::vector<std::string> problems;
  int hangs = 0;
};

// One run of the workload on fresh objects, and its checks. Problems are collected as text (the
// run continues after each, so that one fault shows everything it breaks).
class WorkloadRun {
 public:
  WorkloadRun(const FaultHooks& hooks, const Injection& injection)
      : hooks_(hooks), inj_(injection) {}

  std::vector<std::string> problems;
  int hangs = 0;

  Outcome outcome() const { return {problems, hangs}; }

  void run() {
    using namespace baton;
    if (!call("createInstance", createInstance(sink_.instanceInfo(), instance_.put()))) return;
    // The backend's devices: two when the driver offers them (BATON_FAKE_CUDA_DEVICES=2).
    uint32_t count = 0;
    if (!call("enumeratePhysicalDevices", instance_->enumeratePhysicalDevices(&count, nullptr)))
      return;
    std::vector<PhysicalDevice> all(count);
    if (!call("enumeratePhysicalDevices", instance_->enumeratePhysicalDevices(&count, all.data())))
      return;
    std::vector<PhysicalDevice> gpus;
    for (uint32_t i = 0; i < count && gpus.size() < 2; ++i) {
      PhysicalDeviceProperties p;
      if (call("getProperties", all[i].getProperties(&p)) && p.backend == hooks_.kind &&
          p.maxQueues >= 2)
        gpus.push_back(all[i]);
    }
    if (gpus.empty()) {
      // A fault during enumeration may leave the backend without devices; enumerateBackends
      // must then say why, naming the call.
      uint32_t n = 0;
      (void)instance_->enumerateBackends(&n, nullptr);
      std::vector<BackendInfo> infos(n);
      (void)instance_->enumerateBackends(&n, infos.data());
      for (const BackendInfo& b : infos)
        if (b.kind == hooks_.kind) checkMessage("the backend's devices", b.reason);
      if (!inj_.api && !inj_.any) problems.push_back("no device of the backend");
      finish();
      return;
    }
    for (size_t d = 0; d < 2; ++d) {
      DeviceCreateInfo info;
      PhysicalDeviceProperties p;
      (void)gpus[d % gpus.size()].getProperties(&p);
      info.queueCount = std::min<uint32_t>(d == 0 ? 4 : 2, p.maxQueues);
      if (d == 1 && gpus.size() < 2) break;  // one device: its queues stand in for the second's
      Dev& dev = devs_[d];
      if (!call("createDevice", instance_->createDevice(gpus[d], info, dev.device.put()))) continue;
      for (uint32_t q = 0; q < info.queueCount; ++q) {
        Queue queue;
        if (call("getQueue", dev.device->getQueue(q, &queue))) dev.queues.push_back(queue);
      }
      setUpDevice(dev);
    }
    if (!devs_[0].device) {
      finish();
      return;
    }
    for (auto& s : sems_) {
      SemaphoreCreateInfo info;
      call("createSemaphore", instance_->createSemaphore(info, s.put()));
    }
    call("createSemaphore", instance_->createSemaphore(SemaphoreCreateInfo(), gate_.put()));
    for (uint64_t frame = 1; frame <= kFrames; ++frame) submitFrame(frame);
    finish();
  }

 private:
  static constexpr uint64_t kFrames = 2;
  static constexpr uint64_t kBufferSize = 4096;
  static constexpr uint32_t kHostSites = 3;  // a1, a3, b1

  struct Dev {
    baton::UniqueDevice device;
    std::vector<baton::Queue> queues;
    baton::UniqueBuffer deviceBuffer, pinnedBuffer;
    uint32_t* pinned = nullptr;
    // Host command buffers, one per submission site (their regions differ: see setUpDevice).
    baton::UniqueCommandBuffer work, host[kHostSites];
    HostWrite hostWrite[kHostSites];
    NativeCall native;
    // A graph command buffer (recordGraph), where the driver has graphs.
    baton::UniqueCommandBuffer graph;
    HostWrite graphHost;
    NativeCall graphNative;
    bool graphs = false, graphReady = false;
  };

  // Queue i of device d; device 1 falls back to device 0's queues when there is one device.
  baton::Queue queue(size_t d, size_t i) {
    Dev& dev = devs_[d].device ? devs_[d] : devs_[0];
    if (dev.queues.empty()) return baton::Queue();
    return dev.queues[(d == 1 && !devs_[1].device ? 2 + i : i) % dev.queues.size()];
  }

  void setUpDevice(Dev& dev) {
    using namespace baton;
    // Two halves: the work command buffer writes the first, the host one the second, so that
    // submissions that the workload leaves unordered never write the same bytes.
    BufferCreateInfo info;
    info.size = 2 * kBufferSize;
    info.memory = MemoryKind::Device;
    call("createBuffer(Device)", dev.device->createBuffer(info, dev.deviceBuffer.put()));
    info.memory = MemoryKind::HostPinned;
    if (call("createBuffer(HostPinned)", dev.device->createBuffer(info, dev.pinnedBuffer.put()))) {
      void* p = nullptr;
      if (call("map", dev.pinnedBuffer->map(&p))) dev.pinned = static_cast<uint32_t*>(p);
    }

    // Work: fill, update and copy device memory to pinned memory, and a native callback.
    if (call("createCommandBuffer", dev.device->createCommandBuffer(dev.work.put())) &&
        call("begin", dev.work->begin())) {
      static const uint32_t kWords[4] = {1, 2, 3, 4};
      if (dev.deviceBuffer) {
        call("fillBuffer", dev.work->fillBuffer(*dev.deviceBuffer, 0, kBufferSize, 7));
        call("updateBuffer", dev.work->updateBuffer(*dev.deviceBuffer, 0, sizeof kWords, kWords));
        if (dev.pinnedBuffer)
          call("copyBuffer",
               dev.work->copyBuffer(*dev.deviceBuffer, 0, *dev.pinnedBuffer, 0, kBufferSize));
      }
      call("native", dev.work->native(&NativeCall::run, &dev.native));
      call("end", dev.work->end());
    }
    // Host: a host call between two pieces of GPU work (the submission is suspended around it).
    // Each site writes its own 128 bytes of the second half, and its own pinned word: a failure
    // can be reported before the failed work has drained, so that the next frame's submissions
    // may overlap the last frame's.
    for (uint32_t k = 0; k < kHostSites; ++k) {
      baton::UniqueCommandBuffer& cb = dev.host[k];
      const uint64_t region = kBufferSize + 128 * k;
      dev.hostWrite[k].target = dev.pinned ? dev.pinned + region / 4 : nullptr;
      if (!call("createCommandBuffer", dev.device->createCommandBuffer(cb.put())) ||
          !call("begin", cb->begin()))
        continue;
      if (dev.deviceBuffer) call("fillBuffer", cb->fillBuffer(*dev.deviceBuffer, region, 64, 1));
      call("hostCall", cb->hostCall(&HostWrite::run, &dev.hostWrite[k]));
      if (dev.deviceBuffer)
        call("fillBuffer", cb->fillBuffer(*dev.deviceBuffer, region + 64, 64, 2));
      call("end", cb->end());
    }
    PhysicalDevice physical;
    PhysicalDeviceProperties props;
    dev.graphs = call("getPhysicalDevice", dev.device->getPhysicalDevice(&physical)) &&
                 call("getProperties", physical.getProperties(&props)) &&
                 (props.capabilities & kCapabilityGraphCommandBuffers);
    dev.graphReady = recordGraph(dev, 0);
  }

  // The graph command buffer: built into driver graphs at end() (graph, node, instantiate and
  // capture calls), launched by its submissions; recorded again each frame (an update in place when
  // its graph is idle, else a new instantiation). A fill and an update, a captured native callback,
  // a host call that may fail with work after it (a second graph, after a host round trip), and a
  // copy to pinned memory, in their own region of the buffers' second half. False when it was not
  // recorded (a fault, or no graphs).
  bool recordGraph(Dev& dev, uint32_t pattern) {
    using namespace baton;
    if (!dev.graphs) return false;
    if (!dev.graph) {
      CommandBufferCreateInfo info;
      info.usage = CommandBufferUsage::Graph;
      info.debugName = "graph";
      if (!call("createCommandBuffer(Graph)",
                dev.device->createCommandBuffer(info, dev.graph.put())))
        return false;
    }
    if (!call("begin(graph)", dev.graph->begin())) return false;
    static const uint32_t kWords[4] = {5, 6, 7, 8};
    const uint64_t region = kBufferSize + 1024;
    if (dev.deviceBuffer) {
      call("fillBuffer(graph)", dev.graph->fillBuffer(*dev.deviceBuffer, region, 256, 9 + pattern));
      call("updateBuffer(graph)",
           dev.graph->updateBuffer(*dev.deviceBuffer, region, sizeof kWords, kWords));
    }
    call("native(graph)", dev.graph->native(&NativeCall::run, &dev.graphNative, kNativeCapturable));
    call("hostCall(graph)", dev.graph->hostCall(&HostWrite::run, &dev.graphHost));
    if (dev.deviceBuffer && dev.pinnedBuffer)
      call("copyBuffer(graph)",
           dev.graph->copyBuffer(*dev.deviceBuffer, region, *dev.pinnedBuffer, region, 256));
    return call("end(graph)", dev.graph->end());
  }

  std::vector<baton::CommandBuffer> commands(std::initializer_list<baton::CommandBuffer> list) {
    std::vector<baton::CommandBuffer> out;
    for (baton::CommandBuffer c : list)
      if (c) out.push_back(c);
    return out;
  }

  // One frame: wait-before-signal on a host gate and across queues and devices, host calls,
  // native callbacks, queue-ordered alloca and dealloca, fan-in; then host waits.
  void submitFrame(uint64_t v) {
    using namespace baton;
    Dev& a = devs_[0];
    Dev& b = devs_[1].device ? devs_[1] : devs_[0];
    auto s = [&](size_t i) { return *sems_[i]; };
    // Held on the host gate (signalled last): wait-before-signal, then a host call.
    submit("submit(a1: gate -> host call)", queue(0, 1), {{*gate_, v}}, commands({*a.host[0]}),
           {{s(1), v}});
    submit("submit(a0: work)", queue(0, 0), {}, commands({*a.work}), {{s(0), v}});
    // Across devices, before its signal is released: device b waits for device a's host call.
    // With one device, b's work would race a's on the same memory: b0 then only signals.
    submit("submit(b0: s1 -> work)", queue(1, 0), {{s(1), v}},
           commands({&b == &a ? CommandBuffer() : *b.work}), {{s(2), v}});
    // Queue-ordered allocation after s0, used, then freed.
    BufferCreateInfo info;
    info.size = kBufferSize;
    Buffer temp;
    Result r = queue(0, 2).allocaBuffer(std::vector<SemaphoreValue>{{s(0), v}}, info,
                                        std::vector<SemaphoreValue>{{s(3), v}}, &temp);
    if (accepted("allocaBuffer", r, {{s(3), v}})) {
      UniqueCommandBuffer use;
      if (call("createCommandBuffer", a.device->createCommandBuffer(use.put())) &&
          call("begin", use->begin())) {
        call("fillBuffer(alloca)", use->fillBuffer(temp, 0, kBufferSize, 3));
        call("end", use->end());
      }
      submit("submit(a2: use alloca)", queue(0, 2), {{s(3), v}}, commands({*use}), {{s(4), v}});
      r = queue(0, 2).deallocaBuffer(std::vector<SemaphoreValue>{{s(4), v}}, temp,
                                     std::vector<SemaphoreValue>{{s(5), v}});
      // The rule (queue.hpp): Success consumes the handle, whatever happens to the free later
      // on the queue (a failed cuMemFreeAsync fails the signal; baton releases the memory, which
      // LeakSanitizer checks); an error consumed nothing, and the buffer is still the caller's.
      if (accepted("deallocaBuffer", r, {{s(5), v}})) {
        Result again = queue(0, 2).deallocaBuffer({}, temp, {});
        if (again != Result::ErrorInvalidHandle)
          problems.push_back(std::string("a second deallocaBuffer of a freed buffer returned ") +
                             resultName(again) + ", not ErrorInvalidHandle");
      } else if (Result d = temp.destroy(); d != Result::Success) {
        problems.push_back("deallocaBuffer returned " + std::string(resultName(r)) +
                           " but Buffer::destroy of the buffer then returned " + resultName(d) +
                           ": " + lastError());
      }
    } else {
      fail({{s(4), v}, {s(5), v}},
           "allocaBuffer returned " + std::string(resultName(r)) + ": " + lastMessage_);
    }
    // Fan-in on a third queue, then back to device b.
    submit("submit(a3: fan-in -> host call)", queue(0, 3), {{s(0), v}, {s(2), v}, {s(5), v}},
           commands({*a.host[1]}), {{s(6), v}});
    submit("submit(b1: s6)", queue(1, 1), {{s(6), v}}, commands({*b.host[2]}), {{s(7), v}});
    // The graph command buffer, recorded again from the second frame on (its last submission may
    // still run: it keeps its recording), after the work on the same queue. A recording that
    // failed (a fault, checked where it failed) is left out: the submission only signals.
    if (v > 1 && a.graphs) a.graphReady = recordGraph(a, static_cast<uint32_t>(v));
    submit("submit(a0: graph)", queue(0, 0), {},
           commands({a.graphReady ? *a.graph : baton::CommandBuffer()}), {{s(8), v}});
    call("signal(gate)", gate_->signal(v));

    // Host waits: ANY with a timeout, then every value (ALL, bounded), then each one.
    std::vector<SemaphoreValue> all;
    for (auto& [sem, value] : expected_) all.push_back({sem, value});
    wait("waitSemaphores(Any)", all, WaitMode::Any);
    wait("waitSemaphores(All)", all, WaitMode::All);
    for (const SemaphoreValue& sv : all) wait("Semaphore::wait", {sv}, WaitMode::All);
  }

  void submit(const char* what, baton::Queue q, std::vector<baton::SemaphoreValue> waits,
              std::vector<baton::CommandBuffer> cbs, std::vector<baton::SemaphoreValue> signals) {
    baton::SubmitInfo info;
    info.waits = waits;
    info.commandBuffers = cbs;
    info.signals = signals;
    accepted(what, q ? q.submit(info) : Result::ErrorInvalidHandle, signals);
  }

  // After a call that would signal `signals`: on success their values must be reached or fail;
  // on an error (checked like any call), the workload fails them itself, as an application
  // would, so that what waits for them returns.
  bool accepted(const char* what, Result r, std::vector<baton::SemaphoreValue> signals) {
    if (call(what, r)) {
      for (const baton::SemaphoreValue& sv : signals)
        expected_[sv.semaphore] = std::max(expected_[sv.semaphore], sv.value);
      return true;
    }
    fail(signals, std::string(what) + " returned " + baton::resultName(r) + ": " + lastMessage_);
    return false;
  }

  void fail(const std::vector<baton::SemaphoreValue>& signals, const std::string& reason) {
    for (const baton::SemaphoreValue& sv : signals) {
      if (!sv.semaphore) continue;
      // Already failed: ErrorSemaphoreFailed, or the first failure's own code (ErrorDeviceLost
      // when device loss failed it; semaphore.hpp documents only ErrorSemaphoreFailed).
      Result r = sv.semaphore.fail(reason.c_str());
      if (r != Result::Success && r != Result::ErrorSemaphoreFailed && r != Result::ErrorDeviceLost)
        problems.push_back(std::string("Semaphore::fail returned ") + baton::resultName(r));
      expected_[sv.semaphore] = std::max(expected_[sv.semaphore], sv.value);
    }
  }

  void wait(const char* what, const std::vector<baton::SemaphoreValue>& waits,
            baton::WaitMode mode) {
    if (waits.empty()) return;
    Result r = instance_->waitSemaphores(waits, mode, kBoundNs);
    if (r == Result::Timeout) {
      ++hangs;
      problems.push_back(std::string("HANG: ") + what + " timed out after " +
                         std::to_string(kBoundNs / kMs) + " ms");
      return;
    }
    if (r == Result::ErrorSemaphoreFailed || r == Result::ErrorDeviceLost) {
      if (!inj_.api && !inj_.any)
        problems.push_back(std::string(what) + " returned " + baton::resultName(r) +
                           " with no fault injected: " + lastError());
      else
        checkMessage(what, lastError());
      return;
    }
    call(what, r);
  }

  // Checks a call's result: defined, and an error only when a fault was injected, with a
  // message that names it. Returns whether the call succeeded.
  bool call(const std::string& what, Result r) {
    lastMessage_ = isError(r) ? lastError() : std::string();
    if (!definedResult(r)) {
      problems.push_back(what + " returned an undefined Result " +
                         std::to_string(static_cast<int32_t>(r)));
      return false;
    }
    if (!isError(r)) return true;
    if (!inj_.api && !inj_.any)
      problems.push_back(what + " returned " + baton::resultName(r) +
                         " with no fault injected: " + lastMessage_);
    else
      checkMessage(what + " returned " + baton::resultName(r), lastMessage_);
    return false;
  }
  static bool isError(Result r) { return baton::isError(r); }

  // With random faults, several calls of any entry point fail in one run, all with the same
  // error: the message must name that error (a failed context switch must not surface as another
  // error of a later call, such as CUDA_ERROR_INVALID_CONTEXT).
  void checkMessage(const std::string& what, const std::string& message) {
    bool named = false;
    if (inj_.any)
      named = containsText(message, inj_.error);
    else
      named = inj_.error && inj_.api && containsText(message, inj_.error) &&
              containsText(message, inj_.api);
    if (named) return;
    std::string text = what + ": the message does not name " +
                       (inj_.api ? std::string(inj_.api) + " and " : std::string()) +
                       (inj_.error ? inj_.error : "?") + ": \"" + message + "\"";
    problems.push_back(std::move(text));
  }

  // Teardown: every object destroyed, children first. Waits for queues with a bound first, so
  // that a hang shows as a failure naming the pair rather than as a stuck destroy.
  void finish() {
    using namespace baton;
    for (Dev& dev : devs_) {
      for (Queue q : dev.queues) {
        Result r = q.waitIdle(kBoundNs);
        if (r == Result::Timeout) {
          ++hangs;
          problems.push_back("HANG: Queue::waitIdle timed out");
        } else if (r != Result::ErrorDeviceLost) {
          call("Queue::waitIdle", r);
        }
      }
    }
    for (Dev& dev : devs_) {
      destroy("CommandBuffer::destroy", dev.work.release());
      destroy("CommandBuffer::destroy", dev.graph.release());
      for (auto& cb : dev.host) destroy("CommandBuffer::destroy", cb.release());
      destroy("Buffer::destroy", dev.deviceBuffer.release());
      destroy("Buffer::destroy", dev.pinnedBuffer.release());
    }
    for (Dev& dev : devs_) destroy("Device::destroy", dev.device.release());
    for (auto& s : sems_) destroy("Semaphore::destroy", s.release());
    destroy("Semaphore::destroy", gate_.release());
    destroy("Instance::destroy", instance_.release());
  }

  template <class Handle>
  void destroy(const char* what, Handle h) {
    if (!h) return;
    Result r = h.destroy();
    if (r != Result::Success)
      problems.push_back(std::string(what) + " returned " + baton::resultName(r) + ": " +
                         lastError() + "\n" + sink_.dump());
  }

  const FaultHooks& hooks_;
  const Injection& inj_;
  MessageSink sink_;
  baton::UniqueInstance instance_;
  Dev devs_[2];
  baton::UniqueSemaphore sems_[9];
  baton::UniqueSemaphore gate_;
  struct ByHandle {
    bool operator()(baton::Semaphore x, baton::Semaphore y) const { return x.raw() < y.raw(); }
  };
  std::map<baton::Semaphore, uint64_t, ByHandle> expected_;  // values that must be reached or fail
  std::string lastMessage_;
};

// The stream machinery's live objects (baton::stream::stats()).
struct Live {
  uint64_t events = 0, eventsInUse = 0, timepoints = 0, records = 0;
  static Live now() {
    baton::stream::Stats s = baton::stream::stats();
    return {s.eventsCreated, s.eventsInUse, s.timepointsLive, s.recordsInFlight};
  }
  bool operator==(const Live& o) const {
    return events == o.events && eventsInUse == o.eventsInUse && timepoints == o.timepoints &&
           records == o.records;
  }
  std::string text() const {
    return std::to_string(events) + " events (" + std::to_string(eventsInUse) + " in use), " +
           std::to_string(timepoints) + " timepoints, " + std::to_string(records) +
           " records in flight";
  }
};

class FaultSweepTest : public ::testing::TestWithParam<baton::BackendKind> {
 protected:
  const FaultHooks* hooks() const {
    for (const FaultHooks* h : linkedFaultHooks())
      if (h->kind == GetParam()) return h;
    return nullptr;
  }
};

// Whether the backend has a device here; the reason when not.
std::string backendAbsent(baton::BackendKind kind) {
  baton::UniqueInstance instance;
  if (baton::createInstance(baton::InstanceCreateInfo(), instance.put()) != Result::Success)
    return "createInstance failed: " + lastError();
  uint32_t n = 0;
  (void)instance->enumerateBackends(&n, nullptr);
  std::vector<baton::BackendInfo> infos(n);
  (void)instance->enumerateBackends(&n, infos.data());
  for (const baton::BackendInfo& b : infos)
    if (b.kind == kind)
      return b.available && b.deviceCount > 0 ? std::string()
                                              : std::string("unavailable: ") + b.reason;
  return "not known to this build";
}

// The occurrences swept of an entry point called `calls` times: all of them, or `cap` spread
// evenly from the first to the last.
std::vector<uint32_t> occurrences(uint64_t calls, uint64_t cap) {
  std::vector<uint32_t> out;
  if (cap == 0 || calls <= cap) {
    for (uint64_t i = 0; i < calls; ++i) out.push_back(static_cast<uint32_t>(i));
    return out;
  }
  for (uint64_t i = 0; i < cap; ++i) {
    const uint32_t o = static_cast<uint32_t>(cap == 1 ? 0 : i * (calls - 1) / (cap - 1));
    if (out.empty() || out.back() != o) out.push_back(o);
  }
  return out;
}

TEST_P(FaultSweepTest, EveryDriverCallFailsCleanly) {
  const FaultHooks* h = hooks();
  ASSERT_NE(h, nullptr);
  const char* backend = baton::backendName(GetParam());
  if (std::string absent = backendAbsent(GetParam()); !absent.empty()) {
    if (backendRequired(GetParam()))
      FAIL() << backend << ": " << absent << " (required by BATON_TEST_REQUIRE_BACKENDS)";
    GTEST_SKIP() << backend << ": " << absent;
  }
  const uint64_t cap = envUint("BATON_FAULT_SWEEP_MAX_OCCURRENCES", 8);
  const uint64_t randomRuns = envUint("BATON_FAULT_SWEEP_RANDOM_RUNS", 8);
  const bool verbose = envUint("BATON_FAULT_SWEEP_VERBOSE", 0) != 0;
  const char* onlyText = std::getenv("BATON_FAULT_SWEEP_ONLY");
  const std::string only = onlyText ? onlyText : "";
  const uint64_t repeat =
      only.empty() ? 1 : std::max<uint64_t>(1, envUint("BATON_FAULT_SWEEP_REPEAT", 1));
  const auto start = Clock::now();
  Watchdog watchdog;
  h->clear();

  // A clean run first: it must pass untouched, and it starts whatever threads the driver keeps
  // for the process, so that the baseline counts them.
  auto runOnce = [&](const Injection& inj) {
    watchdog.arm(inj.label);
    WorkloadRun run(*h, inj);
    run.run();
    watchdog.disarm();
    return run.outcome();
  };
  {
    Outcome clean = runOnce(Injection{"no fault"});
    for (const std::string& p : clean.problems) ADD_FAILURE() << "without faults: " << p;
    ASSERT_TRUE(clean.problems.empty());
  }
  auto settled = [](auto&& done) {
    const auto until = Clock::now() + kSettle;
    while (!done() && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return done();
  };
  const Live baseline = Live::now();
  size_t threads = threadCount();
  settled([&] { return threadCount() <= threads; });
  threads = threadCount();

  // The calls the workload makes, by entry point.
  h->record(true);
  {
    Outcome recorded = runOnce(Injection{"recording"});
    EXPECT_TRUE(recorded.problems.empty());
  }
  h->record(false);
  const std::vector<baton::stream::CallCount> calls = h->counts();
  ASSERT_FALSE(calls.empty()) << "no driver call went through the wrapper";
  std::string list;
  uint64_t totalCalls = 0;
  for (const baton::stream::CallCount& c : calls) {
    list += std::string(list.empty() ? "" : ", ") + c.api + " x" + std::to_string(c.calls);
    totalCalls += c.calls;
  }
  std::printf("%s: the workload made %llu driver calls of %zu entry points: %s\n", backend,
              static_cast<unsigned long long>(totalCalls), calls.size(), list.c_str());

  uint64_t injected = 0, notReached = 0, runs = 0, leaks = 0, hangs = 0;
  std::map<std::string, uint64_t> firedPerApi;
  auto check = [&](const Injection& inj, const Outcome& run) {
    ++runs;
    hangs += static_cast<uint64_t>(run.hangs);
    for (const std::string& p : run.problems)
      ADD_FAILURE() << backend << ", " << inj.label << ": " << p;
    // Nothing left behind: baton's threads exit, the machinery's objects are released.
    if (!settled([&] { return threadCount() <= threads; })) {
      ++leaks;
      ADD_FAILURE() << backend << ", " << inj.label << ": " << threadCount() - threads
                    << " threads left behind (" << threadCount() << " against " << threads
                    << " before)";
      threads = threadCount();  // report each leak once
    }
    if (!settled([&] { return Live::now() == baseline; })) {
      ++leaks;
      ADD_FAILURE() << backend << ", " << inj.label << ": left " << Live::now().text()
                    << " against " << baseline.text() << " before";
    }
  };

  for (const baton::stream::CallCount& c : calls) {
    for (uint32_t occurrence : occurrences(c.calls, cap)) {
      for (uint32_t k = 0; k < static_cast<uint32_t>(FaultKind::Count); ++k) {
        const auto kind = static_cast<FaultKind>(k);
        Injection inj;
        inj.label = std::string(c.api) + "#" + std::to_string(occurrence) + " " + kFaultNames[k];
        if (!only.empty() && inj.label.find(only) == std::string::npos) continue;
        for (uint64_t time = 0; time < repeat; ++time) {
          inj.api = c.api;
          inj.error = h->errorName[k];
          inj.sticky = kind == FaultKind::IllegalAddress;
          h->clear();
          ASSERT_TRUE(h->inject(c.api, kind, occurrence, releases(c.api))) << inj.label;
          Outcome run = runOnce(inj);
          const uint64_t fired = h->fired();
          h->clear();
          if (fired == 0) {
            // The call counts of polling entry points depend on timing: not reached this time.
            ++notReached;
            run.problems.clear();  // any problem then is not the fault's
          } else {
            ++injected;
            ++firedPerApi[c.api];
          }
          if (verbose)
            std::printf("  %s: %s, %zu problems\n", inj.label.c_str(),
                        fired ? "fired" : "not reached", run.problems.size());
          check(inj, run);
        }
      }
    }
  }

  // Seeded random faults: several calls of any entry point fail in one run.
  for (uint64_t seed = 1; only.empty() && seed <= randomRuns; ++seed) {
    Injection inj;
    inj.label = "random faults, seed " + std::to_string(seed);
    inj.any = true;
    inj.error = h->errorName[static_cast<size_t>(FaultKind::InvalidValue)];
    h->clear();
    h->injectRandom(seed, 0.01, FaultKind::InvalidValue);
    Outcome run = runOnce(inj);
    const uint64_t fired = h->fired();
    h->clear();
    injected += fired;
    if (verbose) std::printf("  %s: %llu fired\n", inj.label.c_str(), (unsigned long long)fired);
    check(inj, run);
  }

  std::printf(
      "%s: %llu runs in %.1f s; %llu pairs not reached in their run (timing-dependent "
      "call counts); leaks count runs with live objects or threads left behind\n",
      backend, static_cast<unsigned long long>(runs), secondsSince(start),
      static_cast<unsigned long long>(notReached));
  const std::string capped =
      cap == 0 ? std::string()
               : " (at most " + std::to_string(cap) + " occurrences of each, 3 errors each, plus " +
                     std::to_string(randomRuns) + " random runs; " + backend + ")";
  std::printf("fault sweep: %llu faults injected over %zu entry points%s, %llu hangs, %llu leaks\n",
              static_cast<unsigned long long>(injected), firedPerApi.size(), capped.c_str(),
              static_cast<unsigned long long>(hangs), static_cast<unsigned long long>(leaks));
  // An entry point whose every swept call depends on timing (a synchronize the completion thread
  // makes only when it finds work pending) may be reached in no faulted run: named, not failed.
  for (const baton::stream::CallCount& c : calls)
    if (only.empty() && !firedPerApi.count(c.api))
      std::printf("%s: %s (x%llu while recording) was not reached in a faulted run\n", backend,
                  c.api, static_cast<unsigned long long>(c.calls));
  EXPECT_EQ(hangs, 0u);
  EXPECT_EQ(leaks, 0u);
}

INSTANTIATE_TEST_SUITE_P(, FaultSweepTest, ::testing::ValuesIn(linkedFaultBackends()),
                         BackendParamName());

}  // namespace
}  // namespace baton_test
