/* The C API driven from C (compiled as C11 with -Wall -Wextra -pedantic -Werror, which also
 * checks that baton/baton.h is clean C11): each c_api_flow_* function runs one scenario on the
 * host backend and returns 0, or the failing line with its explanation in `why`.
 * tests/c_api/c_api_test.cpp runs them. */
#include "c_api_flow.h"

#include <baton/baton.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "c_check.h"

/* The host backend's physical device (listed first) and a device on it. */
static int make_host_device(baton_instance* instance, baton_device* device, uint32_t queues,
                            char* why, size_t capacity) {
  baton_instance_create_info info = BATON_INSTANCE_CREATE_INFO_INIT;
  info.backend_mask = BATON_BACKEND_BIT(BATON_BACKEND_KIND_HOST);
  CHECK_OK(baton_create_instance(&info, instance));
  REQUIRE(*instance != BATON_NULL_HANDLE);
  uint32_t count = 1;
  baton_physical_device physical = BATON_NULL_HANDLE;
  baton_result r = baton_instance_enumerate_physical_devices(*instance, &count, &physical);
  REQUIRE(r == BATON_SUCCESS || r == BATON_NOT_READY);
  REQUIRE(count == 1);
  baton_device_create_info device_info = BATON_DEVICE_CREATE_INFO_INIT;
  device_info.queue_count = queues;
  device_info.debug_name = "c-flow";
  CHECK_OK(baton_instance_create_device(*instance, physical, &device_info, device));
  return 0;
}

/* ---- enumeration and properties -------------------------------------------------------------- */

int c_api_flow_enumerate(char* why, size_t capacity) {
  baton_instance instance = BATON_NULL_HANDLE;
  CHECK_OK(baton_create_instance(NULL, &instance)); /* NULL: the defaults, every backend */

  uint32_t count = 0;
  CHECK_OK(baton_instance_enumerate_backends(instance, &count, NULL));
  REQUIRE(count == BATON_BACKEND_KIND_COUNT);
  baton_backend_info backends[BATON_BACKEND_KIND_COUNT + 1];
  count = BATON_BACKEND_KIND_COUNT + 1;
  CHECK_OK(baton_instance_enumerate_backends(instance, &count, backends));
  REQUIRE(count == BATON_BACKEND_KIND_COUNT);
  REQUIRE(backends[0].kind == BATON_BACKEND_KIND_HOST);
  REQUIRE(backends[0].compiled && backends[0].available && backends[0].device_count == 1);
  REQUIRE(strcmp(baton_backend_name(backends[1].kind), "cuda") == 0);
  count = 1;
  EXPECT_RESULT(BATON_NOT_READY, baton_instance_enumerate_backends(instance, &count, backends));
  REQUIRE(count == 1);

  baton_physical_device physical[8];
  count = 8;
  CHECK_OK(baton_instance_enumerate_physical_devices(instance, &count, physical));
  REQUIRE(count >= 1);
  baton_physical_device_properties properties;
  CHECK_OK(baton_physical_device_get_properties(physical[0], &properties));
  REQUIRE(properties.backend == BATON_BACKEND_KIND_HOST);
  REQUIRE(properties.max_queues >= 2 && properties.max_queues <= BATON_MAX_QUEUES);
  REQUIRE(properties.capabilities & BATON_CAPABILITY_STREAM_ORDERED_ALLOC);
  REQUIRE(properties.name[0] != '\0');
  char names[256];
  size_t needed = baton_capability_names(properties.capabilities, names, sizeof names);
  REQUIRE(needed == strlen(names) && strstr(names, "stream-ordered-alloc") != NULL);
  REQUIRE(baton_capability_names(BATON_CAPABILITY_DEVICE_MEMORY, names, 4) ==
          strlen("device-memory"));
  REQUIRE(strcmp(names, "dev") == 0);

  /* A device with the default create-info: one queue, which knows its device and physical
   * device. */
  baton_device device = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_device(instance, physical[0], NULL, &device));
  uint32_t queues = 0;
  CHECK_OK(baton_device_get_queue_count(device, &queues));
  REQUIRE(queues == 1);
  baton_queue queue = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_get_queue(device, 0, &queue));
  baton_device owner = BATON_NULL_HANDLE;
  CHECK_OK(baton_queue_get_device(queue, &owner));
  REQUIRE(owner == device);
  baton_physical_device device_physical = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_get_physical_device(device, &device_physical));
  REQUIRE(device_physical == physical[0]);
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_device_get_queue(device, 1, &queue));

  CHECK_OK(baton_device_destroy(device));
  CHECK_OK(baton_instance_destroy(instance));
  return 0;
}

