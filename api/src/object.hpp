// Reference-counted base of every core object, and Ref<T>, the intrusive owning pointer.
// Handles in the public API name objects through the handle table (handle_table.hpp); internal
// references (a pending submission holding a semaphore, a command holding a buffer) are Refs,
// so that destroying a handle never frees memory that queued work still uses.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace baton::core {

class Object {
 public:
  Object() = default;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  virtual ~Object() = default;

  void addRef() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // The number of references; only a hint under concurrency (used to tell whether pending work
  // still references an object whose handle is being destroyed).
  uint32_t refCount() const noexcept { return refs_.load(std::memory_order_acquire); }
  void release() const noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  // Drops `n` references at once (references detached from n Refs): one atomic operation where
  // n release() calls would each move the count's cache line.
  void releaseMany(uint32_t n) const noexcept {
    if (refs_.fetch_sub(n, std::memory_order_acq_rel) == n) delete this;
  }

 private:
  mutable std::atomic<uint32_t> refs_{1};
};

// Intrusive owning pointer. Ref<T>::adopt takes over the initial reference of `new T`.
template <class T>
class Ref {
 public:
  Ref() noexcept = default;
  Ref(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)
  explicit Ref(T* p) noexcept : p_(p) {
    if (p_) p_->addRef();
  }
  static Ref adopt(T* p) noexcept {
    Ref r;
    r.p_ = p;
    return r;
  }
  template <class U>
  Ref(const Ref<U>& o) noexcept : Ref(o.get()) {}  // NOLINT
  Ref(const Ref& o) noexcept : Ref(o.p_) {}
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <class U>
  Ref(Ref<U>&& o) noexcept : p_(o.detach()) {}  // NOLINT
  ~Ref() {
    if (p_) p_->release();
  }
  Ref& operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

  T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  T* detach() noexcept { return std::exchange(p_, nullptr); }
  friend bool operator==(const Ref& a, const Ref& b) noexcept { return a.p_ == b.p_; }
  friend bool operator!=(const Ref& a, const Ref& b) noexcept { return a.p_ != b.p_; }

 private:
  T* p_ = nullptr;
};

template <class T, class... Args>
Ref<T> makeRef(Args&&... args) {
  return Ref<T>::adopt(new T(std::forward<Args>(args)...));
}

}  // namespace baton::core
