/* The C consumer of an installed baton (tests/consumers/run.sh): compiled as strict C11 with
 * `pkg-config --cflags --libs baton` and run. A host queue waits for a semaphore value before the
 * host signals it (wait-before-signal), runs a host call and signals the next value; the host
 * waits for that. Exits 0 on success, 1 with a message otherwise. */
#include <baton/baton.h>
#include <stdio.h>

static baton_result mark(void* ran) {
  *(volatile int*)ran = 1; /* read by the host after its wait: the semaphore orders it */
  return BATON_SUCCESS;
}

static int check(const char* what, baton_result r) {
  if (!baton_is_error(r)) return 0;
  printf("consumer c: FAILED: %s: %s: %s\n", what, baton_result_name(r),
         baton_last_error_message());
  return 1;
}

int main(void) {
  baton_instance instance = BATON_NULL_HANDLE;
  baton_instance_create_info instance_info = BATON_INSTANCE_CREATE_INFO_INIT;
  instance_info.backend_mask = 0; /* the host backend only */
  if (check("create_instance", baton_create_instance(&instance_info, &instance))) return 1;

  uint32_t count = 1;
  baton_physical_device physical = BATON_NULL_HANDLE; /* the host's: listed first */
  (void)baton_instance_enumerate_physical_devices(instance, &count, &physical);

  baton_device device = BATON_NULL_HANDLE;
  baton_queue queue = BATON_NULL_HANDLE;
  baton_semaphore timeline = BATON_NULL_HANDLE;
  baton_command_buffer commands = BATON_NULL_HANDLE;
  volatile int ran = 0;
  int failed =
      check("create_device", baton_instance_create_device(instance, physical, NULL, &device));
  if (!failed) failed = check("get_queue", baton_device_get_queue(device, 0, &queue));
  if (!failed)
    failed = check("create_semaphore", baton_instance_create_semaphore(instance, NULL, &timeline));
  if (!failed)
    failed = check("create_command_buffer", baton_device_create_command_buffer(device, &commands));
  if (!failed) failed = check("begin", baton_command_buffer_begin(commands));
  if (!failed)
    failed = check("host_call", baton_command_buffer_host_call(commands, mark, (void*)&ran));
  if (!failed) failed = check("end", baton_command_buffer_end(commands));

  baton_semaphore_value one = {timeline, 1}, two = {timeline, 2};
  baton_submit_info submit = {&one, 1, &commands, 1, &two, 1};
  if (!failed) failed = check("queue_submit", baton_queue_submit(queue, &submit, 1));
  if (!failed) failed = check("semaphore_signal", baton_semaphore_signal(timeline, 1));
  baton_result waited = BATON_SUCCESS;
  if (!failed)
    failed = check("semaphore_wait", waited = baton_semaphore_wait(timeline, 2, 10000000000ull));
  uint64_t value = 0;
  if (!failed) failed = check("semaphore_get_value", baton_semaphore_get_value(timeline, &value));
  if (!failed && (waited != BATON_SUCCESS || value != 2 || !ran)) {
    printf("consumer c: FAILED: wait %s, value %llu (expected 2), host call %s\n",
           baton_result_name(waited), (unsigned long long)value, ran ? "ran" : "did not run");
    failed = 1;
  }

  (void)baton_command_buffer_destroy(commands);
  (void)baton_semaphore_destroy(timeline);
  (void)baton_device_destroy(device);
  (void)baton_instance_destroy(instance);
  if (!failed) printf("consumer c: baton.h: host queue and semaphore ok\n");
  return failed;
}