/* ---- semaphores and host waits --------------------------------------------------------------- */

int c_api_flow_semaphores(char* why, size_t capacity) {
  baton_instance instance = BATON_NULL_HANDLE;
  CHECK_OK(baton_create_instance(NULL, &instance));
  baton_semaphore a = BATON_NULL_HANDLE, b = BATON_NULL_HANDLE;
  baton_semaphore_create_info info = BATON_SEMAPHORE_CREATE_INFO_INIT;
  info.initial_value = 5;
  info.debug_name = "a";
  CHECK_OK(baton_instance_create_semaphore(instance, &info, &a));
  CHECK_OK(baton_instance_create_semaphore(instance, NULL, &b));

  uint64_t value = 0;
  CHECK_OK(baton_semaphore_get_value(a, &value));
  REQUIRE(value == 5);
  CHECK_OK(baton_semaphore_get_value(b, &value));
  REQUIRE(value == 0);
  EXPECT_RESULT(BATON_ERROR_NON_INCREASING_VALUE, baton_semaphore_signal(a, 5));
  REQUIRE(strstr(baton_last_error_message(), "'a'") != NULL);
  CHECK_OK(baton_semaphore_signal(a, 7));

  baton_semaphore_value waits[2] = {{a, 7}, {b, 1}};
  EXPECT_RESULT(BATON_TIMEOUT,
                baton_instance_wait_semaphores(instance, waits, 2, BATON_WAIT_MODE_ALL, 0));
  CHECK_OK(baton_instance_wait_semaphores(instance, waits, 2, BATON_WAIT_MODE_ANY, 0));
  CHECK_OK(baton_instance_wait_semaphores(instance, NULL, 0, BATON_WAIT_MODE_ALL, 0));
  EXPECT_RESULT(BATON_TIMEOUT, baton_semaphore_wait(b, 1, 1000000)); /* 1 ms */
  CHECK_OK(baton_semaphore_signal(b, 1));
  CHECK_OK(
      baton_instance_wait_semaphores(instance, waits, 2, BATON_WAIT_MODE_ALL, BATON_WAIT_FOREVER));

  /* Failure: waiters get the first reason; the semaphore stays failed. */
  char reason[64] = "x";
  CHECK_OK(baton_semaphore_get_failure_reason(b, reason, sizeof reason));
  REQUIRE(reason[0] == '\0');
  CHECK_OK(baton_semaphore_fail(b, "producer died"));
  EXPECT_RESULT(BATON_ERROR_SEMAPHORE_FAILED, baton_semaphore_fail(b, "second"));
  EXPECT_RESULT(BATON_ERROR_SEMAPHORE_FAILED, baton_semaphore_wait(b, 2, BATON_WAIT_FOREVER));
  REQUIRE(strstr(baton_last_error_message(), "producer died") != NULL);
  CHECK_OK(baton_semaphore_get_failure_reason(b, reason, sizeof reason));
  REQUIRE(strcmp(reason, "producer died") == 0);
  EXPECT_RESULT(BATON_ERROR_SEMAPHORE_FAILED, baton_semaphore_get_value(b, &value));
  REQUIRE(value == 1);
  EXPECT_RESULT(BATON_ERROR_SEMAPHORE_FAILED, baton_semaphore_signal(b, 9));

  CHECK_OK(baton_semaphore_destroy(a));
  CHECK_OK(baton_semaphore_destroy(b));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_semaphore_signal(a, 8));
  CHECK_OK(baton_instance_destroy(instance));
  return 0;
}

