/// \file
/// baton/unique.hpp — Unique<Handle>, the owning, move-only RAII wrapper of a baton handle.
///
/// Ownership: a Unique owns one handle and destroys it (Handle::destroy, result ignored) when it
/// is destroyed, reset or assigned. release() gives the handle back to manual ownership.
/// Thread safety: like a std::unique_ptr; the wrapped handle's own rules apply to its calls.
/// Destroy children before parents (declare parents first): a parent destroyed with live
/// children destroys them too and reports it (see Instance::destroy, Device::destroy).
#pragma once

#include <utility>

namespace baton {

/// Owns one handle of type `Handle` (Instance, Device, Semaphore, CommandBuffer, Buffer: any
/// class with `Result destroy() const`) and destroys it when it goes out of scope, like a
/// std::unique_ptr. Move-only. See baton/unique.hpp for ownership, thread safety and the
/// order of destruction. UniqueInstance, UniqueDevice, ... name the instantiations.
template <class Handle>
class Unique {
 public:
  /// Owns nothing (a null handle).
  Unique() noexcept = default;
  /// Takes ownership of `handle` (null is allowed: then it owns nothing).
  explicit Unique(Handle handle) noexcept : handle_(handle) {}
  /// Destroys the owned handle, if any (reset()).
  ~Unique() { reset(); }
  /// Not copyable: one owner per handle.
  Unique(const Unique&) = delete;
  /// Not copyable: one owner per handle.
  Unique& operator=(const Unique&) = delete;
  /// Takes the handle `other` owns; `other` owns nothing afterwards.
  Unique(Unique&& other) noexcept : handle_(other.release()) {}
  /// Destroys the owned handle, if any, then takes the handle `other` owns; `other` owns nothing
  /// afterwards. Self-assignment changes nothing.
  Unique& operator=(Unique&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }

  /// The owned handle (null when none); ownership stays here.
  Handle get() const noexcept { return handle_; }
  /// Calls a member of the owned handle: `semaphore->signal(1)`.
  const Handle* operator->() const noexcept { return &handle_; }
  /// The owned handle, as get(); ownership stays here.
  Handle operator*() const noexcept { return handle_; }
  /// True when a (non-null) handle is owned.
  explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

  /// Gives up ownership without destroying; the caller destroys the handle.
  Handle release() noexcept { return std::exchange(handle_, Handle{}); }
  /// Destroys the owned handle, if any, and takes `handle`.
  void reset(Handle handle = Handle{}) noexcept {
    Handle old = std::exchange(handle_, handle);
    if (old) (void)old.destroy();
  }
  /// Destroys the owned handle and returns where a create call may write a new one:
  /// `instance.createSemaphore(info, semaphore.put());`
  Handle* put() noexcept {
    reset();
    return &handle_;
  }

 private:
  Handle handle_{};
};

}  // namespace baton
