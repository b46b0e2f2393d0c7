/* Graph command buffers (BATON_COMMAND_BUFFER_USAGE_GRAPH) driven from C (compiled as C11 with
 * -Wall -Wextra -pedantic -Werror, as c_api_flow.c), on every device of every backend that loads:
 * see c_api_graph_flow.h. tests/c_api/c_api_test.cpp runs it; tests/c_api/meson.build also runs
 * it on the fake CUDA driver and under the fake's HIP names, where those backends must be there. */
#include "c_api_graph_flow.h"

#include <baton/baton.h>
#include <stdbool.h>
#include <string.h>

#include "c_check.h"

/* A finite limit for every wait that must succeed: a hang becomes a failure. */
#define GRAPH_WAIT_NS UINT64_C(60000000000)
/* The buffers: 256 bytes each, filled with GRAPH_PATTERN. */
#define GRAPH_BYTES 256u
#define GRAPH_WORDS (GRAPH_BYTES / 4u)
#define GRAPH_PATTERN 0xC0DE6A7Fu

/* What the callbacks of one command buffer saw. Written on baton's threads (or inside end), read
 * after the semaphore wait that orders them. */
struct graph_calls {
  baton_backend_kind backend; /* the device's backend */
  const uint32_t* dst;        /* the copy's destination, mapped */
  int host_calls;             /* host calls run */
  int host_saw_copy;          /* of which found the copy done (commands run in order) */
  int native_calls;           /* native callbacks run */
  int native_bad;             /* of which got a baton_native_queue of the wrong kind */
  uint32_t native_queue_index;
};

static bool words_hold(const uint32_t* words, uint32_t value) {
  for (uint32_t i = 0; i < GRAPH_WORDS; ++i)
    if (words[i] != value) return false;
  return true;
}

static baton_result graph_host_call(void* user_data) {
  struct graph_calls* calls = user_data;
  calls->host_calls++;
  if (words_hold(calls->dst, GRAPH_PATTERN)) calls->host_saw_copy++;
  return BATON_SUCCESS;
}

/* Capturable: enqueues nothing (C has no driver here) and makes no call at all. */
static baton_result graph_native(const baton_native_queue* queue, void* user_data) {
  struct graph_calls* calls = user_data;
  calls->native_calls++;
  calls->native_queue_index = queue->queue_index;
  /* The host backend has no stream; CUDA and HIP hand over a stream (the capture stream in end,
   * the queue's at a replayed submission). */
  const bool host = calls->backend == BATON_BACKEND_KIND_HOST;
  if (queue->backend != calls->backend || (queue->stream == NULL) != host) calls->native_bad++;
  return BATON_SUCCESS;
}

/* Recorded nowhere (every call that names it is refused): a run fails its submission. */
static baton_result graph_native_refused(const baton_native_queue* queue, void* user_data) {
  (void)queue;
  (void)user_data;
  return BATON_ERROR_DRIVER;
}

/* Fails, recorded BATON_HOST_CALL_INFALLIBLE: reported as a warning, the submission goes on. */
static baton_result graph_host_fails(void* user_data) {
  (void)user_data;
  return BATON_ERROR_NOT_SUPPORTED;
}

/* Submits `commands` to `queue`, signalling `value`, and waits for it. */
static int submit_and_wait(baton_queue queue, baton_command_buffer commands,
                           baton_semaphore timeline, uint64_t value, char* why, size_t capacity) {
  baton_semaphore_value signal = {timeline, value};
  baton_submit_info submit = {NULL, 0, &commands, 1, &signal, 1};
  CHECK_OK(baton_queue_submit(queue, &submit, 1));
  CHECK_OK(baton_semaphore_wait(timeline, value, GRAPH_WAIT_NS));
  return 0;
}

/* The scenario on one device; *ran tells whether a graph command buffer ran there (false on a
 * GPU device whose driver has no graphs). */