/* A shareable semaphore exported and imported again (in this process: the two-process cases are
 * tests/shared's): one timeline under two handles, and the refusals. */
int c_api_flow_shared_semaphores(char* why, size_t capacity) {
  baton_instance instance = BATON_NULL_HANDLE;
  CHECK_OK(baton_create_instance(NULL, &instance));
  baton_semaphore shared = BATON_NULL_HANDLE, imported = BATON_NULL_HANDLE;
  baton_semaphore_create_info info = BATON_SEMAPHORE_CREATE_INFO_INIT;
  info.initial_value = 2;
  info.debug_name = "shared";
  info.flags = BATON_SEMAPHORE_SHAREABLE;
  CHECK_OK(baton_instance_create_semaphore(instance, &info, &shared));
  int fd = -1;
  CHECK_OK(baton_semaphore_export_fd(shared, &fd));
  REQUIRE(fd >= 0);
  baton_semaphore_import_info import_info = BATON_SEMAPHORE_IMPORT_INFO_INIT;
  import_info.fd = fd;
  import_info.debug_name = "imported";
  CHECK_OK(baton_instance_import_semaphore(instance, &import_info, &imported));
  close(fd);
  uint64_t value = 0;
  CHECK_OK(baton_semaphore_get_value(imported, &value));
  REQUIRE(value == 2);
  CHECK_OK(baton_semaphore_signal(imported, 4));
  CHECK_OK(baton_semaphore_wait(shared, 4, BATON_WAIT_FOREVER));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_semaphore_signal(shared, BATON_SHARED_SEMAPHORE_MAX_VALUE + 1));
  CHECK_OK(baton_semaphore_fail(shared, "stopped"));
  EXPECT_RESULT(BATON_ERROR_SEMAPHORE_FAILED, baton_semaphore_wait(imported, 5, 0));
  REQUIRE(strstr(baton_last_error_message(), "stopped") != NULL);

  /* Refusals: no descriptor, a null info, a semaphore that is not shareable, an unknown flag. */
  import_info.fd = -1;
  baton_semaphore none = BATON_NULL_HANDLE;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_import_semaphore(instance, &import_info, &none));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_import_semaphore(instance, NULL, &none));
  REQUIRE(none == BATON_NULL_HANDLE);
  baton_semaphore local = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_semaphore(instance, NULL, &local));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_semaphore_export_fd(local, &fd));
  REQUIRE(fd == -1);
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_semaphore_export_fd(shared, NULL));
  info.flags = 0x80;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_create_semaphore(instance, &info, &none));

  CHECK_OK(baton_semaphore_destroy(local));
  CHECK_OK(baton_semaphore_destroy(imported));
  CHECK_OK(baton_semaphore_destroy(shared));
  CHECK_OK(baton_instance_destroy(instance));
  return 0;
}

/* ---- submissions, host calls, native callbacks ----------------------------------------------- */

struct steps {
  int order[8];
  int count;
};

static baton_result record_step(struct steps* steps, int step) {
  if (steps->count < 8) steps->order[steps->count] = step;
  steps->count++;
  return BATON_SUCCESS;
}

static baton_result host_step(void* user_data) { return record_step(user_data, 1); }

static baton_result native_step(const baton_native_queue* queue, void* user_data) {
  /* On the host backend the native queue is the worker itself: no stream. */
  if (queue->backend != BATON_BACKEND_KIND_HOST || queue->stream != NULL || queue->queue_index != 1)
    return BATON_ERROR_INVALID_ARGUMENT;
  return record_step(user_data, 2);
}

static baton_result failing_step(void* user_data) {
  (void)user_data;
  return BATON_ERROR_DRIVER;
}

