// The baton API fuzzer: decodes bytes into a sequence of public API calls on one backend and
// checks every result against fuzz_checker's model. The same file is the libFuzzer target
// (baton-fuzz, built with clang) and the body of the corpus replay test (baton-fuzz-replay,
// fuzz_replay_main.cpp).
//
// Input format (every read past the end gives 0, so every byte string is an input):
//   byte 0   backend: even = host, odd = cuda (BATON_FUZZ_BACKEND=host|cuda|hip overrides;
//            an unavailable backend falls back to host unless the variable names it)
//   byte 1   config: bits 0-1 end of input (0, 3: signal every waited value, then check that
//            every queue goes idle and no submitted signal was lost; 1: the same after failing
//            every semaphore; 2: tear down with work still pending); bit 2: destroy children one
//            by one before the instance (else the instance destroys them); bits 3-4: queues of
//            the first device - 1
//   then operations: an opcode byte (modulo kOpCount) and its operands (see run()).
// Each input builds its own instance and destroys it, with everything in it, before returning.
#include <baton/baton.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "fuzz_checker.hpp"

using namespace baton;

namespace baton_fuzz {

// The backend the replay asks for (fuzz_replay_main.cpp); empty: BATON_FUZZ_BACKEND or byte 0.
std::string gBackendOverride;

namespace {

constexpr size_t kSemaphores = 8;
constexpr size_t kDevices = 2;
constexpr size_t kCommandBuffers = 6;
constexpr size_t kBuffers = 6;
constexpr uint32_t kMaxQueuesUsed = 4;
constexpr size_t kMaxOps = 256;
// The finite timeouts host waits use: a poll, and short sleeps.
constexpr uint64_t kTimeouts[] = {0, 1000, 100000, 1000000, 3000000};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(u8()) << (8 * i);
    return v;
  }
  size_t below(size_t n) { return n ? u8() % n : 0; }
  std::vector<uint8_t> bytes(size_t n) {
    std::vector<uint8_t> out(n);
    for (auto& b : out) b = u8();
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// What a recorded host call or native callback does when it runs (on a baton thread).
struct CallbackAction {
  enum Kind : uint8_t { Return, Signal, Fail, Query, Wait, Sleep, kKinds };
  Kind kind = Return;
  Semaphore semaphore;
  uint64_t value = 0;
  Result ret = Result::Success;
  BackendKind backend = BackendKind::Host;
};

Result runAction(CallbackAction& a) {
  switch (a.kind) {
    case CallbackAction::Return: break;
    case CallbackAction::Signal:
      checkDefined(a.semaphore.signal(a.value), "callback signal");
      break;
    case CallbackAction::Fail:
      checkDefined(a.semaphore.fail("failed by a host call"), "callback fail");
      break;
    case CallbackAction::Query: {
      uint64_t v = 0;
      checkDefined(a.semaphore.getValue(&v), "callback getValue");
      break;
    }
    case CallbackAction::Wait:
      // Work queued behind this callback may be what signals it: always bounded.
      checkDefined(a.semaphore.wait(a.value, 200000), "callback wait");
      break;
    case CallbackAction::Sleep: std::this_thread::sleep_for(std::chrono::microseconds(200)); break;
    default: break;
  }
  return a.ret;
}

Result hostCallFn(void* user) { return runAction(*static_cast<CallbackAction*>(user)); }

Result nativeFn(const NativeQueue& queue, void* user) {
  auto* a = static_cast<CallbackAction*>(user);
  if (queue.backend != a->backend)
    violation("native callback got a %s queue on a %s device", backendName(queue.backend),
              backendName(a->backend));
  if ((queue.backend == BackendKind::Host) != (queue.stream == nullptr))
    violation("native callback on %s got stream %p", backendName(queue.backend), queue.stream);
  return runAction(*a);
}

struct DeviceSlot {
  Device handle;
  bool alive = false;
  uint32_t id = 0;
  std::vector<Queue> queues;  // kept after destroy: stale handles
};

enum class CbState { Initial, Recording, Ended };

struct CommandBufferSlot {
  CommandBuffer handle;
  bool alive = false;
  uint32_t deviceId = 0;
  CbState state = CbState::Initial;
};

struct BufferSlot {
  Buffer handle;
  bool alive = false;
  uint32_t deviceId = 0;
  uint64_t size = 0;
  bool queueOrdered = false;
};

// A signal of an accepted submission: once its queue is idle or its device destroyed, the
// semaphore must have reached the value or failed (nothing is lost).
struct PendingSignal {
  size_t slot;
  uint32_t semaphoreId;
  uint64_t value;
  uint32_t deviceId;
};

// A picked queue: the handle and whether the harness expects it to be valid.
struct QueuePick {
  Queue queue;
  bool valid = false;
  uint32_t deviceId = 0;
};

class Session {
 public:
  Session(const uint8_t* data, size_t size) : in_(data, size) {}
  void run();

 private:
  bool setUp();
  void step(size_t index);
  void finish();

  // Operands.
  SemaphoreModel& pickSemaphore(size_t* slot = nullptr);
  uint64_t signalValue(const SemaphoreModel& s);
  uint64_t waitValue(const SemaphoreModel& s);
  QueuePick pickQueue();
  uint64_t timeout() { return kTimeouts[in_.below(std::size(kTimeouts))]; }
  DeviceSlot* deviceById(uint32_t id) {
    for (DeviceSlot& d : devices_)
      if (d.alive && d.id == id) return &d;
    return nullptr;
  }

  // A list of {semaphore, value} for a wait or submission; *valid false when it names a
  // destroyed or null semaphore. With `increasing` (signal lists), *increasing false when a
  // value is known not to be above the semaphore's value.
  struct Entries {
    std::vector<SemaphoreValue> values;
    std::vector<size_t> slots;
  };
  Entries entryList(size_t maxCount, bool* valid, bool* increasing);
  Entries waitList(size_t maxCount, bool* valid) { return entryList(maxCount, valid, nullptr); }
  Entries signalList(size_t maxCount, bool* valid, bool* increasing) {
    return entryList(maxCount, valid, increasing);
  }
  void accepted(const Entries& signals, uint32_t deviceId);
  void checkWaitResult(Result r, const Entries& waits, WaitMode mode, bool valid);

  // Operations.
  void createSemaphore();
  void destroySemaphore();
  void hostSignal();
  void hostFail();
  void query();
  void hostWait();
  void createDevice(uint32_t queueCount);
  void destroyDevice(DeviceSlot& d);
  void createCommandBuffer();
  void destroyCommandBuffer();
  void record();
  void submit();
  void createBuffer();
  void destroyBuffer();
  void mapBuffer();
  void alloca();
  void dealloca();
  void waitIdle();
  void hugeLists();
  void checkSignalsOf(uint32_t deviceId, const char* when);

  Reader in_;
  BackendKind backend_ = BackendKind::Host;
  uint8_t config_ = 0;
  Instance instance_;
  PhysicalDevice physical_;
  uint32_t maxQueues_ = 1;  // PhysicalDeviceProperties::maxQueues
  bool streamOrderedAlloc_ = false;
  uint32_t nextId_ = 1;
  SemaphoreModel semaphores_[kSemaphores];
  DeviceSlot devices_[kDevices];
  CommandBufferSlot commandBuffers_[kCommandBuffers];
  BufferSlot buffers_[kBuffers];
  std::vector<PendingSignal> pending_;
  // Callback contexts live until the instance is gone (no callback can run after that).
  std::deque<CallbackAction> actions_;
};

// Runs one API call under the watchdog.
template <class F>
auto watched(const char* op, F&& f) {
  watchdogBegin(op);
  auto r = f();
  watchdogEnd();
  return r;
}

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

void Session::checkWaitResult(Result r, const Entries& waits, WaitMode mode, bool valid) {
  checkDefined(r, "waitSemaphores");
  const bool all = mode == WaitMode::All;
  if (!valid) {
    if (r != Result::ErrorInvalidHandle)
      violation("a host wait naming a destroyed/null semaphore returned %s", resultName(r));
    return;
  }
  if (waits.values.empty()) {
    if (r != Result::Success) violation("an empty host wait returned %s", resultName(r));
    return;
  }
  size_t reachable = 0, known = 0, knownFailedUnreached = 0;
  for (size_t i = 0; i < waits.values.size(); ++i) {
    const SemaphoreModel& s = semaphores_[waits.slots[i]];
    const uint64_t w = waits.values[i].value;
    if (w <= s.maxRequested) ++reachable;
    if (w <= s.observed) ++known;
    if (s.failed && s.frozenKnown && w > s.frozenValue) ++knownFailedUnreached;
  }
  const size_t n = waits.values.size();
  switch (r) {
    case Result::Success:
      if (all ? reachable < n : reachable == 0)
        violation("a host wait (%s) succeeded, but a value it waited for was never signalled",
                  all ? "ALL" : "ANY");
      if (all)
        for (size_t i = 0; i < n; ++i) {
          SemaphoreModel& s = semaphores_[waits.slots[i]];
          if (waits.values[i].value > s.observed) s.observed = waits.values[i].value;
        }
      break;
    case Result::Timeout:
      if (all ? known == n : known > 0)
        violation(
            "a host wait (%s) timed out although its values had been reached (a reached "
            "wait stays satisfied)",
            all ? "ALL" : "ANY");
      if (knownFailedUnreached > 0 && (all || known == 0))
        violation(
            "a host wait timed out on a semaphore known to have failed, instead of "
            "returning its failure");
      break;
    case Result::ErrorSemaphoreFailed:
    case Result::ErrorDeviceLost: {
      // Some entry must be failed now (and stay so).
      size_t failed = 0;
      for (size_t slot : waits.slots)
        if (semaphores_[slot].refresh()) ++failed;
      if (failed == 0)
        violation("a host wait returned %s but none of its semaphores is failed", resultName(r));
      break;
    }
    default: violation("a host wait returned %s", resultName(r));
  }
}

// ---- operations -------------------------------------------------------------------------------

void Session::createSemaphore() {
  const size_t start = in_.below(kSemaphores);
  const uint64_t initial = in_.below(4) == 0 ? in_.u64() : in_.below(4);
  for (size_t k = 0; k < kSemaphores; ++k) {
    SemaphoreModel& s = semaphores_[(start + k) % kSemaphores];
    if (s.alive) continue;
    const uint32_t id = nextId_++;
    const std::string name = "s" + std::to_string(id);
    SemaphoreCreateInfo info;
    info.initialValue = initial;
    info.debugName = name.c_str();
    Semaphore h;
    Result r = instance_.createSemaphore(info, &h);
    checkDefined(r, "createSemaphore");
    if (r != Result::Success) violation("createSemaphore returned %s", resultName(r));
    s.created(h, id, initial);
    trace("createSemaphore %s initial %llu", s.name.c_str(),
          static_cast<unsigned long long>(initial));
    return;
  }
}

void Session::destroySemaphore() {
  SemaphoreModel& s = pickSemaphore();
  Result r = watched("Semaphore::destroy", [&] { return s.handle.destroy(); });
  trace("destroy %s -> %s", s.name.c_str(), resultName(r));
  checkDefined(r, "Semaphore::destroy");
  if (s.alive ? (r != Result::Success && r != Result::ErrorObjectInUse)
              : r != Result::ErrorInvalidHandle)
    violation("destroy of %s semaphore %s returned %s", s.alive ? "a live" : "a dead",
              s.name.c_str(), resultName(r));
  s.alive = false;
}

void Session::hostSignal() {
  SemaphoreModel& s = pickSemaphore();
  const uint64_t v = signalValue(s);
  Result r = watched("Semaphore::signal", [&] { return s.handle.signal(v); });
  trace("signal %s %llu -> %s", s.name.c_str(), static_cast<unsigned long long>(v), resultName(r));
  s.onSignal(r, v);
  if (r == Result::Success) {
    uint64_t now = 0;
    s.refresh(&now);
    if (!s.failed && now < v)
      violation("after signal(%llu) of %s returned, getValue read %llu",
                static_cast<unsigned long long>(v), s.name.c_str(),
                static_cast<unsigned long long>(now));
  }
}

void Session::hostFail() {
  SemaphoreModel& s = pickSemaphore();
  const std::string reason = "fuzz fail #" + std::to_string(in_.u8());
  Result r = s.handle.fail(reason.c_str());
  trace("fail %s '%s' -> %s", s.name.c_str(), reason.c_str(), resultName(r));
  s.onFail(r, reason);
  if (r == Result::Success) {
    char text[256];
    Result rr = s.handle.getFailureReason(text, sizeof text);
    s.onFailureReason(rr, text);
    if (!s.refresh())
      violation("%s was failed by the host but getValue does not report it", s.name.c_str());
  }
}

void Session::query() {
  SemaphoreModel& s = pickSemaphore();
  uint64_t v = 0;
  s.refresh(&v);
  char text[256] = {};
  Result r = s.handle.getFailureReason(text, sizeof text);
  s.onFailureReason(r, text);
  trace("query %s -> %llu%s", s.name.c_str(), static_cast<unsigned long long>(v),
        s.failed ? " (failed)" : "");
}

void Session::hostWait() {
  bool valid = true;
  Entries waits = waitList(4, &valid);
  const WaitMode mode = in_.u8() & 1 ? WaitMode::Any : WaitMode::All;
  const uint64_t t = timeout();
  const uint8_t how = in_.below(3);
  // Through the instance, a device, or (one entry) the semaphore itself.
  Result r;
  if (how == 1 && devices_[0].alive) {
    r = watched("Device::waitSemaphores",
                [&] { return devices_[0].handle.waitSemaphores(waits.values, mode, t); });
    if (r == Result::ErrorDeviceLost) return;  // a lost device answers first
  } else if (how == 2 && waits.values.size() == 1) {
    r = watched("Semaphore::wait",
                [&] { return waits.values[0].semaphore.wait(waits.values[0].value, t); });
  } else {
    r = watched("Instance::waitSemaphores",
                [&] { return instance_.waitSemaphores(waits.values, mode, t); });
  }
  trace("wait %s of %zu (timeout %llu ns) -> %s", mode == WaitMode::All ? "ALL" : "ANY",
        waits.values.size(), static_cast<unsigned long long>(t), resultName(r));
  checkWaitResult(r, waits, mode, valid);
}

void Session::createDevice(uint32_t queueCount) {
  for (DeviceSlot& d : devices_) {
    if (d.alive) continue;
    DeviceCreateInfo info;
    info.queueCount = queueCount;
    Device h;
    Result r = instance_.createDevice(physical_, info, &h);
    checkDefined(r, "createDevice");
    trace("createDevice with %u queues -> %s", queueCount, resultName(r));
    const bool valid = queueCount >= 1 && queueCount <= maxQueues_;
    if (valid != (r == Result::Success))
      violation("createDevice with %u queues (max %u) returned %s", queueCount, maxQueues_,
                resultName(r));
    if (r != Result::Success) return;
    d = DeviceSlot();
    d.handle = h;
    d.alive = true;
    d.id = nextId_++;
    for (uint32_t i = 0; i < queueCount; ++i) {
      Queue q;
      Result rq = h.getQueue(i, &q);
      checkDefined(rq, "getQueue");
      if (rq != Result::Success) violation("getQueue(%u) returned %s", i, resultName(rq));
      d.queues.push_back(q);
    }
    return;
  }
}

// After a device is destroyed (or its queues idle): every signal its accepted submissions
// carried was reached or its semaphore failed.
void Session::checkSignalsOf(uint32_t deviceId, const char* when) {
  for (const PendingSignal& p : pending_) {
    if (deviceId != 0 && p.deviceId != deviceId) continue;
    SemaphoreModel& s = semaphores_[p.slot];
    if (!s.alive || s.id != p.semaphoreId) continue;
    uint64_t v = 0;
    if (s.refresh(&v)) continue;
    if (v < p.value)
      violation(
          "%s: a submitted signal of %s to %llu was neither reached nor failed (value "
          "%llu): a lost signal",
          when, s.name.c_str(), static_cast<unsigned long long>(p.value),
          static_cast<unsigned long long>(v));
  }
}

void Session::destroyDevice(DeviceSlot& d) {
  Result r = watched("Device::destroy", [&] { return d.handle.destroy(); });
  trace("destroy device %u -> %s", d.id, resultName(r));
  checkDefined(r, "Device::destroy");
  if (d.alive ? (r != Result::Success && r != Result::ErrorObjectInUse)
              : r != Result::ErrorInvalidHandle)
    violation("destroy of a %s device returned %s", d.alive ? "live" : "dead", resultName(r));
  if (!d.alive) return;
  d.alive = false;
  for (CommandBufferSlot& c : commandBuffers_)
    if (c.deviceId == d.id) c.alive = false;
  for (BufferSlot& b : buffers_)
    if (b.deviceId == d.id) b.alive = false;
  checkSignalsOf(d.id, "after Device::destroy");
}

void Session::createCommandBuffer() {
  DeviceSlot& d = devices_[in_.below(kDevices)];
  CommandBufferSlot& c = commandBuffers_[in_.below(kCommandBuffers)];
  if (c.alive) return;
  CommandBuffer h;
  Result r = d.handle.createCommandBuffer(&h);
  checkDefined(r, "createCommandBuffer");
  trace("createCommandBuffer on device %u -> %s", d.id, resultName(r));
  if (d.alive != (r == Result::Success))
    violation("createCommandBuffer on a %s device returned %s", d.alive ? "live" : "dead/null",
              resultName(r));
  if (r != Result::Success) return;
  c = CommandBufferSlot();
  c.handle = h;
  c.alive = true;
  c.deviceId = d.id;
}

void Session::destroyCommandBuffer() {
  CommandBufferSlot& c = commandBuffers_[in_.below(kCommandBuffers)];
  Result r = c.handle.destroy();
  checkDefined(r, "CommandBuffer::destroy");
  trace("destroy command buffer -> %s", resultName(r));
  if (c.alive != (r == Result::Success))
    violation("destroy of a %s command buffer returned %s", c.alive ? "live" : "dead",
              resultName(r));
  c.alive = false;
}

void Session::record() {
  CommandBufferSlot& c = commandBuffers_[in_.below(kCommandBuffers)];
  const uint8_t flags = in_.u8();
  if (!(flags & 1)) {  // usually begin first; sometimes record into whatever state it is in
    Result r = c.handle.begin();
    checkDefined(r, "CommandBuffer::begin");
    if (c.alive != (r == Result::Success))
      violation("begin of a %s command buffer returned %s", c.alive ? "live" : "dead",
                resultName(r));
    if (r == Result::Success) c.state = CbState::Recording;
  }
  const size_t n = in_.below(6);
  for (size_t i = 0; i < n; ++i) {
    const bool recording = c.alive && c.state == CbState::Recording;
    const uint8_t kind = in_.below(6);
    BufferSlot& a = buffers_[in_.below(kBuffers)];
    BufferSlot& b = buffers_[in_.below(kBuffers)];
    auto usable = [&](const BufferSlot& x) { return x.alive && x.deviceId == c.deviceId; };
    auto offset = [&](const BufferSlot& x) -> uint64_t {
      switch (in_.below(5)) {
        case 0: return 0;
        case 1: return 4;
        case 2: return x.size / 2 / 4 * 4;
        case 3: return x.size;
        default: return in_.u16();
      }
    };
    auto length = [&](const BufferSlot& x) -> uint64_t {
      switch (in_.below(5)) {
        case 0: return 4;
        case 1: return x.size;
        case 2: return 0;
        case 3: return UINT64_MAX - 3;
        default: return in_.u16();
      }
    };
    Result r;
    bool valid = recording;
    const char* what;
    switch (kind) {
      case 0: {
        what = "copy";
        const uint64_t so = offset(a), doff = offset(b), size = length(a);
        valid = valid && usable(a) && usable(b) && size > 0 && so <= a.size &&
                size <= a.size - so && doff <= b.size && size <= b.size - doff &&
                (&a != &b || so + size <= doff || doff + size <= so);
        r = c.handle.copyBuffer(a.handle, so, b.handle, doff, size);
        break;
      }
      case 1: {
        what = "fill";
        const uint64_t off = offset(a), size = length(a);
        valid = valid && usable(a) && size > 0 && off % 4 == 0 && size % 4 == 0 && off <= a.size &&
                size <= a.size - off;
        r = c.handle.fillBuffer(a.handle, off, size, 0xA5A5A5A5u);
        break;
      }
      case 2: {
        what = "update";
        const uint64_t off = offset(a);
        const uint64_t size = in_.below(4) == 0 ? kMaxUpdateSize + 4 : in_.below(64);
        const std::vector<uint8_t> data(size ? size : 1, 0x5A);
        valid = valid && usable(a) && size > 0 && size <= kMaxUpdateSize && off <= a.size &&
                size <= a.size - off;
        r = c.handle.updateBuffer(a.handle, off, size, data.data());
        break;
      }
      case 3:
      case 4: {
        what = kind == 3 ? "hostCall" : "native";
        CallbackAction& act = actions_.emplace_back();
        act.kind = static_cast<CallbackAction::Kind>(in_.below(CallbackAction::kKinds));
        SemaphoreModel& s = pickSemaphore();
        act.semaphore = s.handle;
        act.value = act.kind == CallbackAction::Wait ? waitValue(s) : signalValue(s);
        if (act.kind == CallbackAction::Signal) s.requested(act.value);
        const uint8_t ret = in_.u8();
        act.ret = ret < 200   ? Result::Success
                  : ret < 250 ? static_cast<Result>(-1 - (ret % 14))
                              : Result::ErrorHostCallFailed;
        act.backend = backend_;
        const bool nullCallback = (in_.u8() & 15) == 0;
        valid = valid && !nullCallback;
        if (kind == 3)
          r = c.handle.hostCall(nullCallback ? nullptr : hostCallFn, &act);
        else
          r = c.handle.native(nullCallback ? nullptr : nativeFn, &act);
        break;
      }
      default: {
        what = "fill (misaligned)";
        valid = false;
        r = c.handle.fillBuffer(a.handle, 2, 6, 0);
        break;
      }
    }
    checkDefined(r, what);
    trace("  record %s -> %s", what, resultName(r));
    if (!valid && r == Result::Success) violation("recording an invalid %s succeeded", what);
    if (valid && r != Result::Success)
      violation("recording a valid %s returned %s: %s", what, resultName(r), lastErrorMessage());
  }
  if (!(flags & 2)) {
    Result r = c.handle.end();
    checkDefined(r, "CommandBuffer::end");
    const bool valid = c.alive && c.state == CbState::Recording;
    if (valid != (r == Result::Success))
      violation("end of a command buffer (%s) returned %s", valid ? "recording" : "not recording",
                resultName(r));
    if (r == Result::Success) c.state = CbState::Ended;
  }
  trace("record command buffer (flags 0x%02x, %zu commands)", flags, n);
}

void Session::submit() {
  const QueuePick q = pickQueue();
  bool valid = q.valid, increasing = true;
  const size_t infos = 1 + in_.below(3);
  std::vector<Entries> waits(infos), signals(infos);
  std::vector<std::vector<CommandBuffer>> cbs(infos);
  std::vector<SubmitInfo> submits(infos);
  for (size_t i = 0; i < infos; ++i) {
    waits[i] = waitList(3, &valid);
    const size_t n = in_.below(3);
    for (size_t k = 0; k < n; ++k) {
      const CommandBufferSlot& c = commandBuffers_[in_.below(kCommandBuffers)];
      if (!c.alive || c.state != CbState::Ended || c.deviceId != q.deviceId) valid = false;
      cbs[i].push_back(c.handle);
    }
    signals[i] = signalList(3, &valid, &increasing);
    submits[i].waits = waits[i].values;
    submits[i].commandBuffers = cbs[i];
    submits[i].signals = signals[i].values;
  }
  Result r = watched("Queue::submit", [&] { return q.queue.submit(submits); });
  checkDefined(r, "Queue::submit");
  trace("submit %zu batches to device %u -> %s", infos, q.deviceId, resultName(r));
  if (r == Result::Success) {
    if (!valid) violation("a submit naming a destroyed/null/unended/foreign object succeeded");
    if (!increasing) violation("a submit with a known non-increasing signal succeeded");
    for (const Entries& e : signals) accepted(e, q.deviceId);
  }
}

void Session::createBuffer() {
  DeviceSlot& d = devices_[in_.below(kDevices)];
  BufferSlot& b = buffers_[in_.below(kBuffers)];
  if (b.alive) return;
  static constexpr uint64_t kSizes[] = {0, 4, 16, 64, 256, 4096, 65536, 12};
  BufferCreateInfo info;
  info.size = kSizes[in_.below(std::size(kSizes))];
  info.memory = in_.u8() & 1 ? MemoryKind::HostPinned : MemoryKind::Device;
  Buffer h;
  Result r = d.handle.createBuffer(info, &h);
  checkDefined(r, "createBuffer");
  trace("createBuffer %llu bytes on device %u -> %s", static_cast<unsigned long long>(info.size),
        d.id, resultName(r));
  if (r == Result::Success && (!d.alive || info.size == 0))
    violation("createBuffer (size %llu, device %s) succeeded",
              static_cast<unsigned long long>(info.size), d.alive ? "live" : "dead");
  if (r != Result::Success) return;
  b = BufferSlot();
  b.handle = h;
  b.alive = true;
  b.deviceId = d.id;
  b.size = info.size;
}

void Session::destroyBuffer() {
  BufferSlot& b = buffers_[in_.below(kBuffers)];
  Result r = watched("Buffer::destroy", [&] { return b.handle.destroy(); });
  checkDefined(r, "Buffer::destroy");
  trace("destroy buffer -> %s", resultName(r));
  if (b.alive != (r == Result::Success))
    violation("destroy of a %s buffer returned %s", b.alive ? "live" : "dead", resultName(r));
  b.alive = false;
}

void Session::mapBuffer() {
  BufferSlot& b = buffers_[in_.below(kBuffers)];
  uint64_t size = 0;
  Result r = b.handle.getSize(&size);
  checkDefined(r, "Buffer::getSize");
  if (b.alive != (r == Result::Success) || (b.alive && size != b.size))
    violation("getSize of a %s buffer returned %s, %llu", b.alive ? "live" : "dead", resultName(r),
              static_cast<unsigned long long>(size));
  void* p = nullptr;
  r = b.handle.map(&p);
  checkDefined(r, "Buffer::map");
  trace("map buffer -> %s", resultName(r));
  if (r == Result::Success) {
    if (!b.alive) violation("map of a dead buffer succeeded");
    // Touch both ends: ASan reports a mapping that is not the buffer's memory.
    volatile uint8_t* bytes = static_cast<uint8_t*>(p);
    (void)bytes[0];
    (void)bytes[b.size - 1];
  }
}

void Session::alloca() {
  const QueuePick q = pickQueue();
  BufferSlot& b = buffers_[in_.below(kBuffers)];
  bool valid = q.valid, increasing = true;
  Entries waits = waitList(3, &valid);
  BufferCreateInfo info;
  info.size = in_.below(5) == 0 ? 0 : 4u << in_.below(12);
  info.memory = MemoryKind::Device;
  Entries signals = signalList(2, &valid, &increasing);
  if (b.alive) return;
  Buffer h;
  Result r = watched("Queue::allocaBuffer",
                     [&] { return q.queue.allocaBuffer(waits.values, info, signals.values, &h); });
  checkDefined(r, "Queue::allocaBuffer");
  trace("alloca %llu bytes on device %u -> %s", static_cast<unsigned long long>(info.size),
        q.deviceId, resultName(r));
  if (r != Result::Success) return;
  if (!valid || !increasing || info.size == 0 || !streamOrderedAlloc_)
    violation("an invalid allocaBuffer succeeded");
  accepted(signals, q.deviceId);
  b = BufferSlot();
  b.handle = h;
  b.alive = true;
  b.deviceId = q.deviceId;
  b.size = info.size;
  b.queueOrdered = true;
}

void Session::dealloca() {
  const QueuePick q = pickQueue();
  BufferSlot& b = buffers_[in_.below(kBuffers)];
  bool valid = q.valid && b.alive && b.deviceId == q.deviceId, increasing = true;
  Entries waits = waitList(3, &valid);
  Entries signals = signalList(2, &valid, &increasing);
  Result r = watched("Queue::deallocaBuffer", [&] {
    return q.queue.deallocaBuffer(waits.values, b.handle, signals.values);
  });
  checkDefined(r, "Queue::deallocaBuffer");
  trace("dealloca on device %u -> %s", q.deviceId, resultName(r));
  if (r != Result::Success) return;
  if (!valid || !increasing) violation("an invalid deallocaBuffer succeeded");
  accepted(signals, q.deviceId);
  b.alive = false;
}

void Session::waitIdle() {
  const uint64_t t = timeout();
  Result r;
  bool valid;
  if (in_.u8() & 1) {
    const QueuePick q = pickQueue();
    valid = q.valid;
    r = watched("Queue::waitIdle", [&] { return q.queue.waitIdle(t); });
  } else {
    DeviceSlot& d = devices_[in_.below(kDevices)];
    valid = d.alive;
    r = watched("Device::waitIdle", [&] { return d.handle.waitIdle(t); });
  }
  checkDefined(r, "waitIdle");
  trace("waitIdle (timeout %llu ns) -> %s", static_cast<unsigned long long>(t), resultName(r));
  if (!valid && r != Result::ErrorInvalidHandle)
    violation("waitIdle of a dead/null object returned %s", resultName(r));
  if (valid && r != Result::Success && r != Result::Timeout && r != Result::ErrorDeviceLost)
    violation("waitIdle returned %s", resultName(r));
}

// Over-long lists and null lists with counts: ErrorInvalidArgument, nothing submitted.
void Session::hugeLists() {
  SemaphoreModel& s = pickSemaphore();
  const QueuePick q = pickQueue();
  const uint8_t which = in_.below(4);
  Result r;
  if (which == 0) {
    std::vector<SemaphoreValue> waits(kMaxWaitCount + 1, SemaphoreValue{s.handle, 0});
    r = watched("waitSemaphores(huge)",
                [&] { return instance_.waitSemaphores(waits, WaitMode::All, 0); });
  } else if (which == 1) {
    std::vector<SemaphoreValue> signals(kMaxSubmitEntries + 1, SemaphoreValue{s.handle, 1});
    SubmitInfo info;
    info.signals = signals;
    r = watched("submit(huge)", [&] { return q.queue.submit(info); });
  } else if (which == 2) {
    std::vector<SubmitInfo> infos(kMaxSubmitInfos + 1);
    r = watched("submit(huge infos)", [&] { return q.queue.submit(infos); });
  } else {
    SubmitInfo info;
    info.waits = Span<const SemaphoreValue>(nullptr, 3);
    r = watched("submit(null list)", [&] { return q.queue.submit(info); });
  }
  checkDefined(r, "huge list");
  trace("huge/null list %u -> %s", which, resultName(r));
  if (r == Result::Success) violation("an over-long or null list (kind %u) was accepted", which);
}

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
        checkDefined(r, "Queue::waitIdle");
        trace("drain: waitIdle device %u -> %s", d.id, resultName(r));
        if (r == Result::Timeout)
          violation(
              "a queue was still busy 10 s after every waited value was signalled or "
              "failed: a lost signal or a hang");
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

}  // namespace

int runOneInput(const uint8_t* data, size_t size) {
  Session session(data, size);
  session.run();
  return 0;
}

}  // namespace baton_fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return baton_fuzz::runOneInput(data, size);
}