static int graph_device_run(baton_instance instance, baton_physical_device physical,
                            const baton_physical_device_properties* properties, bool* ran,
                            char* why, size_t capacity) {
  const baton_backend_kind backend = properties->backend;
  const bool gpu = backend != BATON_BACKEND_KIND_HOST;
  const bool graphs = (properties->capabilities & BATON_CAPABILITY_GRAPH_COMMAND_BUFFERS) != 0;
  *ran = false;
  REQUIRE(gpu || !graphs); /* the host backend replays graph command buffers: no bit */
  REQUIRE(properties->capabilities & BATON_CAPABILITY_HOST_PINNED_MEMORY);
  baton_device device = BATON_NULL_HANDLE;
  baton_device_create_info device_info = BATON_DEVICE_CREATE_INFO_INIT;
  device_info.debug_name = "c-graph-device";
  CHECK_OK(baton_instance_create_device(instance, physical, &device_info, &device));

  baton_command_buffer_create_info info = BATON_COMMAND_BUFFER_CREATE_INFO_INIT;
  info.usage = BATON_COMMAND_BUFFER_USAGE_GRAPH;
  info.debug_name = "c-graph";
  baton_command_buffer graph = BATON_NULL_HANDLE;
  if (gpu && !graphs) {
    EXPECT_RESULT(BATON_ERROR_NOT_SUPPORTED,
                  baton_device_create_command_buffer_with_info(device, &info, &graph));
    REQUIRE(graph == BATON_NULL_HANDLE);
    CHECK_OK(baton_device_destroy(device));
    return 0;
  }

  baton_queue queue = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_get_queue(device, 0, &queue));
  baton_semaphore timeline = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_semaphore(instance, NULL, &timeline));
  /* Host-pinned, both mapped: the host clears them between submissions, so each submission's
   * fill and copy are seen to run again. */
  baton_buffer_create_info buffer_info = BATON_BUFFER_CREATE_INFO_INIT;
  buffer_info.size = GRAPH_BYTES;
  buffer_info.memory = BATON_MEMORY_KIND_HOST_PINNED;
  baton_buffer src = BATON_NULL_HANDLE, dst = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_buffer(device, &buffer_info, &src));
  CHECK_OK(baton_device_create_buffer(device, &buffer_info, &dst));
  void* src_mapped = NULL;
  void* dst_mapped = NULL;
  CHECK_OK(baton_buffer_map(src, &src_mapped));
  CHECK_OK(baton_buffer_map(dst, &dst_mapped));
  uint32_t* src_words = src_mapped;
  uint32_t* dst_words = dst_mapped;

  /* Fill, copy, a host call that checks the copy, a capturable native callback. */
  struct graph_calls calls;
  memset(&calls, 0, sizeof calls);
  calls.backend = backend;
  calls.dst = dst_words;
  CHECK_OK(baton_device_create_command_buffer_with_info(device, &info, &graph));
  REQUIRE(graph != BATON_NULL_HANDLE);
  CHECK_OK(baton_command_buffer_begin(graph));
  CHECK_OK(baton_command_buffer_fill_buffer(graph, src, 0, GRAPH_BYTES, GRAPH_PATTERN));
  CHECK_OK(baton_command_buffer_copy_buffer(graph, src, 0, dst, 0, GRAPH_BYTES));
  CHECK_OK(baton_command_buffer_host_call(graph, graph_host_call, &calls));
  /* Refused in a graph command buffer, recording nothing: an uncapturable native callback
   * (either call), an unknown flag bit. */
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_native(graph, graph_native_refused, NULL));
  REQUIRE(strstr(baton_last_error_message(), "'c-graph'") != NULL);
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_native_flags(graph, graph_native_refused, NULL, 0));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_native_flags(graph, graph_native_refused, NULL,
                                                  BATON_NATIVE_CAPTURABLE | (UINT32_C(1) << 1)));
  CHECK_OK(baton_command_buffer_native_flags(graph, graph_native, &calls, BATON_NATIVE_CAPTURABLE));
  CHECK_OK(baton_command_buffer_end(graph));
  /* CUDA and HIP ran the capturable callback inside end, on a capture stream; the host backend
   * runs it at each submission. */
  REQUIRE(calls.native_calls == (gpu ? 1 : 0));
  if (gpu) REQUIRE(calls.native_queue_index == BATON_CAPTURE_QUEUE_INDEX);
  REQUIRE(calls.native_bad == 0);
  REQUIRE(calls.host_calls == 0);

  /* Two submissions of the one recording. */
  for (int round = 1; round <= 2; ++round) {
    memset(src_words, 0, GRAPH_BYTES);
    memset(dst_words, 0, GRAPH_BYTES);
    int line = submit_and_wait(queue, graph, timeline, (uint64_t)round, why, capacity);
    if (line) return line;
    REQUIRE(words_hold(src_words, GRAPH_PATTERN));
    REQUIRE(words_hold(dst_words, GRAPH_PATTERN));
    REQUIRE(calls.host_calls == round);
    REQUIRE(calls.host_saw_copy == round);
    REQUIRE(calls.native_calls == (gpu ? 1 : round));
    REQUIRE(calls.native_bad == 0);
    if (!gpu) REQUIRE(calls.native_queue_index == 0); /* the queue's own index */
  }

  /* An unknown usage creates nothing. */
  baton_command_buffer_create_info bad = BATON_COMMAND_BUFFER_CREATE_INFO_INIT;
  bad.usage = (baton_command_buffer_usage)2;
  baton_command_buffer none = BATON_NULL_HANDLE;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_device_create_command_buffer_with_info(device, &bad, &none));
  REQUIRE(none == BATON_NULL_HANDLE);
  REQUIRE(strstr(baton_last_error_message(), "usage") != NULL);
  bad.usage = BATON_COMMAND_BUFFER_USAGE_MAX_ENUM;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_device_create_command_buffer_with_info(device, &bad, &none));
  REQUIRE(none == BATON_NULL_HANDLE);

  /* A null create-info is the defaults: a replayed command buffer, where a native callback needs
   * no flag and a capturable one runs at every submission too, on the queue's stream. */
  struct graph_calls replay_calls;
  memset(&replay_calls, 0, sizeof replay_calls);
  replay_calls.backend = backend;
  replay_calls.dst = dst_words;
  baton_command_buffer replay = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_command_buffer_with_info(device, NULL, &replay));
  CHECK_OK(baton_command_buffer_begin(replay));
  CHECK_OK(baton_command_buffer_native(replay, graph_native, &replay_calls));
  CHECK_OK(baton_command_buffer_native_flags(replay, graph_native, &replay_calls,
                                             BATON_NATIVE_CAPTURABLE));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_native_flags(replay, graph_native, &replay_calls, 1u << 4));
  /* An infallible host call's error does not fail the submission (submit_and_wait checks that its
   * signal is reached); an unknown host-call flag is refused. */
  CHECK_OK(baton_command_buffer_host_call_flags(replay, graph_host_fails, NULL,
                                                BATON_HOST_CALL_INFALLIBLE));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_host_call_flags(replay, graph_host_fails, NULL, 1u << 3));
  CHECK_OK(baton_command_buffer_end(replay));
  REQUIRE(replay_calls.native_calls == 0);
  int line = submit_and_wait(queue, replay, timeline, 3, why, capacity);
  if (line) return line;
  REQUIRE(replay_calls.native_calls == 2);
  REQUIRE(replay_calls.native_bad == 0);
  REQUIRE(replay_calls.native_queue_index == 0);
  REQUIRE(calls.native_calls == (gpu ? 1 : 2)); /* the graph's callback did not run again */

  CHECK_OK(baton_command_buffer_destroy(replay));
  CHECK_OK(baton_command_buffer_destroy(graph));
  CHECK_OK(baton_buffer_destroy(src));
  CHECK_OK(baton_buffer_destroy(dst));
  CHECK_OK(baton_semaphore_destroy(timeline));
  CHECK_OK(baton_device_destroy(device));
  *ran = true;
  return 0;
}