int c_api_flow_submit(char* why, size_t capacity) {
  baton_instance instance = BATON_NULL_HANDLE;
  baton_device device = BATON_NULL_HANDLE;
  int line = make_host_device(&instance, &device, 2, why, capacity);
  if (line) return line;
  baton_queue queue0 = BATON_NULL_HANDLE, queue1 = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_get_queue(device, 0, &queue0));
  CHECK_OK(baton_device_get_queue(device, 1, &queue1));
  baton_semaphore timeline = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_semaphore(instance, NULL, &timeline));

  struct steps steps = {{0}, 0};
  baton_command_buffer commands = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_command_buffer(device, &commands));
  CHECK_OK(baton_command_buffer_begin(commands));
  CHECK_OK(baton_command_buffer_host_call(commands, host_step, &steps));
  CHECK_OK(baton_command_buffer_native(commands, native_step, &steps));
  CHECK_OK(baton_command_buffer_end(commands));
  EXPECT_RESULT(BATON_ERROR_INVALID_STATE, baton_command_buffer_end(commands));

  /* Wait-before-signal: queue 1 waits for 1, which the host signals after the submit. */
  baton_semaphore_value one = {timeline, 1}, two = {timeline, 2};
  baton_submit_info submit = {&one, 1, &commands, 1, &two, 1};
  CHECK_OK(baton_queue_submit(queue1, &submit, 1));
  EXPECT_RESULT(BATON_TIMEOUT, baton_semaphore_wait(timeline, 2, 1000000));
  REQUIRE(steps.count == 0);
  CHECK_OK(baton_semaphore_signal(timeline, 1));
  CHECK_OK(baton_device_wait_semaphores(device, &two, 1, BATON_WAIT_MODE_ALL, BATON_WAIT_FOREVER));
  /* A host wait's spin is the device's setting (no effect on a host-backend device). */
  CHECK_OK(baton_device_set_host_wait_spin(device, BATON_HOST_WAIT_SPIN_FOREVER));
  CHECK_OK(baton_device_set_host_wait_spin(device, BATON_HOST_WAIT_SPIN_DEFAULT_NS));
  REQUIRE(steps.count == 2 && steps.order[0] == 1 && steps.order[1] == 2);

  /* Two batches in one submit, the second on an empty list of command buffers. */
  baton_semaphore_value three = {timeline, 3}, four = {timeline, 4};
  baton_submit_info batches[2] = {{NULL, 0, NULL, 0, &three, 1}, {&three, 1, NULL, 0, &four, 1}};
  CHECK_OK(baton_queue_submit(queue0, batches, 2));
  CHECK_OK(baton_queue_wait_idle(queue0, BATON_WAIT_FOREVER));
  uint64_t value = 0;
  CHECK_OK(baton_semaphore_get_value(timeline, &value));
  REQUIRE(value == 4);

  /* A failing host call fails the batch's signals; a batch waiting on them fails in turn. */
  baton_semaphore failed = BATON_NULL_HANDLE, after = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_semaphore(instance, NULL, &failed));
  CHECK_OK(baton_instance_create_semaphore(instance, NULL, &after));
  baton_command_buffer failing = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_command_buffer(device, &failing));
  CHECK_OK(baton_command_buffer_begin(failing));
  CHECK_OK(baton_command_buffer_host_call(failing, failing_step, NULL));
  CHECK_OK(baton_command_buffer_end(failing));
  baton_semaphore_value failed_one = {failed, 1}, after_one = {after, 1};
  baton_submit_info failing_submit = {NULL, 0, &failing, 1, &failed_one, 1};
  baton_submit_info chained = {&failed_one, 1, NULL, 0, &after_one, 1};
  CHECK_OK(baton_queue_submit(queue0, &failing_submit, 1));
  CHECK_OK(baton_queue_submit(queue1, &chained, 1));
  EXPECT_RESULT(BATON_ERROR_SEMAPHORE_FAILED, baton_semaphore_wait(after, 1, BATON_WAIT_FOREVER));
  REQUIRE(strstr(baton_last_error_message(), "ErrorDriver") != NULL);

  CHECK_OK(baton_device_wait_idle(device, BATON_WAIT_FOREVER));
  CHECK_OK(baton_command_buffer_destroy(failing));
  CHECK_OK(baton_command_buffer_destroy(commands));
  CHECK_OK(baton_semaphore_destroy(failed));
  CHECK_OK(baton_semaphore_destroy(after));
  CHECK_OK(baton_semaphore_destroy(timeline));
  CHECK_OK(baton_device_destroy(device));
  CHECK_OK(baton_instance_destroy(instance));
  return 0;
}

