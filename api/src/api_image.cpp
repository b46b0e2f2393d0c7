// Public entry points of Image and the image formats (baton/image.hpp). Images are made by
// imports (interop/api_vulkan.cpp).
#include "api_entry.hpp"
#include "baton/image.hpp"

namespace baton {

namespace {

struct FormatRow {
  ImageFormat format;
  const char* name;
  uint32_t texelBytes;
};
constexpr FormatRow kFormats[] = {
    {ImageFormat::R8Unorm, "R8_UNORM", 1},
    {ImageFormat::R8G8Unorm, "R8G8_UNORM", 2},
    {ImageFormat::R8G8B8A8Unorm, "R8G8B8A8_UNORM", 4},
    {ImageFormat::R8G8B8A8Srgb, "R8G8B8A8_SRGB", 4},
    {ImageFormat::B8G8R8A8Unorm, "B8G8R8A8_UNORM", 4},
    {ImageFormat::B8G8R8A8Srgb, "B8G8R8A8_SRGB", 4},
    {ImageFormat::R8G8B8A8Uint, "R8G8B8A8_UINT", 4},
    {ImageFormat::R8G8B8A8Snorm, "R8G8B8A8_SNORM", 4},
    {ImageFormat::R16Sfloat, "R16_SFLOAT", 2},
    {ImageFormat::R16G16Sfloat, "R16G16_SFLOAT", 4},
    {ImageFormat::R16G16B16A16Sfloat, "R16G16B16A16_SFLOAT", 8},
    {ImageFormat::R16G16B16A16Unorm, "R16G16B16A16_UNORM", 8},
    {ImageFormat::R16G16B16A16Uint, "R16G16B16A16_UINT", 8},
    {ImageFormat::R32Sfloat, "R32_SFLOAT", 4},
    {ImageFormat::R32Uint, "R32_UINT", 4},
    {ImageFormat::R32G32Sfloat, "R32G32_SFLOAT", 8},
    {ImageFormat::R32G32B32A32Sfloat, "R32G32B32A32_SFLOAT", 16},
    {ImageFormat::R32G32B32A32Uint, "R32G32B32A32_UINT", 16},
    {ImageFormat::A2B10G10R10UnormPack32, "A2B10G10R10_UNORM_PACK32", 4},
    {ImageFormat::B10G11R11UfloatPack32, "B10G11R11_UFLOAT_PACK32", 4},
};

const FormatRow* row(ImageFormat format) noexcept {
  for (const FormatRow& r : kFormats)
    if (r.format == format) return &r;
  return nullptr;
}

Ref<core::Image> findImage(uint64_t h, Status* st) {
  return find<core::Image>(h, ObjectType::Image, "image", st);
}

}  // namespace

const char* imageFormatName(ImageFormat format) noexcept {
  const FormatRow* r = row(format);
  return r ? r->name : "unknown";
}

uint32_t imageFormatTexelBytes(ImageFormat format) noexcept {
  const FormatRow* r = row(format);
  return r ? r->texelBytes : 0;
}

Result Image::destroy() const noexcept {
  // The destroyed object may hold the last reference to its instance: keep the instance
  // alive until entry() has reported through its callback.
  Ref<core::Instance> keepAlive;
  return entry("Image::destroy", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<Object> o = HandleTable::get().remove(handle_, ObjectType::Image, "image", &st);
    if (!o) return st;
    auto* image = static_cast<core::Image*>(o.get());
    keepAlive = Ref<core::Instance>(image->device->instance());
    owner = keepAlive.get();
    image->device->children.remove(handle_);
    return Status();  // recordings that use it keep its memory until they are done
  });
}

Result Image::getInfo(ImageInfo* info) const noexcept {
  return entry("Image::getInfo", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Image> image = findImage(handle_, &st);
    if (!image) return st;
    owner = image->device->instance();
    BATON_NULL_CHECK(info, "info output pointer");
    *info = image->info;
    return Status();
  });
}

Result Image::getNative(NativeImage* native) const noexcept {
  return entry("Image::getNative", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Image> image = findImage(handle_, &st);
    if (!image) return st;
    owner = image->device->instance();
    BATON_NULL_CHECK(native, "native output pointer");
    *native = NativeImage();
    native->backend = image->device->physical()->properties.backend;
    native->mipmappedArray = image->mipmappedArray;
    native->textureObject = image->texture;
    return Status();
  });
}

Result Image::getNativeLevel(uint32_t level, NativeImageLevel* native) const noexcept {
  return entry("Image::getNativeLevel", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Image> image = findImage(handle_, &st);
    if (!image) return st;
    owner = image->device->instance();
    BATON_NULL_CHECK(native, "native output pointer");
    *native = NativeImageLevel();
    if (level >= image->levels.size())
      return error(Result::ErrorInvalidArgument, "level %u out of range: %s has %u level(s)", level,
                   image->label.c_str(), image->info.mipLevels);
    const core::Image::Level& l = image->levels[level];
    native->width = l.width;
    native->height = l.height;
    native->array = l.array;
    native->surfaceObject = l.surface;
    native->hostPointer = l.host;
    native->rowPitch = l.rowPitch;
    native->layerPitch = l.layerPitch;
    return Status();
  });
}

}  // namespace baton
