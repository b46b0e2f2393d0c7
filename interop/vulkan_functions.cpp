#include "vulkan_functions.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

namespace baton::interop {

using core::error;
using core::Status;

namespace {

template <class Fn>
void instanceFn(PFN_vkGetInstanceProcAddr gipa, VkInstance instance, Fn* out, const char* name,
                const char* alias = nullptr) {
  *out = reinterpret_cast<Fn>(gipa(instance, name));
  if (!*out && alias) *out = reinterpret_cast<Fn>(gipa(instance, alias));
}

template <class Fn>
void deviceFn(PFN_vkGetDeviceProcAddr gdpa, VkDevice device, Fn* out, const char* name,
              const char* alias = nullptr) {
  *out = reinterpret_cast<Fn>(gdpa(device, name));
  if (!*out && alias) *out = reinterpret_cast<Fn>(gdpa(device, alias));
}

}  // namespace

Status loadInstance(const VulkanDevice& vulkan, VulkanFunctions* fns) {
  if (!vulkan.instance)
    return error(Result::ErrorInvalidArgument, "VulkanDevice::instance is null");
  if (!vulkan.physicalDevice)
    return error(Result::ErrorInvalidArgument, "VulkanDevice::physicalDevice is null");
  PFN_vkGetInstanceProcAddr gipa =
      vulkan.getInstanceProcAddr ? vulkan.getInstanceProcAddr : &vkGetInstanceProcAddr;
  VkInstance inst = vulkan.instance;
  instanceFn(gipa, inst, &fns->getDeviceProcAddr, "vkGetDeviceProcAddr");
  instanceFn(gipa, inst, &fns->getPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2",
             "vkGetPhysicalDeviceProperties2KHR");
  instanceFn(gipa, inst, &fns->getPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2",
             "vkGetPhysicalDeviceFeatures2KHR");
  instanceFn(gipa, inst, &fns->getPhysicalDeviceMemoryProperties,
             "vkGetPhysicalDeviceMemoryProperties");
  instanceFn(gipa, inst, &fns->getPhysicalDeviceExternalSemaphoreProperties,
             "vkGetPhysicalDeviceExternalSemaphoreProperties",
             "vkGetPhysicalDeviceExternalSemaphorePropertiesKHR");
  instanceFn(gipa, inst, &fns->getPhysicalDeviceExternalBufferProperties,
             "vkGetPhysicalDeviceExternalBufferProperties",
             "vkGetPhysicalDeviceExternalBufferPropertiesKHR");
  instanceFn(gipa, inst, &fns->enumerateDeviceExtensionProperties,
             "vkEnumerateDeviceExtensionProperties");
  if (!fns->getDeviceProcAddr || !fns->getPhysicalDeviceProperties2 ||
      !fns->getPhysicalDeviceFeatures2 || !fns->getPhysicalDeviceMemoryProperties ||
      !fns->getPhysicalDeviceExternalSemaphoreProperties ||
      !fns->getPhysicalDeviceExternalBufferProperties || !fns->enumerateDeviceExtensionProperties)
    return error(Result::ErrorNotSupported,
                 "the Vulkan instance lacks Vulkan 1.1 physical-device queries "
                 "(vkGetPhysicalDeviceProperties2, vkGetPhysicalDeviceExternalSemaphoreProperties, "
                 "...): create it with apiVersion >= 1.1");

  auto timelineProps = vkStruct<VkPhysicalDeviceTimelineSemaphoreProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_PROPERTIES);
  auto driverProps = vkStruct<VkPhysicalDeviceDriverProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, &timelineProps);
  auto idProps = vkStruct<VkPhysicalDeviceIDProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES, &driverProps);
  auto props = vkStruct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                                     &idProps);
  fns->getPhysicalDeviceProperties2(vulkan.physicalDevice, &props);
  fns->properties = props.properties;
  std::memcpy(fns->deviceUuid, idProps.deviceUUID, VK_UUID_SIZE);
  fns->maxTimelineDifference = timelineProps.maxTimelineSemaphoreValueDifference;
  fns->label = std::string("'") + props.properties.deviceName + "'";
  if (driverProps.driverName[0]) {
    // Mesa's CPU driver reports itself as llvmpipe; users know it as lavapipe.
    fns->label += std::string(" (") +
                  (driverProps.driverID == VK_DRIVER_ID_MESA_LLVMPIPE ? "Mesa lavapipe"
                                                                      : driverProps.driverName) +
                  ", " + driverProps.driverInfo + ")";
  }

  auto timelineFeatures = vkStruct<VkPhysicalDeviceTimelineSemaphoreFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES);
  auto features = vkStruct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                                      &timelineFeatures);
  fns->getPhysicalDeviceFeatures2(vulkan.physicalDevice, &features);
  fns->timelineSemaphores = timelineFeatures.timelineSemaphore == VK_TRUE;

  uint32_t count = 0;
  fns->enumerateDeviceExtensionProperties(vulkan.physicalDevice, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> exts(count);
  fns->enumerateDeviceExtensionProperties(vulkan.physicalDevice, nullptr, &count, exts.data());
  for (uint32_t i = 0; i < count; ++i) {
    if (!std::strcmp(exts[i].extensionName, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME))
      fns->hasExternalSemaphoreFd = true;
    if (!std::strcmp(exts[i].extensionName, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME))
      fns->hasExternalMemoryFd = true;
  }
  return Status();
}

