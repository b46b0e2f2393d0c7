// The C scenario of tests/c_api/c_api_vulkan_flow.c (returns 0, or the failing line with the
// explanation in `why`), and the BATON_*_INIT values of baton_vulkan.h as C compiles them.
#pragma once

#include <baton/baton_vulkan.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* get_proc: how baton resolves Vulkan functions (NULL: the loader's); the test passes the
 * harness's, which observes them under the validation layer (tests/interop/vulkan_validation.hpp).
 */
int c_api_vulkan_flow_bridged(VkInstance vk_instance, VkPhysicalDevice vk_physical,
                              VkDevice vk_device, PFN_vkGetInstanceProcAddr get_proc, char* why,
                              size_t capacity);

baton_vulkan_device c_api_vulkan_default_device(void);
baton_vulkan_semaphore_import_info c_api_vulkan_default_semaphore_import_info(void);
baton_vulkan_timeline_create_info c_api_vulkan_default_timeline_create_info(void);
baton_vulkan_memory_import_info c_api_vulkan_default_memory_import_info(void);

#ifdef __cplusplus
}
#endif
