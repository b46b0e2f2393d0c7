#include "handle_table.hpp"

namespace baton::core {

const char* objectTypeName(ObjectType type) noexcept {
  switch (type) {
    case ObjectType::Instance: return "Instance";
    case ObjectType::PhysicalDevice: return "PhysicalDevice";
    case ObjectType::Device: return "Device";
    case ObjectType::Queue: return "Queue";
    case ObjectType::Semaphore: return "Semaphore";
    case ObjectType::CommandBuffer: return "CommandBuffer";
    case ObjectType::Buffer: return "Buffer";
    case ObjectType::Communicator: return "Communicator";
    case ObjectType::Image: return "Image";
  }
  return "Object";
}

uint64_t HandleTable::insert(Ref<Object> object, ObjectType type) {
  uint32_t index;
  {
    std::lock_guard<std::mutex> lock(freeMutex_);
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      if (nextIndex_ >= kMaxChunks * kChunkSize) return 0;
      index = nextIndex_++;
      uint32_t c = index >> kChunkBits;
      if (!chunks_[c].load(std::memory_order_relaxed))
        chunks_[c].store(new Slot[kChunkSize], std::memory_order_release);
    }
  }
  Slot* s = slot(index);
  s->object = object.detach();
  s->type = type;
  uint64_t gen = s->state.load(std::memory_order_relaxed) >> 32;
  if (gen == 0) gen = 1;  // generation 0 would let handle 0 (null) name a slot
  s->state.store(gen << 32 | kAlive, std::memory_order_release);
  return gen << 32 | index;
}

// "an Instance", "a Semaphore": the article for a type name in messages.
static const char* article(ObjectType type) {
  const char first = objectTypeName(type)[0];
  return first == 'A' || first == 'E' || first == 'I' || first == 'O' || first == 'U' ? "an" : "a";
}

static Status invalid(const char* what, uint64_t handle, const char* why) {
  return error(Result::ErrorInvalidHandle, "%s handle 0x%llx %s", what,
               static_cast<unsigned long long>(handle), why);
}

HandleTable::Pin HandleTable::pinSlow(uint64_t handle, ObjectType type, const char* what,
                                      Status* status) const {
  if (handle == 0) {
    *status = error(Result::ErrorInvalidHandle, "%s handle is null", what);
    return Pin();
  }
  uint32_t index = static_cast<uint32_t>(handle);
  uint64_t gen = handle >> 32;
  Slot* s = index ? slot(index) : nullptr;
  if (!s || gen == 0) {
    *status = invalid(what, handle, "was never created by baton");
    return Pin();
  }
  uint64_t st = s->state.load(std::memory_order_acquire);
  for (;;) {
    if ((st >> 32) != gen || !(st & kAlive)) {
      // A slot whose generation never reached the handle's was never given this handle.
      *status =
          invalid(what, handle,
                  (st >> 32) < gen ? "was never created by baton" : "was destroyed (stale handle)");
      return Pin();
    }
    if (s->state.compare_exchange_weak(st, st + 1, std::memory_order_acquire)) break;
  }
  Pin result(this, s, index);  // drops the guard when it goes
  if (s->type != type) {
    *status = error(Result::ErrorInvalidHandle, "%s handle 0x%llx names %s %s, not %s %s", what,
                    static_cast<unsigned long long>(handle), article(s->type),
                    objectTypeName(s->type), article(type), objectTypeName(type));
    return Pin();
  }
  return result;
}

Ref<Object> HandleTable::remove(uint64_t handle, ObjectType type, const char* what,
                                Status* status) {
  Ref<Object> object = lookup(handle, type, what, status);
  if (!object) return nullptr;
  uint32_t index = static_cast<uint32_t>(handle);
  Slot* s = slot(index);
  uint64_t st = s->state.load(std::memory_order_acquire);
  for (;;) {
    if ((st >> 32) != (handle >> 32) || !(st & kAlive)) {
      *status = invalid(what, handle, "was destroyed (stale handle)");
      return nullptr;  // lost a race with another destroy
    }
    if (s->state.compare_exchange_weak(st, st & ~kAlive, std::memory_order_acq_rel)) break;
  }
  if ((st & kGuardMask) == 0) recycle(s, index);
  return object;
}

void HandleTable::recycle(Slot* s, uint32_t index) const {
  Object* o = s->object;
  s->object = nullptr;
  uint64_t gen = (s->state.load(std::memory_order_relaxed) >> 32) + 1;
  if (gen > 0xffffffffull) gen = 1;
  s->state.store(gen << 32, std::memory_order_release);
  if (o) o->release();
  std::lock_guard<std::mutex> lock(freeMutex_);
  free_.push_back(index);
}

}  // namespace baton::core