Status loadDevice(const VulkanDevice& vulkan, VulkanFunctions* fns) {
  if (!vulkan.device) return error(Result::ErrorInvalidArgument, "VulkanDevice::device is null");
  PFN_vkGetDeviceProcAddr gdpa = fns->getDeviceProcAddr;
  VkDevice dev = vulkan.device;
  deviceFn(gdpa, dev, &fns->createSemaphore, "vkCreateSemaphore");
  deviceFn(gdpa, dev, &fns->destroySemaphore, "vkDestroySemaphore");
  deviceFn(gdpa, dev, &fns->signalSemaphore, "vkSignalSemaphore", "vkSignalSemaphoreKHR");
  deviceFn(gdpa, dev, &fns->waitSemaphores, "vkWaitSemaphores", "vkWaitSemaphoresKHR");
  deviceFn(gdpa, dev, &fns->getSemaphoreCounterValue, "vkGetSemaphoreCounterValue",
           "vkGetSemaphoreCounterValueKHR");
  deviceFn(gdpa, dev, &fns->mapMemory, "vkMapMemory");
  deviceFn(gdpa, dev, &fns->unmapMemory, "vkUnmapMemory");
  deviceFn(gdpa, dev, &fns->getImageSubresourceLayout, "vkGetImageSubresourceLayout");
  // Device functions of extensions that were not enabled resolve to null (Vulkan 1.2 spec,
  // vkGetDeviceProcAddr), which is how baton learns whether fd export is usable on this device.
  deviceFn(gdpa, dev, &fns->getSemaphoreFd, "vkGetSemaphoreFdKHR");
  deviceFn(gdpa, dev, &fns->getMemoryFd, "vkGetMemoryFdKHR");
  if (!fns->createSemaphore || !fns->destroySemaphore || !fns->mapMemory || !fns->unmapMemory)
    return error(Result::ErrorInvalidArgument,
                 "vkGetDeviceProcAddr returned no core functions for VulkanDevice::device: is it "
                 "a device of VulkanDevice::instance?");
  if (!fns->signalSemaphore || !fns->waitSemaphores || !fns->getSemaphoreCounterValue)
    return error(Result::ErrorNotSupported,
                 "the Vulkan device has no timeline semaphore functions (vkSignalSemaphore, "
                 "vkWaitSemaphores, vkGetSemaphoreCounterValue): create it with Vulkan 1.2 or "
                 "VK_KHR_timeline_semaphore");
  return Status();
}

std::string vkResultName(VkResult r) {
  switch (r) {
#define BATON_VK_RESULT(name) \
  case name: return #name;
    BATON_VK_RESULT(VK_SUCCESS)
    BATON_VK_RESULT(VK_NOT_READY)
    BATON_VK_RESULT(VK_TIMEOUT)
    BATON_VK_RESULT(VK_EVENT_SET)
    BATON_VK_RESULT(VK_EVENT_RESET)
    BATON_VK_RESULT(VK_INCOMPLETE)
    BATON_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    BATON_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    BATON_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    BATON_VK_RESULT(VK_ERROR_DEVICE_LOST)
    BATON_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    BATON_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    BATON_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    BATON_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    BATON_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    BATON_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    BATON_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    BATON_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    BATON_VK_RESULT(VK_ERROR_UNKNOWN)
    BATON_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    BATON_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    BATON_VK_RESULT(VK_ERROR_FRAGMENTATION)
    BATON_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
#undef BATON_VK_RESULT
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "VkResult(%d)", static_cast<int>(r));
      return buf;
    }
  }
}

Status vkFailure(const char* call, VkResult r) {
  Result code =
      r == VK_ERROR_OUT_OF_HOST_MEMORY ? Result::ErrorOutOfHostMemory : Result::ErrorDriver;
  return Status(code, std::string(call) + " returned " + vkResultName(r));
}

std::string uuidText(const uint8_t* u) {
  char buf[40];
  std::snprintf(buf, sizeof buf,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
                u[15]);
  return buf;
}

}  // namespace baton::interop