int c_api_graph_flow_every_backend(uint32_t* backends, char* why, size_t capacity) {
  *backends = 0;
  baton_instance instance = BATON_NULL_HANDLE;
  CHECK_OK(baton_create_instance(NULL, &instance)); /* every backend */
  baton_physical_device physical[16];
  uint32_t count = sizeof physical / sizeof physical[0];
  baton_result r = baton_instance_enumerate_physical_devices(instance, &count, physical);
  REQUIRE(r == BATON_SUCCESS || r == BATON_NOT_READY);
  for (uint32_t i = 0; i < count; ++i) {
    baton_physical_device_properties properties;
    CHECK_OK(baton_physical_device_get_properties(physical[i], &properties));
    bool ran = false;
    int line = graph_device_run(instance, physical[i], &properties, &ran, why, capacity);
    if (line) {
      /* Say which device failed, after what the check wrote. */
      size_t used = strlen(why);
      if (used < capacity)
        snprintf(why + used, capacity - used, " [on %s device %u, %s]",
                 baton_backend_name(properties.backend), properties.ordinal, properties.name);
      return line;
    }
    if (ran) *backends |= BATON_BACKEND_BIT(properties.backend);
  }
  REQUIRE(*backends & BATON_BACKEND_BIT(BATON_BACKEND_KIND_HOST));
  CHECK_OK(baton_instance_destroy(instance));
  return 0;
}
