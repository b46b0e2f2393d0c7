/// \file
/// baton/image.hpp — images: texel memory of a device shared with a graphics API
/// (importVulkanImage in baton/vulkan.hpp), copied to and from buffers by command buffers
/// (CommandBuffer::copyBufferToImage, copyImageToBuffer) and handed to native callbacks through
/// their native handles (docs/guide.md, 'Vulkan images').
///
/// An image is 2D, with `mipLevels` levels (level n is max(1, width >> n) by
/// max(1, height >> n) texels) and `arrayLayers` layers, of one ImageFormat. baton does not
/// allocate images: each comes from an import and shares the other API's memory.
#pragma once

#include <cstdint>

#include "baton/export.h"
#include "baton/fwd.hpp"
#include "baton/result.hpp"
#include "baton/unique.hpp"

namespace baton {

/// The texel formats baton images can have: the 8-, 16- and 32-bit-per-channel colour formats an
/// engine renders to, with their sRGB forms. The names follow Vulkan's (R8G8B8A8Srgb is
/// VK_FORMAT_R8G8B8A8_SRGB); importVulkanImage maps the VkFormat and refuses any other with
/// ErrorNotSupported naming it. Copies move texels as bytes: no conversion, no sRGB decoding.
enum class ImageFormat : uint32_t {
  Undefined = 0,                ///< no format (a default-constructed ImageInfo)
  R8Unorm = 1,                  ///< 1 byte per texel
  R8G8Unorm = 2,                ///< 2 bytes
  R8G8B8A8Unorm = 3,            ///< 4 bytes
  R8G8B8A8Srgb = 4,             ///< 4 bytes
  B8G8R8A8Unorm = 5,            ///< 4 bytes
  B8G8R8A8Srgb = 6,             ///< 4 bytes
  R8G8B8A8Uint = 7,             ///< 4 bytes
  R8G8B8A8Snorm = 8,            ///< 4 bytes
  R16Sfloat = 9,                ///< 2 bytes
  R16G16Sfloat = 10,            ///< 4 bytes
  R16G16B16A16Sfloat = 11,      ///< 8 bytes
  R16G16B16A16Unorm = 12,       ///< 8 bytes
  R16G16B16A16Uint = 13,        ///< 8 bytes
  R32Sfloat = 14,               ///< 4 bytes
  R32Uint = 15,                 ///< 4 bytes
  R32G32Sfloat = 16,            ///< 8 bytes
  R32G32B32A32Sfloat = 17,      ///< 16 bytes
  R32G32B32A32Uint = 18,        ///< 16 bytes
  A2B10G10R10UnormPack32 = 19,  ///< 4 bytes
  B10G11R11UfloatPack32 = 20,   ///< 4 bytes
};

/// "R8G8B8A8_SRGB" and so on (Vulkan's spelling without VK_FORMAT_), or "unknown". Never null.
/// Thread safe.
BATON_API const char* imageFormatName(ImageFormat format) noexcept;
/// Bytes per texel of `format`; 0 for Undefined and unknown values. Thread safe.
BATON_API uint32_t imageFormatTexelBytes(ImageFormat format) noexcept;

/// What an image is (Image::getInfo).
struct ImageInfo {
  ImageFormat format = ImageFormat::Undefined;  ///< its texel format
  uint32_t width = 0;                           ///< level 0's width in texels
  uint32_t height = 0;                          ///< level 0's height in texels
  uint32_t mipLevels = 0;                       ///< levels, >= 1
  uint32_t arrayLayers = 0;                     ///< layers, >= 1
};

/// One region of CommandBuffer::copyBufferToImage / copyImageToBuffer, as VkBufferImageCopy: a
/// rectangle of texels of one mip level in `layerCount` consecutive layers, and where its texels
/// lie in the buffer (row after row, layer after layer, tightly unless bufferRowLength or
/// bufferImageHeight say otherwise).
struct BufferImageCopy {
  uint64_t bufferOffset =
      0;  ///< where the first texel is in the buffer; a multiple of the texel size
  uint32_t bufferRowLength = 0;    ///< texels from one row's start to the next's; 0: `width`
  uint32_t bufferImageHeight = 0;  ///< rows from one layer's start to the next's; 0: `height`
  uint32_t mipLevel = 0;           ///< the level, < mipLevels
  uint32_t baseArrayLayer = 0;     ///< the first layer
  uint32_t layerCount = 1;         ///< layers, >= 1; baseArrayLayer + layerCount <= arrayLayers
  uint32_t x = 0;                  ///< the rectangle's first column in the level
  uint32_t y = 0;                  ///< its first row
  uint32_t width = 0;              ///< its width in texels, > 0; x + width <= the level's width
  uint32_t height = 0;             ///< its height in texels, > 0; y + height <= the level's height
};

/// The backend's objects behind an image, for native callbacks (Image::getNative). Owned by the
/// image: valid until it is destroyed and the last submission that uses it finished; do not
/// destroy them. Use them in queue order (in a native callback, on its stream), as the image's
/// other users are ordered with semaphores.
struct NativeImage {
  BackendKind backend = BackendKind::Host;  ///< the backend of the image's device
  /// CUDA: the CUmipmappedArray the memory is mapped as. Null on the host backend.
  void* mipmappedArray = nullptr;
  /// CUDA: a CUtexObject over every level (normalized coordinates, clamp to edge, linear
  /// filtering between texels and levels where the format allows it, point sampling otherwise;
  /// UNORM and SNORM formats read as normalized floats, sRGB formats decoded). 0 on the host
  /// backend, and for formats CUDA cannot sample (the packed 10- and 11-bit ones).
  uint64_t textureObject = 0;
};

/// One mip level's objects (Image::getNativeLevel); ownership and use as NativeImage.
struct NativeImageLevel {
  uint32_t width = 0;   ///< the level's width in texels
  uint32_t height = 0;  ///< the level's height in texels
  /// CUDA: the level's CUarray (layered when the image has layers). Null on the host backend.
  void* array = nullptr;
  /// CUDA: a CUsurfObject over the level, for surf2Dread/surf2Dwrite (surf2DLayeredread/write
  /// with layers). 0 on the host backend.
  uint64_t surfaceObject = 0;
  /// Host backend: layer 0's first texel, mapped from the other API's memory; rows are
  /// rowPitch bytes apart and layers layerPitch bytes. Null on GPU backends.
  void* hostPointer = nullptr;
  uint64_t rowPitch = 0;    ///< host backend: bytes between rows
  uint64_t layerPitch = 0;  ///< host backend: bytes between layers
};

/// Texel memory of a device shared with another API (importVulkanImage), copied to and from
/// buffers by command buffers and used by native callbacks through its native handles. A
/// non-owning handle (see Handle); importVulkanImage makes one, destroy() ends it, UniqueImage
/// owns one.
class BATON_API Image : public Handle<Image> {
 public:
  using Handle::Handle;

  /// Destroys the image handle. Command buffers recorded with it keep its memory and native
  /// objects alive until their pending submissions finish. Thread safe.
  /// Returns Success, ErrorInvalidHandle.
  [[nodiscard]] Result destroy() const noexcept;

  /// Describes the image. Thread safe. Returns Success, ErrorInvalidArgument (null),
  /// ErrorInvalidHandle.
  [[nodiscard]] Result getInfo(ImageInfo* info) const noexcept;

  /// The backend's objects for the whole image (see NativeImage). Thread safe.
  /// Returns Success, ErrorInvalidArgument (null), ErrorInvalidHandle.
  [[nodiscard]] Result getNative(NativeImage* native) const noexcept;

  /// The backend's objects for mip level `level` (see NativeImageLevel). Thread safe.
  /// Returns Success, ErrorInvalidArgument (null output, level >= mipLevels), ErrorInvalidHandle.
  [[nodiscard]] Result getNativeLevel(uint32_t level, NativeImageLevel* native) const noexcept;
};

/// An Image that is destroyed with its owner (see Unique).
using UniqueImage = Unique<Image>;

}  // namespace baton
