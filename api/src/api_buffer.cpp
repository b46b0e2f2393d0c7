// Public entry points of Buffer.
#include "api_entry.hpp"
#include "baton/buffer.hpp"

namespace baton {

static Ref<core::Buffer> findBuffer(uint64_t h, Status* st) {
  return find<core::Buffer>(h, ObjectType::Buffer, "buffer", st);
}

Result Buffer::destroy() const noexcept {
  // The destroyed object may hold the last reference to its instance: keep the instance
  // alive until entry() has reported through its callback.
  Ref<core::Instance> keepAlive;
  return entry("Buffer::destroy", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<Object> o = HandleTable::get().remove(handle_, ObjectType::Buffer, "buffer", &st);
    if (!o) return st;
    auto* b = static_cast<core::Buffer*>(o.get());
    keepAlive = Ref<core::Instance>(b->device->instance());
    owner = keepAlive.get();
    b->device->children.remove(handle_);
    return Status();  // recordings that use it keep its memory until they are done
  });
}

Result Buffer::getSize(uint64_t* size) const noexcept {
  return entry("Buffer::getSize", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Buffer> b = findBuffer(handle_, &st);
    if (!b) return st;
    owner = b->device->instance();
    BATON_NULL_CHECK(size, "size output pointer");
    *size = b->info.size;
    return Status();
  });
}

Result Buffer::map(void** hostPointer) const noexcept {
  return entry("Buffer::map", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Buffer> b = findBuffer(handle_, &st);
    if (!b) return st;
    owner = b->device->instance();
    BATON_NULL_CHECK(hostPointer, "host pointer output");
    *hostPointer = nullptr;
    if (!b->backed.load(std::memory_order_acquire))
      return Status(Result::NotReady);  // alloca not executed yet
    if (!b->allocation.host)
      return error(Result::ErrorNotSupported, "buffer memory on %s is not host-visible",
                   b->device->label().c_str());
    *hostPointer = b->allocation.host;
    return Status();
  });
}

Result Buffer::getDeviceAddress(uint64_t* address) const noexcept {
  return entry("Buffer::getDeviceAddress", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Buffer> b = findBuffer(handle_, &st);
    if (!b) return st;
    owner = b->device->instance();
    BATON_NULL_CHECK(address, "address output pointer");
    *address = 0;
    if (!b->backed.load(std::memory_order_acquire)) return Status(Result::NotReady);
    *address = b->allocation.deviceAddress;
    return Status();
  });
}

Result Buffer::exportFd(int* fd) const noexcept {
  return entry("Buffer::exportFd", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Buffer> b = findBuffer(handle_, &st);
    if (!b) return st;
    owner = b->device->instance();
    BATON_NULL_CHECK(fd, "fd output pointer");
    *fd = -1;
    if (!b->shared)
      return error(Result::ErrorInvalidArgument,
                   "the buffer of %llu bytes on %s is not shareable (create it with "
                   "kBufferShareable)",
                   static_cast<unsigned long long>(b->info.size), b->device->label().c_str());
    return b->shared->exportFd(fd);
  });
}

}  // namespace baton
