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

Status findImage(const core::CommandBuffer& cb, Image image, const char* what,
                 Ref<core::Image>* out) {
  Status st;
  *out = find<core::Image>(image.raw(), ObjectType::Image, what, &st);
  if (!*out) return st;
  if ((*out)->device != cb.device)
    return error(Result::ErrorDeviceMismatch, "%s image belongs to %s, the command buffer to %s",
                 what, (*out)->device->label().c_str(), cb.device->label().c_str());
  return Status();
}

// Checks each region against the image and the buffer (baton/image.hpp, BufferImageCopy).
Status checkRegions(const core::Image& image, const core::Buffer& buffer,
                    Span<const BufferImageCopy> regions) {
  if (regions.empty()) return Status(Result::ErrorInvalidArgument, "no regions to copy");
  const ImageInfo& info = image.info;
  const uint32_t texel = image.texelBytes;
  for (size_t i = 0; i < regions.size(); ++i) {
    const BufferImageCopy& r = regions[i];
    if (r.mipLevel >= info.mipLevels)
      return error(Result::ErrorInvalidArgument, "region %zu: mip level %u, but %s has %u", i,
                   r.mipLevel, image.label.c_str(), info.mipLevels);
    if (r.layerCount == 0 || r.baseArrayLayer >= info.arrayLayers ||
        r.layerCount > info.arrayLayers - r.baseArrayLayer)
      return error(Result::ErrorInvalidArgument, "region %zu: layers [%u, +%u) outside %s's %u", i,
                   r.baseArrayLayer, r.layerCount, image.label.c_str(), info.arrayLayers);
    const core::Image::Level& level = image.levels[r.mipLevel];
    if (r.width == 0 || r.height == 0 || r.x >= level.width || r.width > level.width - r.x ||
        r.y >= level.height || r.height > level.height - r.y)
      return error(Result::ErrorInvalidArgument,
                   "region %zu: texels [%u, +%u) x [%u, +%u) outside level %u (%u x %u) of %s", i,
                   r.x, r.width, r.y, r.height, r.mipLevel, level.width, level.height,
                   image.label.c_str());
    if (r.bufferRowLength && r.bufferRowLength < r.width)
      return error(Result::ErrorInvalidArgument, "region %zu: bufferRowLength %u < width %u", i,
                   r.bufferRowLength, r.width);
    if (r.bufferImageHeight && r.bufferImageHeight < r.height)
      return error(Result::ErrorInvalidArgument, "region %zu: bufferImageHeight %u < height %u", i,
                   r.bufferImageHeight, r.height);
    if (r.bufferOffset % texel)
      return error(
          Result::ErrorInvalidArgument,
          "region %zu: bufferOffset %llu is not a multiple of the texel size (%u bytes, %s)", i,
          static_cast<unsigned long long>(r.bufferOffset), texel, imageFormatName(info.format));
    const uint64_t span = core::regionBufferSpan(r, texel);
    if (r.bufferOffset > buffer.info.size || span > buffer.info.size - r.bufferOffset)
      return error(Result::ErrorInvalidArgument,
                   "region %zu: buffer bytes [%llu, +%llu) outside the buffer's %llu bytes", i,
                   static_cast<unsigned long long>(r.bufferOffset),
                   static_cast<unsigned long long>(span),
                   static_cast<unsigned long long>(buffer.info.size));
  }
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
    Ref<CommandList> list;
    {
      std::lock_guard<std::mutex> lock(cb->mutex);
      if (!cb->recording)
        return Status(Result::ErrorInvalidState,
                      "command buffer is not recording (call begin() first)");
      list = std::move(cb->recording);
      cb->recording = nullptr;
    }
    for (const Command& c : list->commands) {
      list->hostCalls += c.kind == Command::Kind::HostCall;
      list->fallibleHostCalls +=
          c.kind == Command::Kind::HostCall && !(c.flags & kHostCallInfallible);
      list->collectives += c.kind == Command::Kind::Collective;
      if (c.kind != Command::Kind::Collective) continue;
      bool seen = false;
      for (const Ref<core::Communicator>& comm : list->communicators)
        seen |= comm == c.communicator;
      if (!seen) list->communicators.push_back(c.communicator);
    }
    if (cb->usage == CommandBufferUsage::Graph && !list->commands.empty()) {
      // Built without the lock: capturable native callbacks run here. Recording is externally
      // synchronised, so nothing else records meanwhile; submit sees no ended list until this
      // returns (a failure discards the recording).
      if (cb->device->lost()) return cb->device->lostStatus();
      BATON_TRY(cb->device->impl()
                    ->prepareGraph(*list, &cb->graphCache)
                    .context("ending " + cb->label + " of " + cb->device->label()));
    }
    std::lock_guard<std::mutex> lock(cb->mutex);
    cb->ended = std::move(list);
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

Result CommandBuffer::copyBufferToImage(Buffer src, Image dst,
                                        Span<const BufferImageCopy> regions) const noexcept {
  return entry("CommandBuffer::copyBufferToImage", [&](const core::Instance*& owner) -> Status {
    return record(handle_, owner, [&](core::CommandBuffer& cb, CommandList& list) -> Status {
      Command c{Command::Kind::CopyBufferToImage};
      BATON_TRY(findBuffer(cb, src, "source", &c.src));
      BATON_TRY(findImage(cb, dst, "destination", &c.image));
      BATON_TRY(checkRegions(*c.image, *c.src, regions));
      c.regions.assign(regions.begin(), regions.end());
      list.commands.push_back(std::move(c));
      return Status();
    });
  });
}

Result CommandBuffer::copyImageToBuffer(Image src, Buffer dst,
                                        Span<const BufferImageCopy> regions) const noexcept {
  return entry("CommandBuffer::copyImageToBuffer", [&](const core::Instance*& owner) -> Status {
    return record(handle_, owner, [&](core::CommandBuffer& cb, CommandList& list) -> Status {
      Command c{Command::Kind::CopyImageToBuffer};
      BATON_TRY(findImage(cb, src, "source", &c.image));
      BATON_TRY(findBuffer(cb, dst, "destination", &c.dst));
      BATON_TRY(checkRegions(*c.image, *c.dst, regions));
      c.regions.assign(regions.begin(), regions.end());
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

// hostCall and native: a callback is required, and flags outside `known` are refused.
static Status checkCallback(const void* callback, const char* what, uint32_t flags,
                            uint32_t known) {
  BATON_NULL_CHECK(callback, what);
  if (flags & ~known)
    return error(Result::ErrorInvalidArgument, "unknown %s flags 0x%x", what, flags & ~known);
  return Status();
}

Result CommandBuffer::hostCall(HostCallback callback, void* userData) const noexcept {
  return hostCall(callback, userData, 0);
}

Result CommandBuffer::hostCall(HostCallback callback, void* userData,
                               uint32_t flags) const noexcept {
  return entry("CommandBuffer::hostCall", [&](const core::Instance*& owner) -> Status {
    return record(handle_, owner, [&](core::CommandBuffer&, CommandList& list) -> Status {
      BATON_TRY(checkCallback(reinterpret_cast<const void*>(callback), "host callback", flags,
                              kHostCallInfallible));
      Command c{Command::Kind::HostCall};
      c.hostCallback = callback;
      c.flags = flags;
      c.userData = userData;
      list.commands.push_back(std::move(c));
      return Status();
    });
  });
}

Result CommandBuffer::native(NativeCallback callback, void* userData) const noexcept {
  return native(callback, userData, 0);
}

Result CommandBuffer::native(NativeCallback callback, void* userData,
                             uint32_t flags) const noexcept {
  return entry("CommandBuffer::native", [&](const core::Instance*& owner) -> Status {
    return record(handle_, owner, [&](core::CommandBuffer& cb, CommandList& list) -> Status {
      BATON_TRY(checkCallback(reinterpret_cast<const void*>(callback), "native callback", flags,
                              kNativeCapturable));
      if (cb.usage == CommandBufferUsage::Graph && !(flags & kNativeCapturable))
        return error(Result::ErrorInvalidArgument,
                     "%s is a graph command buffer: a native callback must be recorded with "
                     "kNativeCapturable (it runs once, at end(), under stream capture); record "
                     "this one in a replayed command buffer",
                     cb.label.c_str());
      Command c{Command::Kind::Native};
      c.nativeCallback = callback;
      c.flags = flags;
      c.userData = userData;
      list.commands.push_back(std::move(c));
      return Status();
    });
  });
}

// ---- collective commands (baton/communicator.hpp) --------------------------------------------

namespace {

// What one collective call reads and writes, in elements of its type.
struct CollectiveShape {
  uint64_t srcCount = 0, dstCount = 0;  // 0: the call has no such buffer
  // Where the in-place form puts src inside dst (AllGather) or dst inside src (ReduceScatter),
  // in elements; UINT64_MAX: in place only when the ranges are identical.
  uint64_t inPlaceAt = UINT64_MAX;
  bool inPlaceAllowed = true;
};

Status findCommunicator(const core::CommandBuffer& cb, Communicator communicator,
                        Ref<core::Communicator>* out) {
  Status st;
  *out =
      find<core::Communicator>(communicator.raw(), ObjectType::Communicator, "communicator", &st);
  if (!*out) return st;
  if ((*out)->device != cb.device)
    return error(Result::ErrorDeviceMismatch, "%s belongs to %s, the command buffer to %s",
                 (*out)->label.c_str(), (*out)->device->label().c_str(),
                 cb.device->label().c_str());
  return (*out)->usable();
}

uint64_t bytesOf(uint64_t count, ElementType type, bool* overflow) {
  const uint64_t size = elementSize(type);
  if (count > UINT64_MAX / size) {
    *overflow = true;
    return 0;
  }
  return count * size;
}

// Records a collective command after checking everything the library would otherwise find (or
// not find) at run time: the communicator, the buffers, ranks, types, ops and ranges, and what the
// library does not support (CommunicatorImpl::supports).
Status recordCollective(core::CommandBuffer& cb, CommandList& list, core::CollectiveOp op,
                        Communicator communicator, Buffer src, uint64_t srcOffset, Buffer dst,
                        uint64_t dstOffset, uint64_t count, ElementType type, ReduceOp reduce,
                        uint32_t peer) {
  Command c{Command::Kind::Collective};
  BATON_TRY(findCommunicator(cb, communicator, &c.communicator));
  const core::Communicator& comm = *c.communicator;
  const char* name = core::collectiveOpName(op);
  if (count == 0) return error(Result::ErrorInvalidArgument, "%s of 0 elements", name);
  if (static_cast<uint32_t>(type) >= kElementTypeCount)
    return error(Result::ErrorInvalidArgument, "%s: unknown element type %u", name,
                 static_cast<unsigned>(type));
  const bool reduces = op == core::CollectiveOp::AllReduce || op == core::CollectiveOp::Reduce ||
                       op == core::CollectiveOp::ReduceScatter;
  if (reduces && static_cast<uint32_t>(reduce) >= kReduceOpCount)
    return error(Result::ErrorInvalidArgument, "%s: unknown reduce op %u", name,
                 static_cast<unsigned>(reduce));
  const bool rooted = op == core::CollectiveOp::Broadcast || op == core::CollectiveOp::Reduce;
  const bool p2p = op == core::CollectiveOp::Send || op == core::CollectiveOp::Recv;
  if ((rooted || p2p) && peer >= comm.rankCount)
    return error(Result::ErrorInvalidArgument, "%s: %s %u is out of range: %s has %u rank(s)", name,
                 rooted ? "root" : "peer", peer, comm.label.c_str(), comm.rankCount);
  const uint64_t n = comm.rankCount;
  if (n == 0)  // backends report their ranks at creation; never 0 for a live communicator
    return error(Result::ErrorInvalidState, "%s: %s reports no ranks", name, comm.label.c_str());
  CollectiveShape shape;
  bool overflow = count > UINT64_MAX / n;
  switch (op) {
    case core::CollectiveOp::AllReduce:
    case core::CollectiveOp::Broadcast:
    case core::CollectiveOp::Reduce: shape.srcCount = shape.dstCount = count; break;
    case core::CollectiveOp::AllGather:
      shape.srcCount = count;
      shape.dstCount = count * n;
      shape.inPlaceAt = count * comm.rank;
      break;
    case core::CollectiveOp::ReduceScatter:
      shape.srcCount = count * n;
      shape.dstCount = count;
      shape.inPlaceAt = count * comm.rank;
      break;
    case core::CollectiveOp::AllToAll:
      shape.srcCount = shape.dstCount = count * n;
      shape.inPlaceAllowed = false;
      break;
    case core::CollectiveOp::Send: shape.srcCount = count; break;
    case core::CollectiveOp::Recv: shape.dstCount = count; break;
  }
  const uint64_t srcBytes = bytesOf(shape.srcCount, type, &overflow);
  const uint64_t dstBytes = bytesOf(shape.dstCount, type, &overflow);
  if (overflow)
    return error(Result::ErrorInvalidArgument, "%s: %llu elements of %s overflow 64 bits", name,
                 static_cast<unsigned long long>(count), elementTypeName(type));
  if (shape.srcCount) {
    BATON_TRY(findBuffer(cb, src, "source", &c.src));
    BATON_TRY(checkRange(*c.src, srcOffset, srcBytes, "source"));
  }
  if (shape.dstCount) {
    BATON_TRY(findBuffer(cb, dst, "destination", &c.dst));
    BATON_TRY(checkRange(*c.dst, dstOffset, dstBytes, "destination"));
  }
  if (c.src && c.dst && c.src == c.dst && srcOffset < dstOffset + dstBytes &&
      dstOffset < srcOffset + srcBytes) {
    // Overlapping: only the in-place forms the library defines.
    const uint64_t at = shape.inPlaceAt == UINT64_MAX ? 0 : shape.inPlaceAt * elementSize(type);
    bool inPlace = false;
    if (shape.inPlaceAllowed) {
      if (op == core::CollectiveOp::AllGather)
        inPlace = srcOffset == dstOffset + at;
      else if (op == core::CollectiveOp::ReduceScatter)
        inPlace = dstOffset == srcOffset + at;
      else
        inPlace = srcOffset == dstOffset;
    }
    if (!inPlace)
      return error(Result::ErrorInvalidArgument,
                   "%s: source and destination ranges overlap other than in place", name);
  }
  // A valid call the library is known to refuse fails here rather than as a failed signal when
  // the submission runs.
  Status supported = comm.impl->supports(op, type, reduce);
  if (!supported.ok()) return supported.context(comm.label);
  c.srcOffset = srcOffset;
  c.dstOffset = dstOffset;
  c.size = count;
  c.collective = op;
  c.elementType = type;
  c.reduceOp = reduce;
  c.peer = peer;
  list.commands.push_back(std::move(c));
  return Status();
}

}  // namespace

#define BATON_RECORD_COLLECTIVE(NAME, OP, SRC, SRC_OFFSET, DST, DST_OFFSET, REDUCE, PEER)      \
  return entry("CommandBuffer::" NAME, [&](const core::Instance*& owner) -> Status {           \
    return record(handle_, owner, [&](core::CommandBuffer& cb, CommandList& list) -> Status {  \
      return recordCollective(cb, list, core::CollectiveOp::OP, communicator, SRC, SRC_OFFSET, \
                              DST, DST_OFFSET, count, type, REDUCE, PEER);                     \
    });                                                                                        \
  })

Result CommandBuffer::allReduce(Communicator communicator, Buffer src, uint64_t srcOffset,
                                Buffer dst, uint64_t dstOffset, uint64_t count, ElementType type,
                                ReduceOp op) const noexcept {
  BATON_RECORD_COLLECTIVE("allReduce", AllReduce, src, srcOffset, dst, dstOffset, op, 0);
}

Result CommandBuffer::broadcast(Communicator communicator, Buffer src, uint64_t srcOffset,
                                Buffer dst, uint64_t dstOffset, uint64_t count, ElementType type,
                                uint32_t root) const noexcept {
  BATON_RECORD_COLLECTIVE("broadcast", Broadcast, src, srcOffset, dst, dstOffset, ReduceOp::Sum,
                          root);
}

Result CommandBuffer::reduce(Communicator communicator, Buffer src, uint64_t srcOffset, Buffer dst,
                             uint64_t dstOffset, uint64_t count, ElementType type, ReduceOp op,
                             uint32_t root) const noexcept {
  BATON_RECORD_COLLECTIVE("reduce", Reduce, src, srcOffset, dst, dstOffset, op, root);
}

Result CommandBuffer::allGather(Communicator communicator, Buffer src, uint64_t srcOffset,
                                Buffer dst, uint64_t dstOffset, uint64_t count,
                                ElementType type) const noexcept {
  BATON_RECORD_COLLECTIVE("allGather", AllGather, src, srcOffset, dst, dstOffset, ReduceOp::Sum, 0);
}

Result CommandBuffer::reduceScatter(Communicator communicator, Buffer src, uint64_t srcOffset,
                                    Buffer dst, uint64_t dstOffset, uint64_t count,
                                    ElementType type, ReduceOp op) const noexcept {
  BATON_RECORD_COLLECTIVE("reduceScatter", ReduceScatter, src, srcOffset, dst, dstOffset, op, 0);
}

Result CommandBuffer::allToAll(Communicator communicator, Buffer src, uint64_t srcOffset,
                               Buffer dst, uint64_t dstOffset, uint64_t count,
                               ElementType type) const noexcept {
  BATON_RECORD_COLLECTIVE("allToAll", AllToAll, src, srcOffset, dst, dstOffset, ReduceOp::Sum, 0);
}

Result CommandBuffer::send(Communicator communicator, Buffer src, uint64_t srcOffset,
                           uint64_t count, ElementType type, uint32_t peer) const noexcept {
  BATON_RECORD_COLLECTIVE("send", Send, src, srcOffset, Buffer(), 0, ReduceOp::Sum, peer);
}

Result CommandBuffer::recv(Communicator communicator, Buffer dst, uint64_t dstOffset,
                           uint64_t count, ElementType type, uint32_t peer) const noexcept {
  BATON_RECORD_COLLECTIVE("recv", Recv, Buffer(), 0, dst, dstOffset, ReduceOp::Sum, peer);
}

#undef BATON_RECORD_COLLECTIVE

}  // namespace baton
