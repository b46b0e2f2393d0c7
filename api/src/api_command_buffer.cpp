// Public entry points of CommandBuffer: recording, with every range checked here so backends can
// trust what they execute.
#include <cstring>

#include "api_entry.hpp"
#include "baton/command_buffer.hpp"

namespace baton {

namespace {

// Looks up the command buffer, checks it is recording, and runs `record` on its recording.
template <class Fn>
Status record(uint64_t handle, const core::Instance*& owner, Fn&& fn) {
  Status st;
  Ref<core::CommandBuffer> cb =
      find<core::CommandBuffer>(handle, ObjectType::CommandBuffer, "command buffer", &st);
  if (!cb) return st;
  owner = cb->device->instance();
  std::lock_guard<std::mutex> lock(cb->mutex);
  if (!cb->recording)
    return Status(Result::ErrorInvalidState,
                  "command buffer is not recording (call begin() first)");
  return fn(*cb, *cb->recording);
}

Status findBuffer(const core::CommandBuffer& cb, Buffer buffer, const char* what,
                  Ref<core::Buffer>* out) {
  Status st;
  *out = find<core::Buffer>(buffer.raw(), ObjectType::Buffer, what, &st);
  if (!*out) return st;
  if ((*out)->device != cb.device)
    return error(Result::ErrorDeviceMismatch, "%s buffer belongs to %s, the command buffer to %s",
                 what, (*out)->device->label().c_str(), cb.device->label().c_str());
  return Status();
}

Status checkRange(const core::Buffer& b, uint64_t offset, uint64_t size, const char* what) {
  if (size == 0) return error(Result::ErrorInvalidArgument, "%s size is 0", what);
  if (offset > b.info.size || size > b.info.size - offset)
    return error(Result::ErrorInvalidArgument,
                 "%s range [%llu, +%llu) is outside the buffer's %llu bytes", what,
                 static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size),
                 static_cast<unsigned long long>(b.info.size));
  return Status();
}

}  // namespace

Result CommandBuffer::destroy() const noexcept {
  // The destroyed object may hold the last reference to its instance: keep the instance
  // alive until entry() has reported through its callback.
  Ref<core::Instance> keepAlive;
  return entry("CommandBuffer::destroy", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<Object> o =
        HandleTable::get().remove(handle_, ObjectType::CommandBuffer, "command buffer", &st);
    if (!o) return st;
    auto* cb = static_cast<core::CommandBuffer*>(o.get());
    keepAlive = Ref<core::Instance>(cb->device->instance());
    owner = keepAlive.get();
    cb->device->children.remove(handle_);
    return Status();
  });
}

Result CommandBuffer::begin() const noexcept {
  return entry("CommandBuffer::begin", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::CommandBuffer> cb =
        find<core::CommandBuffer>(handle_, ObjectType::CommandBuffer, "command buffer", &st);
    if (!cb) return st;
    owner = cb->device->instance();
    std::lock_guard<std::mutex> lock(cb->mutex);
    cb->recording = makeRef<CommandList>();
    cb->ended = nullptr;
    return Status();
  });
}

Result CommandBuffer::end() const noexcept {
  return entry("CommandBuffer::end", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::CommandBuffer> cb =
        find<core::CommandBuffer>(handle_, ObjectType::CommandBuffer, "command buffer", &st);
    if (!cb) return st;
    owner = cb->device->instance();
    std::lock_guard<std::mutex> lock(cb->mutex);
    if (!cb->recording)
      return Status(Result::ErrorInvalidState,
                    "command buffer is not recording (call begin() first)");
    cb->ended = std::move(cb->recording);
    cb->recording = nullptr;
    return Status();
  });
}

