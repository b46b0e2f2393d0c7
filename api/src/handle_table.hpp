// The process-wide handle table. A public handle is (generation << 32 | slot index); index 0 is
// never used, so the null handle is 0. Looking a handle up checks its generation, its liveness
// and its type, so null, destroyed, stale and wrong-type handles are reported, never
// dereferenced: each gets a clear result (docs/bad-input.md).
//
// Each slot's state word packs {generation:32, alive:1, guards:31}. lookup() raises `guards`
// with a CAS only while the generation matches and the slot is alive, takes a Ref to the object,
// and drops the guard; remove() clears `alive`; whoever drops the last guard of a dead slot (or
// remove() itself, when none is held) releases the table's Ref and recycles the slot with the
// next generation. Slot memory is allocated in chunks that are never freed, so a racing lookup
// always reads a valid state word. Lock-free lookups; insert/remove take a mutex for the free
// list only.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "object.hpp"
#include "status.hpp"

namespace baton::core {

enum class ObjectType : uint8_t {
  Instance = 1,
  PhysicalDevice,
  Device,
  Queue,
  Semaphore,
  CommandBuffer,
  Buffer,
  Communicator,
  Image,
};
const char* objectTypeName(ObjectType type) noexcept;

class HandleTable {
  struct Slot {
    std::atomic<uint64_t> state{0};
    Object* object = nullptr;  // one table reference while alive or guarded
    ObjectType type{};
  };

 public:
  // Inline: the submit path looks up three handles (a call each to the .cpp was measurable).
  static HandleTable& get() {
    // Never destroyed: handles may be used (and rejected) during static destruction.
    static HandleTable* table = new HandleTable;
    return *table;
  }

  // A looked-up object kept alive by the guard on its slot rather than by a reference, until the
  // Pin is destroyed. For what an entry point uses only until it returns: a guard is two atomic
  // operations on the slot, a reference two more on the object's count, which other threads
  // (completion threads releasing finished work) write too.
  class Pin {
   public:
    Pin() noexcept = default;
    Pin(Pin&& o) noexcept
        : table_(o.table_), slot_(std::exchange(o.slot_, nullptr)), index_(o.index_) {}
    Pin& operator=(Pin&&) = delete;
    ~Pin() {
      if (slot_) table_->dropGuard(slot_, index_);
    }
    explicit operator bool() const noexcept { return slot_ != nullptr; }
    template <class T>
    T* as() const noexcept {
      return static_cast<T*>(slot_->object);
    }

   private:
    friend class HandleTable;
    Pin(const HandleTable* table, Slot* slot, uint32_t index) noexcept
        : table_(table), slot_(slot), index_(index) {}
    const HandleTable* table_ = nullptr;
    Slot* slot_ = nullptr;
    uint32_t index_ = 0;
  };

  // Publishes `object` under a new handle. Returns 0 when the table is full.
  uint64_t insert(Ref<Object> object, ObjectType type);
  // Looks a handle up; on failure returns an empty Pin and sets *status to ErrorInvalidHandle
  // with a message naming `what` (e.g. "semaphore") and why (null, destroyed, wrong type).
  Pin pin(uint64_t handle, ObjectType type, const char* what, Status* status) const {
    // A live handle of the right type is decided here, inline (the submit path pins three
    // objects); anything else goes to pinSlow(), which also says what is wrong.
    uint32_t index = static_cast<uint32_t>(handle);
    uint64_t gen = handle >> 32;
    if (Slot* s = gen ? slot(index) : nullptr) {
      uint64_t st = s->state.load(std::memory_order_acquire);
      while ((st >> 32) == gen && (st & kAlive)) {
        if (s->state.compare_exchange_weak(st, st + 1, std::memory_order_acquire)) {
          if (s->type == type) [[likely]]
            return Pin(this, s, index);
          dropGuard(s, index);
          break;
        }
      }
    }
    return pinSlow(handle, type, what, status);
  }
  // The same, as a reference that outlives the call: null on failure.
  Ref<Object> lookup(uint64_t handle, ObjectType type, const char* what, Status* status) const {
    Pin p = pin(handle, type, what, status);
    return p ? Ref<Object>(p.as<Object>()) : nullptr;
  }
  // Invalidates the handle; returns the object it named (for its teardown), or null with
  // *status set as lookup() does.
  Ref<Object> remove(uint64_t handle, ObjectType type, const char* what, Status* status);

  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr uint32_t kMaxChunks = 1024;  // 4M live handles

 private:
  static constexpr uint64_t kAlive = 1ull << 31;
  static constexpr uint64_t kGuardMask = kAlive - 1;

  Slot* slot(uint32_t index) const {
    // A forged or corrupt handle can carry any index: never read past the chunk array.
    if ((index >> kChunkBits) >= kMaxChunks) return nullptr;
    Slot* chunk = chunks_[index >> kChunkBits].load(std::memory_order_acquire);
    return chunk ? &chunk[index & (kChunkSize - 1)] : nullptr;
  }
  Pin pinSlow(uint64_t handle, ObjectType type, const char* what, Status* status) const;
  // Inline: every Pin ends here (three per submit).
  void dropGuard(Slot* s, uint32_t index) const {
    uint64_t prev = s->state.fetch_sub(1, std::memory_order_acq_rel);
    if ((prev & kGuardMask) == 1 && !(prev & kAlive)) [[unlikely]]
      recycle(s, index);
  }
  void recycle(Slot* s, uint32_t index) const;

  std::atomic<Slot*> chunks_[kMaxChunks] = {};
  mutable std::mutex freeMutex_;
  mutable std::vector<uint32_t> free_;
  uint32_t nextIndex_ = 1;
};

// Typed helpers: lookupAs<core::Semaphore>(h.raw(), ObjectType::Semaphore, "semaphore", &st).
template <class T>
Ref<T> lookupAs(uint64_t handle, ObjectType type, const char* what, Status* status) {
  Ref<Object> o = HandleTable::get().lookup(handle, type, what, status);
  return Ref<T>::adopt(static_cast<T*>(o.detach()));
}

}  // namespace baton::core
