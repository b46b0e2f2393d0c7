// The VkFormats baton images can have (baton/image.hpp, ImageFormat), and the names of the others
// for refusals (the Vulkan-Hpp header's to_string: "D32Sfloat", ...). Its own translation unit:
// vulkan.hpp (the C++ bindings) is a large header, needed only here.
#include "image_formats.hpp"

#include <string>
#include <vulkan/vulkan.hpp>

#include "baton/vulkan.hpp"

namespace baton {

namespace {

struct Row {
  VkFormat vk;
  ImageFormat format;
};
constexpr Row kRows[] = {
    {VK_FORMAT_R8_UNORM, ImageFormat::R8Unorm},
    {VK_FORMAT_R8G8_UNORM, ImageFormat::R8G8Unorm},
    {VK_FORMAT_R8G8B8A8_UNORM, ImageFormat::R8G8B8A8Unorm},
    {VK_FORMAT_R8G8B8A8_SRGB, ImageFormat::R8G8B8A8Srgb},
    {VK_FORMAT_B8G8R8A8_UNORM, ImageFormat::B8G8R8A8Unorm},
    {VK_FORMAT_B8G8R8A8_SRGB, ImageFormat::B8G8R8A8Srgb},
    {VK_FORMAT_R8G8B8A8_UINT, ImageFormat::R8G8B8A8Uint},
    {VK_FORMAT_R8G8B8A8_SNORM, ImageFormat::R8G8B8A8Snorm},
    {VK_FORMAT_R16_SFLOAT, ImageFormat::R16Sfloat},
    {VK_FORMAT_R16G16_SFLOAT, ImageFormat::R16G16Sfloat},
    {VK_FORMAT_R16G16B16A16_SFLOAT, ImageFormat::R16G16B16A16Sfloat},
    {VK_FORMAT_R16G16B16A16_UNORM, ImageFormat::R16G16B16A16Unorm},
    {VK_FORMAT_R16G16B16A16_UINT, ImageFormat::R16G16B16A16Uint},
    {VK_FORMAT_R32_SFLOAT, ImageFormat::R32Sfloat},
    {VK_FORMAT_R32_UINT, ImageFormat::R32Uint},
    {VK_FORMAT_R32G32_SFLOAT, ImageFormat::R32G32Sfloat},
    {VK_FORMAT_R32G32B32A32_SFLOAT, ImageFormat::R32G32B32A32Sfloat},
    {VK_FORMAT_R32G32B32A32_UINT, ImageFormat::R32G32B32A32Uint},
    {VK_FORMAT_A2B10G10R10_UNORM_PACK32, ImageFormat::A2B10G10R10UnormPack32},
    {VK_FORMAT_B10G11R11_UFLOAT_PACK32, ImageFormat::B10G11R11UfloatPack32},
};

}  // namespace

ImageFormat imageFormatFromVulkan(VkFormat format) noexcept {
  for (const Row& r : kRows)
    if (r.vk == format) return r.format;
  return ImageFormat::Undefined;
}

namespace interop {

std::string vkFormatName(VkFormat format) {
  return "VK_FORMAT " + std::to_string(static_cast<int>(format)) + " (" +
         vk::to_string(static_cast<vk::Format>(format)) + ")";
}

}  // namespace interop
}  // namespace baton
