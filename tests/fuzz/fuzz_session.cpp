// The API fuzzer's session (fuzz_session.hpp): set-up of an input's instance and first device,
// the decoding of operands, the operation loop, the end of input (the drain that releases every
// held submission and checks that no signal was lost, then teardown), and the entry points.
#include "fuzz_session.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <thread>

namespace baton_fuzz {

std::string gBackendOverride;

// ---- set-up and operands ----------------------------------------------------------------------

bool Session::setUp() {
  const uint8_t b0 = in_.u8();
  config_ = in_.u8();
  std::string want = gBackendOverride;
  if (want.empty()) {
    const char* env = std::getenv("BATON_FUZZ_BACKEND");
    if (env) want = env;
  }
  const bool required = !want.empty();
  if (want.empty()) want = (b0 & 1) ? "cuda" : "host";
  if (want == "host")
    backend_ = BackendKind::Host;
  else if (want == "cuda")
    backend_ = BackendKind::Cuda;
  else if (want == "hip")
    backend_ = BackendKind::Hip;
  else
    violation("BATON_FUZZ_BACKEND=%s: expected host, cuda or hip", want.c_str());

  InstanceCreateInfo info;
  info.backendMask = backendBit(BackendKind::Host) | backendBit(backend_);
  Result r = createInstance(info, &instance_);
  checkDefined(r, "createInstance");
  if (r != Result::Success) violation("createInstance returned %s", resultName(r));

  uint32_t count = 0;
  checkDefined(instance_.enumeratePhysicalDevices(&count, nullptr), "enumeratePhysicalDevices");
  std::vector<PhysicalDevice> physicals(count);
  checkDefined(instance_.enumeratePhysicalDevices(&count, physicals.data()),
               "enumeratePhysicalDevices");
  physicals.resize(count);
  PhysicalDevice host;
  PhysicalDeviceProperties hostProps, props;
  for (PhysicalDevice p : physicals) {
    PhysicalDeviceProperties pp;
    if (p.getProperties(&pp) != Result::Success) continue;
    if (pp.backend == BackendKind::Host && !host) {
      host = p;
      hostProps = pp;
    }
    if (pp.backend == backend_ && !physical_) {
      physical_ = p;
      props = pp;
    }
  }
  if (!physical_) {
    if (required) {
      uint32_t n = kBackendKindCount;
      BackendInfo infos[kBackendKindCount];
      (void)instance_.enumerateBackends(&n, infos);
      std::string why;
      for (uint32_t i = 0; i < n; ++i)
        if (infos[i].kind == backend_) why = infos[i].reason;
      std::fprintf(stderr, "baton-fuzz: the %s backend is required but has no device: %s\n",
                   backendName(backend_), why.c_str());
      std::abort();
    }
    backend_ = BackendKind::Host;
    physical_ = host;
    props = hostProps;
  }
  if (!physical_) violation("no host physical device");
  maxQueues_ = props.maxQueues;
  streamOrderedAlloc_ = (props.capabilities & kCapabilityStreamOrderedAlloc) != 0;
  trace("instance on %s (%s), config 0x%02x", backendName(backend_), props.name, config_);
  createDevice(std::min(1u + ((config_ >> 3) & 3), maxQueues_));
  return true;
}

SemaphoreModel& Session::pickSemaphore(size_t* slot) {
  const size_t i = in_.below(kSemaphores);
  if (slot) *slot = i;
  return semaphores_[i];
}

uint64_t Session::signalValue(const SemaphoreModel& s) {
  switch (in_.below(10)) {
    case 0: return s.maxRequested + 1;
    case 1: return s.maxRequested + 1 + in_.below(4);
    case 2: return s.observed;  // non-increasing
    case 3: return s.observed ? s.observed - 1 : 0;
    case 4: return 0;
    case 5: return UINT64_MAX;
    case 6: return UINT64_MAX - 1;
    case 7: return in_.u64();
    case 8: return s.maxWaited > s.observed ? s.maxWaited : s.maxRequested + 2;
    default: return s.observed + 1;
  }
}

uint64_t Session::waitValue(const SemaphoreModel& s) {
  switch (in_.below(8)) {
    case 0: return s.observed;  // satisfied
    case 1: return s.maxRequested;
    case 2: return s.maxRequested + 1;  // wait-before-signal
    case 3: return s.maxRequested + 1 + in_.below(3);
    case 4: return 0;
    case 5: return UINT64_MAX;
    case 6: return in_.u64();
    default: return s.observed + 1;
  }
}

QueuePick Session::pickQueue() {
  DeviceSlot& d = devices_[in_.below(kDevices)];
  const size_t index = in_.below(kMaxQueuesUsed);
  QueuePick pick;
  if (index < d.queues.size()) {
    pick.queue = d.queues[index];
    pick.valid = d.alive;
    pick.deviceId = d.id;
  }
  return pick;
}

Session::Entries Session::entryList(size_t maxCount, bool* valid, bool* increasing) {
  Entries e;
  const size_t n = in_.below(maxCount + 1);
  for (size_t i = 0; i < n; ++i) {
    size_t slot;
    SemaphoreModel& s = pickSemaphore(&slot);
    const uint64_t v = increasing ? signalValue(s) : waitValue(s);
    if (!s.alive) *valid = false;
    if (!increasing) s.waited(v);
    // Known non-increasing: the frontend must refuse it (unless the semaphore failed, whose
    // value no longer matters).
    if (increasing && s.alive && !s.failed && v <= s.observed) *increasing = false;
    e.values.push_back({s.handle, v});
    e.slots.push_back(slot);
  }
  return e;
}

void Session::accepted(const Entries& signals, uint32_t deviceId) {
  for (size_t i = 0; i < signals.values.size(); ++i) {
    SemaphoreModel& s = semaphores_[signals.slots[i]];
    s.requested(signals.values[i].value);
    pending_.push_back({signals.slots[i], s.id, signals.values[i].value, deviceId});
  }
}

std::vector<WaitEntryModel> Session::waitModels(const Entries& waits) {
  std::vector<WaitEntryModel> models;
  for (size_t i = 0; i < waits.values.size(); ++i)
    models.push_back({&semaphores_[waits.slots[i]], waits.values[i].value});
  return models;
}

// ---- the operation loop and the end of input --------------------------------------------------

void Session::step(size_t index) {
  const uint8_t op = in_.u8();
  switch (op % 20) {
    case 0:
    case 1: createSemaphore(); break;
    case 2: destroySemaphore(); break;
    case 3: hostSignal(); break;
    case 4: hostFail(); break;
    case 5: query(); break;
    case 6: hostWait(); break;
    case 7: createDevice(1 + in_.below(kMaxQueuesUsed + 1)); break;
    case 8: destroyDevice(devices_[in_.below(kDevices)]); break;
    case 9: createCommandBuffer(); break;
    case 10: destroyCommandBuffer(); break;
    case 11: record(); break;
    case 12:
    case 13: submit(); break;
    case 14: createBuffer(); break;
    case 15: destroyBuffer(); break;
    case 16: in_.u8() & 1 ? mapBuffer() : alloca(); break;
    case 17: dealloca(); break;
    case 18: waitIdle(); break;
    default:
      if (in_.u8() & 1)
        hugeLists();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(in_.below(8) * 100));
      break;
  }
  (void)index;
}

