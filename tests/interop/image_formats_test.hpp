// What the image suites share (image_test.cpp on the host backend, native_image_test.cpp on
// CUDA): every format baton images can have with its VkFormat, written out here as the tests'
// own statement of the mapping, and the texel pattern they fill images with.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>

#include "baton/image.hpp"

namespace baton::test {

struct ImageFormatCase {
  VkFormat vk;
  ImageFormat format;
};
inline constexpr ImageFormatCase kImageFormats[] = {
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

// Texel bytes of a pattern that every format keeps as it is (no float NaNs: the top bit of each
// byte clear; copies are bytes anyway).
inline uint8_t patternByte(size_t i, uint32_t seed) {
  return static_cast<uint8_t>((i * 7 + seed) & 0x7f);
}

}  // namespace baton::test