/* ---- buffers, recorded transfers, queue-ordered allocation ----------------------------------- */

int c_api_flow_buffers(char* why, size_t capacity) {
  baton_instance instance = BATON_NULL_HANDLE;
  baton_device device = BATON_NULL_HANDLE;
  int line = make_host_device(&instance, &device, 1, why, capacity);
  if (line) return line;
  baton_queue queue = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_get_queue(device, 0, &queue));
  baton_semaphore timeline = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_semaphore(instance, NULL, &timeline));

  baton_buffer_create_info info = BATON_BUFFER_CREATE_INFO_INIT;
  info.size = 64;
  baton_buffer src = BATON_NULL_HANDLE, dst = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_buffer(device, &info, &src));
  info.memory = BATON_MEMORY_KIND_HOST_PINNED;
  CHECK_OK(baton_device_create_buffer(device, &info, &dst));
  uint64_t size = 0;
  CHECK_OK(baton_buffer_get_size(dst, &size));
  REQUIRE(size == 64);
  void* mapped = NULL;
  CHECK_OK(baton_buffer_map(dst, &mapped));
  REQUIRE(mapped != NULL);
  uint64_t address = 0;
  CHECK_OK(baton_buffer_get_device_address(dst, &address));
  REQUIRE(address == (uint64_t)(uintptr_t)mapped); /* the host backend's device address */

  const char text[8] = "baton-c";
  baton_command_buffer commands = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_command_buffer(device, &commands));
  CHECK_OK(baton_command_buffer_begin(commands));
  CHECK_OK(baton_command_buffer_fill_buffer(commands, src, 0, 64, 0x01020304u));
  CHECK_OK(baton_command_buffer_update_buffer(commands, src, 8, sizeof text, text));
  CHECK_OK(baton_command_buffer_copy_buffer(commands, src, 0, dst, 0, 64));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_fill_buffer(commands, src, 2, 4, 0)); /* unaligned */
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_copy_buffer(commands, src, 0, dst, 32, 64)); /* outside */
  CHECK_OK(baton_command_buffer_end(commands));
  baton_semaphore_value one = {timeline, 1};
  baton_submit_info submit = {NULL, 0, &commands, 1, &one, 1};
  CHECK_OK(baton_queue_submit(queue, &submit, 1));
  CHECK_OK(baton_semaphore_wait(timeline, 1, BATON_WAIT_FOREVER));
  const unsigned char* bytes = mapped;
  REQUIRE(bytes[0] == 0x04 && bytes[3] == 0x01 && bytes[60] == 0x04);
  REQUIRE(memcmp(bytes + 8, text, sizeof text) == 0);

  /* Queue-ordered allocation: the memory exists once the queue reached it (after 2). */
  baton_semaphore_value two = {timeline, 2}, three = {timeline, 3}, four = {timeline, 4};
  baton_buffer scratch = BATON_NULL_HANDLE;
  info.memory = BATON_MEMORY_KIND_DEVICE;
  CHECK_OK(baton_queue_alloca_buffer(queue, &two, 1, &info, &three, 1, &scratch));
  EXPECT_RESULT(BATON_NOT_READY, baton_buffer_get_device_address(scratch, &address));
  REQUIRE(address == 0);
  CHECK_OK(baton_semaphore_signal(timeline, 2));
  CHECK_OK(baton_semaphore_wait(timeline, 3, BATON_WAIT_FOREVER));
  CHECK_OK(baton_buffer_get_device_address(scratch, &address));
  REQUIRE(address != 0);
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_queue_dealloca_buffer(queue, NULL, 0, dst, NULL, 0)); /* not alloca'd */
  CHECK_OK(baton_queue_dealloca_buffer(queue, &three, 1, scratch, &four, 1));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_buffer_destroy(scratch)); /* consumed */
  CHECK_OK(baton_semaphore_wait(timeline, 4, BATON_WAIT_FOREVER));

  /* A shareable buffer, imported here (another process imports it the same way): one memory. */
  baton_buffer_create_info shared_info = BATON_BUFFER_CREATE_INFO_INIT;
  shared_info.size = 64;
  shared_info.flags = BATON_BUFFER_SHAREABLE;
  baton_buffer shared = BATON_NULL_HANDLE, imported = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_buffer(device, &shared_info, &shared));
  int fd = -1;
  CHECK_OK(baton_buffer_export_fd(shared, &fd));
  REQUIRE(fd >= 0);
  baton_buffer_import_info import_info = BATON_BUFFER_IMPORT_INFO_INIT;
  import_info.fd = fd;
  import_info.size = 128;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_device_import_buffer(device, &import_info, &imported)); /* size */
  import_info.size = 64;
  CHECK_OK(baton_device_import_buffer(device, &import_info, &imported));
  close(fd);
  void* exported_bytes = NULL;
  void* imported_bytes = NULL;
  CHECK_OK(baton_buffer_map(shared, &exported_bytes));
  CHECK_OK(baton_buffer_map(imported, &imported_bytes));
  ((unsigned char*)exported_bytes)[5] = 42;
  REQUIRE(((const unsigned char*)imported_bytes)[5] == 42);
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_buffer_export_fd(src, &fd)); /* not shared */
  REQUIRE(fd == -1);
  CHECK_OK(baton_buffer_destroy(imported));
  CHECK_OK(baton_buffer_destroy(shared));

  CHECK_OK(baton_command_buffer_destroy(commands));
  CHECK_OK(baton_buffer_destroy(src));
  CHECK_OK(baton_buffer_destroy(dst));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_buffer_map(dst, &mapped));
  CHECK_OK(baton_semaphore_destroy(timeline));
  CHECK_OK(baton_device_destroy(device));
  CHECK_OK(baton_instance_destroy(instance));
  return 0;
}

