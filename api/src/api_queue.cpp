// Public entry points of Queue: validation of submissions, then the scheduler (queue.cpp).
#include "api_entry.hpp"
#include "baton/device.hpp"
#include "baton/queue.hpp"
#include "callback_scope.hpp"
#include "shared_timeline.hpp"
#include "trace.hpp"

namespace baton {

namespace core {
Status validateBufferInfo(const core::Device& dev, const BufferCreateInfo& info);
}

namespace {

// What is wrong with a list checkList() rejected.
[[gnu::noinline]] Status listError(size_t size, const void* data, const char* what, size_t index) {
  if (size > kMaxSubmitEntries)
    return error(Result::ErrorInvalidArgument,
                 "submit info %zu: %zu %s exceed kMaxSubmitEntries (%zu)", index, size, what,
                 kMaxSubmitEntries);
  if (size && !data)
    return error(Result::ErrorInvalidArgument,
                 "submit info %zu: %s pointer is null with %zu entries", index, what, size);
  return Status();
}

inline Status checkList(size_t size, const void* data, const char* what, size_t index) {
  if (size <= kMaxSubmitEntries && (size == 0 || data)) [[likely]]
    return Status();
  return listError(size, data, what, index);
}

Status buildWaits(core::Device& dev, Span<const SemaphoreValue> waits, size_t index,
                  Submission& sub) {
  BATON_TRY(checkList(waits.size(), waits.data(), "waits", index));
  sub.waits.reserve(waits.size());
  for (size_t i = 0; i < waits.size(); ++i) {
    Status st;
    HandleTable::Pin pinned =
        pin(waits[i].semaphore.raw(), ObjectType::Semaphore, "semaphore", &st);
    if (!pinned) return st.context(format("submit info %zu, wait %zu", index, i));
    core::Semaphore* s = pinned.as<core::Semaphore>();
    if (s->instance() != dev.instance())
      return error(Result::ErrorDeviceMismatch,
                   "submit info %zu, wait %zu: semaphore '%s' belongs to another instance", index,
                   i, s->name().c_str());
    // A wait already met stays met (values only rise): the scheduler would drop it first thing.
    // Dropping it here also spares taking a reference to the semaphore.
    if (s->current() >= waits[i].value) continue;
    sub.waits.push_back({Ref<core::Semaphore>(s), waits[i].value, nullptr});
  }
  return Status();
}

Status buildSignals(core::Device& dev, Span<const SemaphoreValue> signals, size_t index,
                    Submission& sub) {
  BATON_TRY(checkList(signals.size(), signals.data(), "signals", index));
  sub.signals.reserve(signals.size());
  for (size_t i = 0; i < signals.size(); ++i) {
    Status st;
    HandleTable::Pin pinned =
        pin(signals[i].semaphore.raw(), ObjectType::Semaphore, "semaphore", &st);
    if (!pinned) return st.context(format("submit info %zu, signal %zu", index, i));
    core::Semaphore* s = pinned.as<core::Semaphore>();
    if (s->instance() != dev.instance())
      return error(Result::ErrorDeviceMismatch,
                   "submit info %zu, signal %zu: semaphore '%s' belongs to another instance", index,
                   i, s->name().c_str());
    uint64_t current = s->current();
    if (signals[i].value <= current)
      return error(Result::ErrorNonIncreasingValue,
                   "submit info %zu, signal %zu: value %llu is not greater than the current "
                   "value %llu of semaphore '%s'",
                   index, i, static_cast<unsigned long long>(signals[i].value),
                   static_cast<unsigned long long>(current), s->name().c_str());
    if (s->hasExternals()) [[unlikely]] {
      if (signals[i].value > kSharedSemaphoreMaxValue && core::isShared(*s))
        return error(Result::ErrorInvalidArgument,
                     "submit info %zu, signal %zu: semaphore '%s' is shared: its values stay at "
                     "or below 2^62 - 1 (kSharedSemaphoreMaxValue), not %llu",
                     index, i, s->name().c_str(),
                     static_cast<unsigned long long>(signals[i].value));
      // The value is promised from here on (a process that dies with it promised fails its
      // peers' waits).
      for (const Ref<core::ExternalTimeline>& x : s->externals())
        x->onSignalSubmitted(signals[i].value);
    }
    sub.signals.push_back({Ref<core::Semaphore>(s), signals[i].value});
  }
  return Status();
}

Status buildSubmission(core::Device& dev, const SubmitInfo& info, size_t i, Submission& sub) {
  BATON_TRY(buildWaits(dev, info.waits, i, sub));
  BATON_TRY(
      checkList(info.commandBuffers.size(), info.commandBuffers.data(), "command buffers", i));
  sub.commandLists.reserve(info.commandBuffers.size());
  for (size_t c = 0; c < info.commandBuffers.size(); ++c) {
    Status st;
    HandleTable::Pin pinned =
        pin(info.commandBuffers[c].raw(), ObjectType::CommandBuffer, "command buffer", &st);
    if (!pinned) return st.context(format("submit info %zu, command buffer %zu", i, c));
    core::CommandBuffer* cb = pinned.as<core::CommandBuffer>();
    if (cb->device.get() != &dev)
      return error(Result::ErrorDeviceMismatch,
                   "submit info %zu, command buffer %zu was created on %s, not on %s", i, c,
                   cb->device->label().c_str(), dev.label().c_str());
    std::lock_guard<std::mutex> lock(cb->mutex);
    if (!cb->ended)
      return error(Result::ErrorInvalidState,
                   "submit info %zu, command buffer %zu has no ended recording (call begin() "
                   "and end() before submitting)",
                   i, c);
    for (const Ref<core::Communicator>& comm : cb->ended->communicators)
      BATON_TRY(comm->usable().context(format("submit info %zu, command buffer %zu", i, c)));
    sub.commandLists.push_back(cb->ended);
  }
  return buildSignals(dev, info.signals, i, sub);
}

// q.submit(subs), traced when tracing is on (trace.hpp: the submissions' ids, the "submit" slice).
Status submitTraced(core::Queue& q, std::vector<std::unique_ptr<Submission>>& subs) {
  uint64_t first = 0;
  for (std::unique_ptr<Submission>& sub : subs) {
    const uint64_t id = core::trace::submitted(q, *sub);
    if (!first) first = id;
  }
  Status s = q.submit(subs);
  core::trace::submitEnd(first, static_cast<uint32_t>(subs.size()));
  return s;
}

Ref<core::Queue> findQueue(uint64_t h, Status* st) {
  return find<core::Queue>(h, ObjectType::Queue, "queue", st);
}

}  // namespace

Result Queue::submit(Span<const SubmitInfo> submits) const noexcept {
  return entry("Queue::submit", [&](const core::Instance*& owner) -> Status {
    Status st;
    HandleTable::Pin pinned = pin(handle_, ObjectType::Queue, "queue", &st);
    if (!pinned) return st;
    core::Queue* q = pinned.as<core::Queue>();
    core::Device& dev = *q->device();
    owner = dev.instance();
    if (submits.size() > kMaxSubmitInfos)
      return error(Result::ErrorInvalidArgument, "%zu submit infos exceed kMaxSubmitInfos (%zu)",
                   submits.size(), kMaxSubmitInfos);
    if (submits.size() && !submits.data())
      return Status(Result::ErrorInvalidArgument, "submit info pointer is null");
    if (dev.lost()) return dev.lostStatus();
    if (submits.size() == 1) {  // the common case: no vector of submissions
      auto sub = std::make_unique_for_overwrite<Submission>();  // no zeroing of inline storage
      BATON_TRY(buildSubmission(dev, submits[0], 0, *sub));
      const uint64_t traced = core::trace::submitted(*q, *sub);  // 0 when tracing is off
      Status s = q->submit(std::move(sub));
      core::trace::submitEnd(traced, 1);
      return s;
    }
    std::vector<std::unique_ptr<Submission>> subs;
    subs.reserve(submits.size());
    for (size_t i = 0; i < submits.size(); ++i) {
      auto sub = std::make_unique_for_overwrite<Submission>();  // no zeroing of inline storage
      BATON_TRY(buildSubmission(dev, submits[i], i, *sub));
      subs.push_back(std::move(sub));
    }
    return submitTraced(*q, subs);
  });
}

Result Queue::allocaBuffer(Span<const SemaphoreValue> waits, const BufferCreateInfo& info,
                           Span<const SemaphoreValue> signals, Buffer* buffer) const noexcept {
  return entry("Queue::allocaBuffer", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Queue> q = findQueue(handle_, &st);
    if (!q) return st;
    core::Device& dev = *q->device();
    owner = dev.instance();
    BATON_NULL_CHECK(buffer, "buffer output pointer");
    *buffer = Buffer();
    if (!(dev.physical()->properties.capabilities & kCapabilityStreamOrderedAlloc))
      return error(Result::ErrorNotSupported, "%s has no stream-ordered allocation",
                   dev.label().c_str());
    if (info.flags & kBufferShareable)
      return Status(Result::ErrorInvalidArgument,
                    "queue-ordered buffers are not shareable: create shareable buffers with "
                    "Device::createBuffer");
    BATON_TRY(validateBufferInfo(dev, info));
    if (dev.lost()) return dev.lostStatus();
    std::vector<std::unique_ptr<Submission>> subs;
    subs.push_back(std::make_unique<Submission>());
    Submission& sub = *subs.back();
    sub.kind = Submission::Kind::Alloca;
    BATON_TRY(buildWaits(dev, waits, 0, sub));
    BATON_TRY(buildSignals(dev, signals, 0, sub));
    Ref<core::Buffer> b = makeRef<core::Buffer>(Ref<core::Device>(&dev), info);
    b->queueOrdered = true;
    uint64_t h = HandleTable::get().insert(b, ObjectType::Buffer);
    if (!h) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
    b->handle = h;
    sub.buffer = b;
    Status s = submitTraced(*q, subs);
    if (!s.ok()) {
      Status ignored;
      HandleTable::get().remove(h, ObjectType::Buffer, "buffer", &ignored);
      return s;
    }
    dev.children.add(h, ObjectType::Buffer);
    *buffer = Buffer(h);
    return Status();
  });
}

