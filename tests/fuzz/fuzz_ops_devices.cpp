// The API fuzzer's device and memory operations (fuzz_session.hpp): create and destroy devices
// (a destroyed device's accepted signals must be reached or failed), buffers (create, destroy,
// size and map), queue-ordered alloca/dealloca, Queue/Device::waitIdle, and over-long or null
// lists that must be refused.
#include <iterator>
#include <vector>

#include "fuzz_session.hpp"

namespace baton_fuzz {

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
    s.checkSignalSettled(p.value, when);
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

}  // namespace baton_fuzz
