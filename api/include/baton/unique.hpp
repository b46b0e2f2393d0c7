// baton/unique.hpp — Unique<Handle>, the owning, move-only RAII wrapper of a baton handle.
//
// Ownership: a Unique owns one handle and destroys it (Handle::destroy, result ignored) when it
// is destroyed, reset or assigned. release() gives the handle back to manual ownership.
// Thread safety: like a std::unique_ptr; the wrapped handle's own rules apply to its calls.
// Destroy children before parents (declare parents first): a parent destroyed with live
// children destroys them too and reports it (see Instance::destroy, Device::destroy).
#pragma once

#include <utility>

namespace baton {

template <class Handle>
class Unique {
 public:
  Unique() noexcept = default;
  explicit Unique(Handle handle) noexcept : handle_(handle) {}
  ~Unique() { reset(); }
  Unique(const Unique&) = delete;
  Unique& operator=(const Unique&) = delete;
  Unique(Unique&& other) noexcept : handle_(other.release()) {}
  Unique& operator=(Unique&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }

  Handle get() const noexcept { return handle_; }
  const Handle* operator->() const noexcept { return &handle_; }
  Handle operator*() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

  // Gives up ownership without destroying; the caller destroys the handle.
  Handle release() noexcept { return std::exchange(handle_, Handle{}); }
  // Destroys the owned handle, if any, and takes `handle`.
  void reset(Handle handle = Handle{}) noexcept {
    Handle old = std::exchange(handle_, handle);
    if (old) (void)old.destroy();
  }
  // Destroys the owned handle and returns where a create call may write a new one:
  //   instance.createSemaphore(info, semaphore.put());
  Handle* put() noexcept {
    reset();
    return &handle_;
  }

 private:
  Handle handle_{};
};

}  // namespace baton