Result Queue::deallocaBuffer(Span<const SemaphoreValue> waits, Buffer buffer,
                             Span<const SemaphoreValue> signals) const noexcept {
  return entry("Queue::deallocaBuffer", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Queue> q = findQueue(handle_, &st);
    if (!q) return st;
    core::Device& dev = *q->device();
    owner = dev.instance();
    Ref<core::Buffer> b = find<core::Buffer>(buffer.raw(), ObjectType::Buffer, "buffer", &st);
    if (!b) return st;
    if (b->device.get() != &dev)
      return error(Result::ErrorDeviceMismatch, "buffer was allocated on %s, not on %s",
                   b->device->label().c_str(), dev.label().c_str());
    if (!b->queueOrdered)
      return Status(Result::ErrorInvalidArgument,
                    "buffer was not made by Queue::allocaBuffer; destroy it with Buffer::destroy");
    if (dev.lost()) return dev.lostStatus();
    std::vector<std::unique_ptr<Submission>> subs;
    subs.push_back(std::make_unique<Submission>());
    Submission& sub = *subs.back();
    sub.kind = Submission::Kind::Dealloca;
    BATON_TRY(buildWaits(dev, waits, 0, sub));
    BATON_TRY(buildSignals(dev, signals, 0, sub));
    sub.buffer = b;
    // The handle goes once the dealloca is queued, not before: an error result leaves the buffer
    // the caller's (queue.hpp), ErrorDeviceLost from the queue included (the device can be lost
    // while this call runs). A failure of the free itself, later on the queue, fails the
    // signals, and the backend releases the memory.
    BATON_TRY(submitTraced(*q, subs));
    Status ignored;  // a destroy of the same handle racing this call (the caller's race) took it
    (void)HandleTable::get().remove(buffer.raw(), ObjectType::Buffer, "buffer", &ignored);
    dev.children.remove(buffer.raw());
    return Status();
  });
}

Result Queue::waitIdle(uint64_t timeoutNs) const noexcept {
  return entry("Queue::waitIdle", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Queue> q = findQueue(handle_, &st);
    if (!q) return st;
    owner = q->device()->instance();
    BATON_TRY(core::refuseInsideOwnCallback("Queue::waitIdle", q->device()));
    core::trace::WaitIdleSlice traced(q->label());
    Status s = q->waitIdle(Deadline::after(timeoutNs));
    traced.setResult(s.code());
    return s;
  });
}

Result Queue::getDevice(Device* device) const noexcept {
  return entry("Queue::getDevice", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Queue> q = findQueue(handle_, &st);
    if (!q) return st;
    owner = q->device()->instance();
    BATON_NULL_CHECK(device, "device output pointer");
    *device = Device(q->device()->handle);
    return Status();
  });
}

}  // namespace baton