/* ---- the debug callback and bad input ---------------------------------------------------------
 */

struct messages {
  int errors;
  int warnings;
  char last_error[1024];
};

static void on_message(baton_message_severity severity, const char* message, void* user_data) {
  struct messages* messages = user_data;
  if (severity == BATON_MESSAGE_SEVERITY_ERROR) {
    messages->errors++;
    snprintf(messages->last_error, sizeof messages->last_error, "%s", message);
  } else if (severity == BATON_MESSAGE_SEVERITY_WARNING) {
    messages->warnings++;
  }
}

int c_api_flow_bad_input(char* why, size_t capacity) {
  struct messages messages;
  memset(&messages, 0, sizeof messages);
  baton_instance_create_info info = BATON_INSTANCE_CREATE_INFO_INIT;
  info.debug_callback = on_message;
  info.debug_user_data = &messages;
  baton_instance instance = BATON_NULL_HANDLE;
  info.backend_mask = 1u << 7;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_create_instance(&info, &instance));
  REQUIRE(instance == BATON_NULL_HANDLE);
  info.backend_mask = BATON_ALL_BACKENDS;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_create_instance(&info, NULL));
  CHECK_OK(baton_create_instance(&info, &instance));

  /* Null handles, and null outputs. */
  baton_semaphore semaphore = BATON_NULL_HANDLE;
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_semaphore_signal(semaphore, 1));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_instance_destroy(BATON_NULL_HANDLE));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_queue_submit(BATON_NULL_HANDLE, NULL, 0));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_buffer_map(BATON_NULL_HANDLE, NULL));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_create_semaphore(instance, NULL, NULL));
  /* Every error reaches the callback too, with the same text (errors of no instance, as the
   * null handles above, reach every instance's callback). */
  REQUIRE(messages.errors >= 1);
  REQUIRE(strcmp(messages.last_error, baton_last_error_message()) == 0);
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_enumerate_physical_devices(instance, NULL, NULL));

  /* Destroyed handles, bad enum values, non-increasing signals, null arrays. */
  CHECK_OK(baton_instance_create_semaphore(instance, NULL, &semaphore));
  baton_semaphore_value wait = {semaphore, 1};
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_wait_semaphores(instance, &wait, 1, (baton_wait_mode)7, 0));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_wait_semaphores(instance, NULL, 1, BATON_WAIT_MODE_ALL, 0));
  EXPECT_RESULT(BATON_ERROR_NON_INCREASING_VALUE, baton_semaphore_signal(semaphore, 0));
  CHECK_OK(baton_semaphore_destroy(semaphore));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_semaphore_destroy(semaphore));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_instance_wait_semaphores(instance, &wait, 1, BATON_WAIT_MODE_ALL, 0));
  REQUIRE(strstr(baton_last_error_message(), "stale handle") != NULL);

  uint32_t count = 1;
  baton_physical_device physical = BATON_NULL_HANDLE;
  baton_result r = baton_instance_enumerate_physical_devices(instance, &count, &physical);
  REQUIRE(!baton_is_error(r));
  baton_device device = BATON_NULL_HANDLE;
  baton_device_create_info device_info = BATON_DEVICE_CREATE_INFO_INIT;
  device_info.queue_count = 0;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_create_device(instance, physical, &device_info, &device));
  CHECK_OK(baton_instance_create_device(instance, physical, NULL, &device));
  baton_buffer buffer = BATON_NULL_HANDLE;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_device_create_buffer(device, NULL, &buffer));
  baton_buffer_create_info buffer_info = {16, (baton_memory_kind)9, 0};
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_device_create_buffer(device, &buffer_info, &buffer));
  baton_queue queue = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_get_queue(device, 0, &queue));
  baton_command_buffer commands = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_command_buffer(device, &commands));
  EXPECT_RESULT(BATON_ERROR_INVALID_STATE,
                baton_command_buffer_host_call(commands, failing_step, NULL)); /* not begun */
  CHECK_OK(baton_command_buffer_begin(commands));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_command_buffer_host_call(commands, NULL, NULL));
  baton_submit_info unended = {NULL, 0, &commands, 1, NULL, 0};
  EXPECT_RESULT(BATON_ERROR_INVALID_STATE, baton_queue_submit(queue, &unended, 1));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_queue_submit(queue, NULL, 1));

  /* A device destroyed with a live command buffer destroys it and says so. */
  int warnings = messages.warnings;
  EXPECT_RESULT(BATON_ERROR_OBJECT_IN_USE, baton_device_destroy(device));
  REQUIRE(messages.warnings > warnings);
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_command_buffer_begin(commands));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_queue_submit(queue, NULL, 0));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_device_get_queue(device, 0, &queue));

  CHECK_OK(baton_instance_destroy(instance));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_instance_destroy(instance));
  REQUIRE(strcmp(baton_result_name(BATON_ERROR_INVALID_HANDLE), "ErrorInvalidHandle") == 0);
  REQUIRE(strcmp(baton_result_name((baton_result)42), "Result(42)") == 0);
  return 0;
}

/* ---- the defaults -----------------------------------------------------------------------------
 */

baton_instance_create_info c_api_default_instance_create_info(void) {
  baton_instance_create_info value = BATON_INSTANCE_CREATE_INFO_INIT;
  return value;
}
baton_semaphore_create_info c_api_default_semaphore_create_info(void) {
  baton_semaphore_create_info value = BATON_SEMAPHORE_CREATE_INFO_INIT;
  return value;
}
baton_device_create_info c_api_default_device_create_info(void) {
  baton_device_create_info value = BATON_DEVICE_CREATE_INFO_INIT;
  return value;
}
baton_buffer_create_info c_api_default_buffer_create_info(void) {
  baton_buffer_create_info value = BATON_BUFFER_CREATE_INFO_INIT;
  return value;
}
baton_command_buffer_create_info c_api_default_command_buffer_create_info(void) {
  baton_command_buffer_create_info value = BATON_COMMAND_BUFFER_CREATE_INFO_INIT;
  return value;
}
