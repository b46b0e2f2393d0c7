// The program's own calls of vkSignalSemaphore, vkWaitSemaphores and vkGetSemaphoreCounterValue
// (the loader's exports, e.g. from C code or an example's own lines) through TimelineObserver, as
// baton's are through VulkanDevice::getInstanceProcAddr: observed for the validation filter and,
// under synchronization validation, serialized against each other (vulkan_validation.hpp).
// Linked into the Vulkan test programs (the reproducers too), the demo and the guide's Vulkan
// example: these definitions take the place of the loader's for the program, and pass on to the
// loader's own (RTLD_NEXT). Nothing changes while validation is off but the bookkeeping.
#include <dlfcn.h>

#include "vulkan_validation.hpp"

namespace {
template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}
}  // namespace

using baton::test::TimelineObserver;

extern "C" {

VKAPI_ATTR VkResult VKAPI_CALL vkSignalSemaphore(VkDevice device,
                                                 const VkSemaphoreSignalInfo* info) {
  static const auto loader = next<PFN_vkSignalSemaphore>("vkSignalSemaphore");
  return TimelineObserver::signalThrough(loader, device, info);
}

VKAPI_ATTR VkResult VKAPI_CALL vkWaitSemaphores(VkDevice device, const VkSemaphoreWaitInfo* info,
                                                uint64_t timeout) {
  static const auto loader = next<PFN_vkWaitSemaphores>("vkWaitSemaphores");
  return TimelineObserver::waitThrough(loader, device, info, timeout);
}

VKAPI_ATTR VkResult VKAPI_CALL vkGetSemaphoreCounterValue(VkDevice device, VkSemaphore semaphore,
                                                          uint64_t* value) {
  static const auto loader = next<PFN_vkGetSemaphoreCounterValue>("vkGetSemaphoreCounterValue");
  return TimelineObserver::valueThrough(loader, device, semaphore, value);
}

}  // extern "C"