Result CommandBuffer::copyBuffer(Buffer src, uint64_t srcOffset, Buffer dst, uint64_t dstOffset,
                                 uint64_t size) const noexcept {
  return entry("CommandBuffer::copyBuffer", [&](const core::Instance*& owner) -> Status {
    return record(handle_, owner, [&](core::CommandBuffer& cb, CommandList& list) -> Status {
      Command c{Command::Kind::Copy};
      BATON_TRY(findBuffer(cb, src, "source", &c.src));
      BATON_TRY(findBuffer(cb, dst, "destination", &c.dst));
      BATON_TRY(checkRange(*c.src, srcOffset, size, "source"));
      BATON_TRY(checkRange(*c.dst, dstOffset, size, "destination"));
      if (c.src == c.dst && srcOffset < dstOffset + size && dstOffset < srcOffset + size)
        return Status(Result::ErrorInvalidArgument, "source and destination ranges overlap");
      c.srcOffset = srcOffset;
      c.dstOffset = dstOffset;
      c.size = size;
      list.commands.push_back(std::move(c));
      return Status();
    });
  });
}

Result CommandBuffer::fillBuffer(Buffer dst, uint64_t offset, uint64_t size,
                                 uint32_t pattern) const noexcept {
  return entry("CommandBuffer::fillBuffer", [&](const core::Instance*& owner) -> Status {
    return record(handle_, owner, [&](core::CommandBuffer& cb, CommandList& list) -> Status {
      Command c{Command::Kind::Fill};
      BATON_TRY(findBuffer(cb, dst, "destination", &c.dst));
      BATON_TRY(checkRange(*c.dst, offset, size, "fill"));
      if (offset % 4 || size % 4)
        return error(
            Result::ErrorInvalidArgument, "fill offset %llu and size %llu must be multiples of 4",
            static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size));
      c.dstOffset = offset;
      c.size = size;
      c.pattern = pattern;
      list.commands.push_back(std::move(c));
      return Status();
    });
  });
}

Result CommandBuffer::updateBuffer(Buffer dst, uint64_t offset, uint64_t size,
                                   const void* data) const noexcept {
  return entry("CommandBuffer::updateBuffer", [&](const core::Instance*& owner) -> Status {
    return record(handle_, owner, [&](core::CommandBuffer& cb, CommandList& list) -> Status {
      Command c{Command::Kind::Update};
      BATON_NULL_CHECK(data, "update data");
      if (size > kMaxUpdateSize)
        return error(Result::ErrorInvalidArgument, "update size %llu exceeds kMaxUpdateSize (%llu)",
                     static_cast<unsigned long long>(size),
                     static_cast<unsigned long long>(kMaxUpdateSize));
      BATON_TRY(findBuffer(cb, dst, "destination", &c.dst));
      BATON_TRY(checkRange(*c.dst, offset, size, "update"));
      c.dstOffset = offset;
      c.size = size;
      c.data.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size);
      list.commands.push_back(std::move(c));
      return Status();
    });
  });
}

// hostCall and native record the same way: a callback pointer and its user data.
template <class Set>
static Status recordCallback(uint64_t handle, const core::Instance*& owner, Command::Kind kind,
                             const void* callback, const char* what, Set&& set) {
  return record(handle, owner, [&](core::CommandBuffer&, CommandList& list) -> Status {
    BATON_NULL_CHECK(callback, what);
    Command c{kind};
    set(c);
    list.commands.push_back(std::move(c));
    return Status();
  });
}

Result CommandBuffer::hostCall(HostCallback callback, void* userData) const noexcept {
  return entry("CommandBuffer::hostCall", [&](const core::Instance*& owner) -> Status {
    return recordCallback(handle_, owner, Command::Kind::HostCall,
                          reinterpret_cast<const void*>(callback), "host callback",
                          [&](Command& c) {
                            c.hostCallback = callback;
                            c.userData = userData;
                          });
  });
}

Result CommandBuffer::native(NativeCallback callback, void* userData) const noexcept {
  return entry("CommandBuffer::native", [&](const core::Instance*& owner) -> Status {
    return recordCallback(handle_, owner, Command::Kind::Native,
                          reinterpret_cast<const void*>(callback), "native callback",
                          [&](Command& c) {
                            c.nativeCallback = callback;
                            c.userData = userData;
                          });
  });
}

}  // namespace baton