void Session::finish() {
  const uint8_t end = config_ & 3;
  if (end != 2) {
    // Release everything: signal each live semaphore up to the highest value anyone waited for
    // (or fail it), so that every held submission can run or fail.
    for (SemaphoreModel& s : semaphores_) {
      if (!s.alive) continue;
      if (end == 1) {
        const std::string reason = "fuzz drain";
        Result r = s.handle.fail(reason.c_str());
        trace("drain: fail %s -> %s", s.name.c_str(), resultName(r));
        s.onFail(r, reason);
      } else if (s.maxWaited > s.observed) {
        Result r = s.handle.signal(s.maxWaited);
        trace("drain: signal %s %llu -> %s", s.name.c_str(),
              static_cast<unsigned long long>(s.maxWaited), resultName(r));
        s.onSignal(r, s.maxWaited);
      }
    }
    // Then every queue goes idle, and no accepted signal is lost.
    for (DeviceSlot& d : devices_) {
      if (!d.alive) continue;
      for (Queue q : d.queues) {
        Result r = watched("Queue::waitIdle(drain)", [&] { return q.waitIdle(10000000000ull); });
        trace("drain: waitIdle device %u -> %s", d.id, resultName(r));
        checkDrained(r, "Queue::waitIdle");
      }
    }
    checkSignalsOf(0, "after the drain");
  }
  for (SemaphoreModel& s : semaphores_)
    if (s.alive) s.refresh();

  if (config_ & 4) {
    auto destroy = [](auto& object, const char* op) {
      if (!object.alive) return;
      const Result r = watched(op, [&] { return object.handle.destroy(); });
      checkDefined(r, op);
      if (r != Result::Success && r != Result::ErrorObjectInUse)
        violation("%s at teardown returned %s", op, resultName(r));
      object.alive = false;
    };
    for (BufferSlot& b : buffers_) destroy(b, "Buffer::destroy");
    for (CommandBufferSlot& c : commandBuffers_) destroy(c, "CommandBuffer::destroy");
    for (SemaphoreModel& s : semaphores_) destroy(s, "Semaphore::destroy");
    for (DeviceSlot& d : devices_)
      if (d.alive) destroyDevice(d);
  }
  Result r = watched("Instance::destroy", [&] { return instance_.destroy(); });
  trace("destroy instance -> %s", resultName(r));
  checkDefined(r, "Instance::destroy");
  if (r != Result::Success && r != Result::ErrorObjectInUse)
    violation("Instance::destroy returned %s", resultName(r));
  if ((config_ & 4) && r != Result::Success)
    violation("Instance::destroy found live children after all were destroyed: %s",
              lastErrorMessage());
}

void Session::run() {
  resetTrace();
  if (!setUp()) return;
  for (size_t i = 0; i < kMaxOps && !in_.empty(); ++i) step(i);
  finish();
}

int runOneInput(const uint8_t* data, size_t size) {
  Session session(data, size);
  session.run();
  return 0;
}

}  // namespace baton_fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return baton_fuzz::runOneInput(data, size);
}
