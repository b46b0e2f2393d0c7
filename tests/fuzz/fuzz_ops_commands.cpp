// The API fuzzer's command buffer operations (fuzz_session.hpp): create and destroy, record
// (copy, fill, update with valid and invalid ranges; host calls and native callbacks that signal,
// fail, query or wait on semaphores, sleep, or return errors; null callbacks; recording outside
// begin/end) and submit (random waits and signals, wait-before-signal, unended and foreign
// command buffers, non-increasing signals). The callbacks run on baton threads.
#include <chrono>
#include <thread>
#include <vector>

#include "fuzz_session.hpp"

namespace baton_fuzz {

namespace {

// What a recorded callback does when it runs (on a baton thread): its action, then its result.
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

}  // namespace

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

}  // namespace baton_fuzz
