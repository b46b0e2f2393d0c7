// The driver copies of an image command (CommandBuffer::copyBufferToImage / copyImageToBuffer):
// one ImageCopy per region, for the issuing thread (Issuer) and the graph builder (graphs.hpp)
// alike. Regions were checked when they were recorded.
#pragma once

#include "objects.hpp"
#include "stream_driver.hpp"

namespace baton::stream {

// Calls `emit(const ImageCopy&)` for each region of `c`, in order; stops at the first error.
template <class Emit>
Status forEachImageCopy(const core::Command& c, Emit&& emit) {
  const bool toImage = c.kind == core::Command::Kind::CopyBufferToImage;
  const core::Buffer& buffer = toImage ? *c.src : *c.dst;
  const uint32_t texel = c.image->texelBytes;
  for (const BufferImageCopy& r : c.regions) {
    ImageCopy copy;
    copy.toImage = toImage;
    copy.buffer = buffer.allocation.deviceAddress + r.bufferOffset;
    copy.bufferPitch = core::regionRowLength(r) * texel;
    copy.bufferRows = core::regionImageHeight(r);
    copy.array = c.image->levels[r.mipLevel].array;
    copy.xBytes = uint64_t(r.x) * texel;
    copy.y = r.y;
    copy.z = r.baseArrayLayer;
    copy.widthBytes = uint64_t(r.width) * texel;
    copy.height = r.height;
    copy.depth = r.layerCount;
    BATON_TRY(emit(copy));
  }
  return Status();
}

}  // namespace baton::stream
