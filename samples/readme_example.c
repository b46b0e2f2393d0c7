/* The README example (samples/readme_example.cpp) in C, through baton/baton.h; compiled as C11
 * and run by the tests. Two queues and the host, one timeline semaphore; queue 1's batch is
 * submitted before the batch on queue 0 that signals what it waits for (wait-before-signal). */
#include <baton/baton.h>
#include <stdio.h>

static baton_result say_hello(void* user_data) {
  (void)user_data;
  printf("hello from queue 1\n");
  return BATON_SUCCESS;
}

int main(void) {
  baton_instance instance = BATON_NULL_HANDLE;
  if (baton_is_error(baton_create_instance(NULL, &instance))) return 1;

  /* Physical devices are listed host first; take the host's (see baton-info for the rest). */
  uint32_t count = 1;
  baton_physical_device physical = BATON_NULL_HANDLE;
  (void)baton_instance_enumerate_physical_devices(instance, &count, &physical); /* NotReady: more */

  baton_device device = BATON_NULL_HANDLE;
  baton_queue queue0 = BATON_NULL_HANDLE, queue1 = BATON_NULL_HANDLE;
  baton_semaphore timeline = BATON_NULL_HANDLE;
  baton_command_buffer hello = BATON_NULL_HANDLE;
  baton_device_create_info device_info = BATON_DEVICE_CREATE_INFO_INIT;
  device_info.queue_count = 2;
  baton_result r = baton_instance_create_device(instance, physical, &device_info, &device);
  if (!baton_is_error(r)) r = baton_device_get_queue(device, 0, &queue0);
  if (!baton_is_error(r)) r = baton_device_get_queue(device, 1, &queue1);
  if (!baton_is_error(r)) r = baton_instance_create_semaphore(instance, NULL, &timeline); /* 0 */
  if (!baton_is_error(r)) r = baton_device_create_command_buffer(device, &hello);
  if (!baton_is_error(r)) r = baton_command_buffer_begin(hello);
  if (!baton_is_error(r)) r = baton_command_buffer_host_call(hello, say_hello, NULL);
  if (!baton_is_error(r)) r = baton_command_buffer_end(hello);

  /* Queue 1 waits for 1 before anyone has promised to signal it, then signals 2. */
  baton_semaphore_value one = {timeline, 1}, two = {timeline, 2};
  baton_submit_info consume = {&one, 1, &hello, 1, &two, 1};
  if (!baton_is_error(r)) r = baton_queue_submit(queue1, &consume, 1);
  /* Queue 0 signals 1 (an empty batch: no waits, no command buffers). */
  baton_submit_info produce = {NULL, 0, NULL, 0, &one, 1};
  if (!baton_is_error(r)) r = baton_queue_submit(queue0, &produce, 1);
  /* The host waits for queue 1. */
  if (!baton_is_error(r)) r = baton_semaphore_wait(timeline, 2, BATON_WAIT_FOREVER);

  if (baton_is_error(r)) printf("%s: %s\n", baton_result_name(r), baton_last_error_message());
  /* C has no destructors: destroy children before parents (destroying the instance alone would
   * destroy them too, but report them as leaked). */
  (void)baton_command_buffer_destroy(hello);
  (void)baton_semaphore_destroy(timeline);
  (void)baton_device_destroy(device);
  (void)baton_instance_destroy(instance);
  return baton_is_error(r) ? 1 : 0;
}
