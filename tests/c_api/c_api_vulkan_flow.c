/* Vulkan interop through the C API (baton/baton_vulkan.h) from C, compiled as strict C11 like
 * c_api_flow.c: a bridged timeline between the host backend and the Vulkan device the test gives
 * (Mesa's lavapipe in CI), signalled from both sides. */
#include "c_api_vulkan_flow.h"

#include <baton/baton_vulkan.h>
#include <stdio.h>
#include <string.h>

#include "c_check.h"

int c_api_vulkan_flow_bridged(VkInstance vk_instance, VkPhysicalDevice vk_physical,
                              VkDevice vk_device, PFN_vkGetInstanceProcAddr get_proc, char* why,
                              size_t capacity) {
  baton_instance instance = BATON_NULL_HANDLE;
  CHECK_OK(baton_create_instance(NULL, &instance));
  uint32_t count = 1;
  baton_physical_device physical = BATON_NULL_HANDLE;
  baton_result r = baton_instance_enumerate_physical_devices(instance, &count, &physical);
  REQUIRE(!baton_is_error(r));
  baton_device device = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_device(instance, physical, NULL, &device));

  baton_vulkan_device vulkan = BATON_VULKAN_DEVICE_INIT;
  vulkan.instance = vk_instance;
  vulkan.physical_device = vk_physical;
  vulkan.device = vk_device;
  vulkan.get_instance_proc_addr = get_proc; /* NULL: the loader's */

  /* The host backend never imports natively: an AUTO import bridges, and says why. */
  baton_vulkan_interop_support support;
  CHECK_OK(baton_query_vulkan_interop(&vulkan, device, &support));
  REQUIRE(support.timeline_semaphores);
  REQUIRE(support.semaphore_mode == BATON_INTEROP_MODE_BRIDGED);
  REQUIRE(support.semaphore_reason[0] != '\0');
  REQUIRE(!support.uuid_matches);
  /* Which baton device is the Vulkan GPU: none (ErrorNotSupported) on lavapipe or without a GPU
   * backend, the CUDA device on a GPU whose CUDA device is the Vulkan device (the H100). */
  baton_physical_device matched = BATON_NULL_HANDLE;
  {
    baton_result r = baton_match_vulkan_physical_device(instance, &vulkan, &matched);
    REQUIRE(r == BATON_ERROR_NOT_SUPPORTED || (r == BATON_SUCCESS && matched != BATON_NULL_HANDLE));
  }

  baton_vulkan_timeline_create_info info = BATON_VULKAN_TIMELINE_CREATE_INFO_INIT;
  info.vulkan = vulkan;
  info.initial_value = 1;
  info.device = device;
  info.debug_name = "c-timeline";
  baton_vulkan_timeline timeline;
  memset(&timeline, 0, sizeof timeline);
  CHECK_OK(baton_create_vulkan_timeline(instance, &info, &timeline));
  REQUIRE(timeline.mode == BATON_INTEROP_MODE_BRIDGED);
  REQUIRE(timeline.vulkan != VK_NULL_HANDLE && timeline.baton != BATON_NULL_HANDLE);
  REQUIRE(strcmp(baton_interop_mode_name(timeline.mode), "bridged") == 0);
  baton_vulkan_interop_info interop;
  CHECK_OK(baton_get_vulkan_semaphore_interop(timeline.baton, &interop));
  REQUIRE(interop.mode == BATON_INTEROP_MODE_BRIDGED && interop.semaphore == timeline.vulkan);
  REQUIRE(interop.device == vk_device && interop.reason[0] != '\0');
  REQUIRE(interop.failure_policy == BATON_VULKAN_FAILURE_POLICY_HOLD);

  /* baton -> Vulkan: a host signal is forwarded to the VkSemaphore. */
  uint64_t value = 0;
  CHECK_OK(baton_semaphore_get_value(timeline.baton, &value));
  REQUIRE(value == 1);
  CHECK_OK(baton_semaphore_signal(timeline.baton, 2));
  uint64_t two = 2;
  VkSemaphoreWaitInfo wait = {
      VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, NULL, 0, 1, &timeline.vulkan, &two};
  REQUIRE(vkWaitSemaphores(vk_device, &wait, 5000000000ull) == VK_SUCCESS);

  /* Vulkan -> baton: a Vulkan signal reaches baton's waiters and queues. */
  baton_queue queue = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_get_queue(device, 0, &queue));
  baton_semaphore after = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_semaphore(instance, NULL, &after));
  baton_semaphore_value three = {timeline.baton, 3}, after_one = {after, 1};
  baton_submit_info submit = {&three, 1, NULL, 0, &after_one, 1};
  CHECK_OK(baton_queue_submit(queue, &submit, 1));
  VkSemaphoreSignalInfo signal = {VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, NULL, timeline.vulkan,
                                  3};
  REQUIRE(vkSignalSemaphore(vk_device, &signal) == VK_SUCCESS);
  CHECK_OK(baton_semaphore_wait(after, 1, 5000000000ull));
  CHECK_OK(baton_semaphore_get_value(timeline.baton, &value));
  REQUIRE(value == 3);

  CHECK_OK(baton_queue_wait_idle(queue, BATON_WAIT_FOREVER));
  CHECK_OK(baton_semaphore_destroy(after));
  CHECK_OK(baton_destroy_vulkan_timeline(&vulkan, &timeline));
  CHECK_OK(baton_device_destroy(device));
  CHECK_OK(baton_instance_destroy(instance));
  return 0;
}

baton_vulkan_device c_api_vulkan_default_device(void) {
  baton_vulkan_device value = BATON_VULKAN_DEVICE_INIT;
  return value;
}
baton_vulkan_semaphore_import_info c_api_vulkan_default_semaphore_import_info(void) {
  baton_vulkan_semaphore_import_info value = BATON_VULKAN_SEMAPHORE_IMPORT_INFO_INIT;
  return value;
}
baton_vulkan_timeline_create_info c_api_vulkan_default_timeline_create_info(void) {
  baton_vulkan_timeline_create_info value = BATON_VULKAN_TIMELINE_CREATE_INFO_INIT;
  return value;
}
baton_vulkan_memory_import_info c_api_vulkan_default_memory_import_info(void) {
  baton_vulkan_memory_import_info value = BATON_VULKAN_MEMORY_IMPORT_INFO_INIT;
  return value;
}
