// The Vulkan functions interop calls, resolved per VkDevice through the application's
// vkGetInstanceProcAddr (VulkanDevice::getInstanceProcAddr), never through link-time prototypes, so
// that baton works beside volk and other loaders. Every call goes through this table, which is also
// where tests could inject faults (as the drivers' one wrapper is: docs/architecture.md, 'Layers
// and files').
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "baton/vulkan.hpp"
#include "status.hpp"

namespace baton::interop {

struct VulkanFunctions {
  // Instance level.
  PFN_vkGetDeviceProcAddr getDeviceProcAddr = nullptr;
  PFN_vkGetPhysicalDeviceProperties2 getPhysicalDeviceProperties2 = nullptr;
  PFN_vkGetPhysicalDeviceFeatures2 getPhysicalDeviceFeatures2 = nullptr;
  PFN_vkGetPhysicalDeviceMemoryProperties getPhysicalDeviceMemoryProperties = nullptr;
  PFN_vkGetPhysicalDeviceExternalSemaphoreProperties getPhysicalDeviceExternalSemaphoreProperties =
      nullptr;
  PFN_vkGetPhysicalDeviceExternalBufferProperties getPhysicalDeviceExternalBufferProperties =
      nullptr;
  PFN_vkEnumerateDeviceExtensionProperties enumerateDeviceExtensionProperties = nullptr;
  // Device level (null until loadDevice).
  PFN_vkCreateSemaphore createSemaphore = nullptr;
  PFN_vkDestroySemaphore destroySemaphore = nullptr;
  PFN_vkSignalSemaphore signalSemaphore = nullptr;                    // or the KHR alias
  PFN_vkWaitSemaphores waitSemaphores = nullptr;                      // or the KHR alias
  PFN_vkGetSemaphoreCounterValue getSemaphoreCounterValue = nullptr;  // or the KHR alias
  PFN_vkMapMemory mapMemory = nullptr;
  PFN_vkUnmapMemory unmapMemory = nullptr;
  PFN_vkGetImageSubresourceLayout getImageSubresourceLayout = nullptr;
  PFN_vkGetSemaphoreFdKHR getSemaphoreFd = nullptr;  // null unless VK_KHR_external_semaphore_fd
  PFN_vkGetMemoryFdKHR getMemoryFd = nullptr;        // null unless VK_KHR_external_memory_fd

  // What the physical device is and offers (filled by loadInstance).
  VkPhysicalDeviceProperties properties{};
  uint8_t deviceUuid[VK_UUID_SIZE] = {};
  bool timelineSemaphores = false;
  uint64_t maxTimelineDifference = 0;
  std::string label;                    // for messages: '<deviceName>' (<driver>, <driverInfo>)
  bool hasExternalSemaphoreFd = false;  // VK_KHR_external_semaphore_fd offered
  bool hasExternalMemoryFd = false;     // VK_KHR_external_memory_fd offered
};

// Resolves the instance-level functions and describes vulkan.physicalDevice.
// ErrorInvalidArgument for null handles, ErrorNotSupported when a Vulkan 1.1 function is missing.
core::Status loadInstance(const VulkanDevice& vulkan, VulkanFunctions* fns);
// Resolves the device-level functions of vulkan.device (after loadInstance). ErrorNotSupported
// when the timeline semaphore functions are missing (neither 1.2 core nor the KHR extension).
core::Status loadDevice(const VulkanDevice& vulkan, VulkanFunctions* fns);

// A Vulkan structure with sType (and pNext) set and every other member zero.
template <class T>
T vkStruct(VkStructureType type, void* next = nullptr) {
  T value{};
  value.sType = type;
  value.pNext = next;
  return value;
}

// "VK_ERROR_DEVICE_LOST", ...; unknown values give "VkResult(<n>)".
std::string vkResultName(VkResult result);
// ErrorDriver (ErrorOutOfHostMemory for VK_ERROR_OUT_OF_HOST_MEMORY) naming the call and result.
core::Status vkFailure(const char* call, VkResult result);

// "6d657361-3232-..." for messages.
std::string uuidText(const uint8_t* uuid);

}  // namespace baton::interop
