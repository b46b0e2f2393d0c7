// Names of VkFormats for messages (image_formats.cpp).
#pragma once

#include <vulkan/vulkan.h>

#include <string>

namespace baton::interop {

// "VK_FORMAT 126 (D32Sfloat)".
std::string vkFormatName(VkFormat format);

}  // namespace baton::interop
