/* The collectives of the C API driven from C (compiled as C11 with -Wall -Wextra -pedantic
 * -Werror, as c_api_flow.c): each c_api_collectives_flow_* function runs one scenario and returns
 * 0, the failing line with its explanation in `why`, or C_API_COLLECTIVES_SKIPPED with the reason
 * in `why`. tests/c_api/c_api_test.cpp runs them; tests/c_api/meson.build also runs them on the
 * fake CUDA driver and its NCCL emulation (two devices). */
#include "c_api_collectives_flow.h"

#include <baton/baton.h>
#include <stdio.h>
#include <string.h>

#include "c_check.h"

/* A finite limit for every wait that must succeed: a hang becomes a failure. */
#define FLOW_WAIT_NS UINT64_C(60000000000)
/* The communicators' timeout: a stuck collective fails them well before FLOW_WAIT_NS. */
#define FLOW_COLLECTIVE_TIMEOUT_NS UINT64_C(20000000000)
/* The all-reduce: 1024 float32 elements. */
#define FLOW_COUNT 1024u
#define FLOW_BYTES (FLOW_COUNT * 4u)

baton_communicator_create_info c_api_default_communicator_create_info(void) {
  baton_communicator_create_info info = BATON_COMMUNICATOR_CREATE_INFO_INIT;
  return info;
}

baton_communicator_group_create_info c_api_default_communicator_group_create_info(void) {
  baton_communicator_group_create_info info = BATON_COMMUNICATOR_GROUP_CREATE_INFO_INIT;
  return info;
}

static uint32_t float_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

/* ---- names ------------------------------------------------------------------------------------
 */

int c_api_collectives_flow_names(char* why, size_t capacity) {
  static const struct {
    baton_element_type type;
    uint64_t size;
    const char* name;
  } types[] = {
      {BATON_ELEMENT_TYPE_INT8, 1, "int8"},       {BATON_ELEMENT_TYPE_UINT8, 1, "uint8"},
      {BATON_ELEMENT_TYPE_INT32, 4, "int32"},     {BATON_ELEMENT_TYPE_UINT32, 4, "uint32"},
      {BATON_ELEMENT_TYPE_INT64, 8, "int64"},     {BATON_ELEMENT_TYPE_UINT64, 8, "uint64"},
      {BATON_ELEMENT_TYPE_FLOAT16, 2, "float16"}, {BATON_ELEMENT_TYPE_FLOAT32, 4, "float32"},
      {BATON_ELEMENT_TYPE_FLOAT64, 8, "float64"}, {BATON_ELEMENT_TYPE_BFLOAT16, 2, "bfloat16"},
      {BATON_ELEMENT_TYPE_FLOAT8_E4M3, 1, NULL},  {BATON_ELEMENT_TYPE_FLOAT8_E5M2, 1, NULL},
  };
  REQUIRE(sizeof types / sizeof types[0] == BATON_ELEMENT_TYPE_COUNT);
  for (size_t i = 0; i < BATON_ELEMENT_TYPE_COUNT; ++i) {
    REQUIRE(baton_element_size(types[i].type) == types[i].size);
    const char* name = baton_element_type_name(types[i].type);
    REQUIRE(name != NULL && name[0] != '\0' && strcmp(name, "?") != 0);
    if (types[i].name != NULL && strcmp(name, types[i].name) != 0)
      return fail_at(why, capacity, __FILE__, __LINE__, "element type %d is named \"%s\", not %s",
                     (int)types[i].type, name, types[i].name);
  }
  REQUIRE(baton_element_size((baton_element_type)BATON_ELEMENT_TYPE_COUNT) == 0);
  REQUIRE(strcmp(baton_element_type_name((baton_element_type)99), "?") == 0);
  REQUIRE(strcmp(baton_reduce_op_name(BATON_REDUCE_OP_SUM), "sum") == 0);
  REQUIRE(strcmp(baton_reduce_op_name(BATON_REDUCE_OP_AVG), "avg") == 0);
  for (uint32_t op = 0; op < BATON_REDUCE_OP_COUNT; ++op)
    REQUIRE(strcmp(baton_reduce_op_name((baton_reduce_op)op), "?") != 0);
  REQUIRE(strcmp(baton_reduce_op_name((baton_reduce_op)BATON_REDUCE_OP_COUNT), "?") == 0);
  REQUIRE(BATON_COLLECTIVE_TIMEOUT_DEFAULT_NS == UINT64_C(30000000000));
  REQUIRE(BATON_SPLIT_NO_COLOR < 0);
  REQUIRE(sizeof(baton_communicator_id) == BATON_COMMUNICATOR_ID_SIZE);
  return 0;
}

/* ---- the host backend: no collectives ---------------------------------------------------------
 */

int c_api_collectives_flow_host(char* why, size_t capacity) {
  baton_instance_create_info info = BATON_INSTANCE_CREATE_INFO_INIT;
  info.backend_mask = BATON_BACKEND_BIT(BATON_BACKEND_KIND_HOST);
  baton_instance instance = BATON_NULL_HANDLE;
  CHECK_OK(baton_create_instance(&info, &instance));

  /* The host backend reports no collective library, with a reason; that is not an error. */
  baton_collective_support support;
  memset(&support, 0x5a, sizeof support);
  CHECK_OK(baton_instance_get_collective_support(instance, BATON_BACKEND_KIND_HOST, &support));
  REQUIRE(support.backend == BATON_BACKEND_KIND_HOST);
  REQUIRE(!support.available);
  REQUIRE(support.version == 0);
  REQUIRE(memchr(support.reason, '\0', sizeof support.reason) != NULL);
  REQUIRE(support.reason[0] != '\0');
  REQUIRE(memchr(support.library, '\0', sizeof support.library) != NULL);
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_get_collective_support(instance, BATON_BACKEND_KIND_CUDA, NULL));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_get_collective_support(instance, (baton_backend_kind)7, &support));
  EXPECT_RESULT(
      BATON_ERROR_INVALID_HANDLE,
      baton_instance_get_collective_support(BATON_NULL_HANDLE, BATON_BACKEND_KIND_HOST, &support));
  baton_communicator_id id;
  REQUIRE(baton_is_error(
      baton_instance_create_communicator_id(instance, BATON_BACKEND_KIND_HOST, &id)));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_instance_create_communicator_id(
                                                BATON_NULL_HANDLE, BATON_BACKEND_KIND_CUDA, &id));

  /* A host-backend device makes no communicator, alone or in a group. */
  uint32_t count = 1;
  baton_physical_device physical = BATON_NULL_HANDLE;
  baton_result r = baton_instance_enumerate_physical_devices(instance, &count, &physical);
  REQUIRE(r == BATON_SUCCESS || r == BATON_NOT_READY);
  baton_device device = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_device(instance, physical, NULL, &device));
  baton_communicator_create_info create = BATON_COMMUNICATOR_CREATE_INFO_INIT;
  create.rank = 0;
  create.rank_count = 1;
  create.debug_name = "host";
  baton_communicator communicator = BATON_NULL_HANDLE;
  EXPECT_RESULT(BATON_ERROR_NOT_SUPPORTED,
                baton_device_create_communicator(device, &create, &communicator));
  REQUIRE(communicator == BATON_NULL_HANDLE);
  baton_communicator_group_create_info group = BATON_COMMUNICATOR_GROUP_CREATE_INFO_INIT;
  EXPECT_RESULT(BATON_ERROR_NOT_SUPPORTED,
                baton_instance_create_communicators(instance, &device, 1, &group, &communicator));
  REQUIRE(communicator == BATON_NULL_HANDLE);
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_device_create_communicator(BATON_NULL_HANDLE, &create, &communicator));
  EXPECT_RESULT(
      BATON_ERROR_INVALID_HANDLE,
      baton_instance_create_communicators(BATON_NULL_HANDLE, &device, 1, NULL, &communicator));

  /* Null communicators everywhere. */
  const baton_communicator none = BATON_NULL_HANDLE;
  uint32_t value = 0;
  baton_device owner = BATON_NULL_HANDLE;
  baton_communicator_state state = BATON_COMMUNICATOR_STATE_READY;
  char reason[32];
  baton_communicator out = BATON_NULL_HANDLE;
  const uint32_t excluded[1] = {1};
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_communicator_destroy(none));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_communicator_get_rank(none, &value));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_communicator_get_rank_count(none, &value));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_communicator_get_device(none, &owner));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_communicator_get_state(none, &state));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_communicator_get_failure_reason(none, reason, sizeof reason));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_communicator_split(none, 0, 0, &out));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_communicator_shrink(none, excluded, 1, &out));

  /* Collective commands with a null communicator, and with a null command buffer. */
  baton_command_buffer commands = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_command_buffer(device, &commands));
  baton_buffer_create_info buffer_info = BATON_BUFFER_CREATE_INFO_INIT;
  buffer_info.size = 64;
  baton_buffer buffer = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_buffer(device, &buffer_info, &buffer));
  CHECK_OK(baton_command_buffer_begin(commands));
  const baton_element_type f32 = BATON_ELEMENT_TYPE_FLOAT32;
  const baton_reduce_op sum = BATON_REDUCE_OP_SUM;
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_command_buffer_all_reduce(commands, none, buffer, 0, buffer, 0, 4, f32, sum));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_command_buffer_broadcast(commands, none, buffer, 0, buffer, 0, 4, f32, 0));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_command_buffer_reduce(commands, none, buffer, 0, buffer, 0, 4, f32, sum, 0));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_command_buffer_all_gather(commands, none, buffer, 0, buffer, 0, 4, f32));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_command_buffer_reduce_scatter(
                                                commands, none, buffer, 0, buffer, 0, 4, f32, sum));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_command_buffer_all_to_all(commands, none, buffer, 0, buffer, 32, 4, f32));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_command_buffer_send(commands, none, buffer, 0, 4, f32, 0));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                baton_command_buffer_recv(commands, none, buffer, 0, 4, f32, 0));
  EXPECT_RESULT(
      BATON_ERROR_INVALID_HANDLE,
      baton_command_buffer_all_reduce(BATON_NULL_HANDLE, none, buffer, 0, buffer, 0, 4, f32, sum));
  /* Nothing was recorded: the command buffer ends and runs as an empty one. */
  CHECK_OK(baton_command_buffer_end(commands));

  CHECK_OK(baton_buffer_destroy(buffer));
  CHECK_OK(baton_command_buffer_destroy(commands));
  CHECK_OK(baton_device_destroy(device));
  CHECK_OK(baton_instance_destroy(instance));
  return 0;
}

/* ---- two CUDA devices: an all-reduce ----------------------------------------------------------
 */

/* What the CUDA flow made, destroyed by its caller whatever happened (the instance destroys
 * what is left). */
struct cuda_flow {
  baton_instance instance;
  baton_device devices[2];
  baton_communicator communicators[2];
  baton_semaphore done[2];
  baton_command_buffer commands[2];
  baton_buffer src[2], dst[2], readback[2];
  bool skipped;
};

/* Finds two CUDA physical devices; sets flow->skipped (with the reason in why) when there are
 * fewer. */
static int find_cuda_devices(struct cuda_flow* flow, baton_physical_device found[2], char* why,
                             size_t capacity) {
  baton_physical_device physical[32];
  uint32_t count = 32;
  baton_result r = baton_instance_enumerate_physical_devices(flow->instance, &count, physical);
  REQUIRE(r == BATON_SUCCESS || r == BATON_NOT_READY);
  uint32_t cuda = 0;
  for (uint32_t i = 0; i < count && cuda < 2; ++i) {
    baton_physical_device_properties properties;
    CHECK_OK(baton_physical_device_get_properties(physical[i], &properties));
    if (properties.backend != BATON_BACKEND_KIND_CUDA) continue;
    REQUIRE(properties.capabilities & BATON_CAPABILITY_HOST_PINNED_MEMORY);
    found[cuda++] = physical[i];
  }
  if (cuda < 2) {
    baton_backend_info backends[BATON_BACKEND_KIND_COUNT];
    uint32_t backend_count = BATON_BACKEND_KIND_COUNT;
    CHECK_OK(baton_instance_enumerate_backends(flow->instance, &backend_count, backends));
    const char* reason = "";
    for (uint32_t i = 0; i < backend_count; ++i)
      if (backends[i].kind == BATON_BACKEND_KIND_CUDA) reason = backends[i].reason;
    snprintf(why, capacity, "the all-reduce needs two CUDA devices, this machine has %u%s%s",
             (unsigned)cuda, reason[0] ? ": " : "", reason);
    flow->skipped = true;
  }
  return 0;
}

/* Bad input for the calls that make communicators, on CUDA devices (where the arguments, not the
 * backend, are what is wrong). Nothing is created by any of them. */
static int bad_creation(struct cuda_flow* flow, char* why, size_t capacity) {
  baton_communicator made[2] = {BATON_NULL_HANDLE, BATON_NULL_HANDLE};
  const baton_device twice[2] = {flow->devices[0], flow->devices[0]};
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_create_communicators(flow->instance, flow->devices, 0, NULL, made));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_create_communicators(flow->instance, NULL, 2, NULL, made));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_create_communicators(flow->instance, flow->devices, 2, NULL, NULL));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_create_communicators(flow->instance, twice, 2, NULL, made));
  REQUIRE(made[0] == BATON_NULL_HANDLE && made[1] == BATON_NULL_HANDLE);

  baton_communicator_create_info info = BATON_COMMUNICATOR_CREATE_INFO_INIT;
  CHECK_OK(
      baton_instance_create_communicator_id(flow->instance, BATON_BACKEND_KIND_CUDA, &info.id));
  info.rank_count = 0; /* the default */
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_device_create_communicator(flow->devices[0], &info, made));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_device_create_communicator(flow->devices[0], NULL, made));
  info.rank = 2;
  info.rank_count = 2;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_device_create_communicator(flow->devices[0], &info, made));
  REQUIRE(made[0] == BATON_NULL_HANDLE);
  return 0;
}

/* Bad collective commands on real communicators: each is rejected and records nothing. */
static int bad_commands(struct cuda_flow* flow, char* why, size_t capacity) {
  baton_command_buffer bad = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_command_buffer(flow->devices[0], &bad));
  const baton_communicator comm = flow->communicators[0];
  const baton_buffer src = flow->src[0], dst = flow->dst[0];
  const baton_element_type f32 = BATON_ELEMENT_TYPE_FLOAT32;
  const baton_reduce_op sum = BATON_REDUCE_OP_SUM;
  EXPECT_RESULT(BATON_ERROR_INVALID_STATE,
                baton_command_buffer_all_reduce(bad, comm, src, 0, dst, 0, 4, f32, sum));
  CHECK_OK(baton_command_buffer_begin(bad));
  /* count 0 */
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_all_reduce(bad, comm, src, 0, dst, 0, 0, f32, sum));
  /* root and peer out of range (two ranks: 0 and 1) */
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_broadcast(bad, comm, src, 0, dst, 0, 4, f32, 2));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_reduce(bad, comm, src, 0, dst, 0, 4, f32, sum, UINT32_MAX));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_send(bad, comm, src, 0, 4, f32, 2));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_recv(bad, comm, dst, 0, 4, f32, 7));
  /* values that are not a type or an op */
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_all_reduce(bad, comm, src, 0, dst, 0, 4,
                                                (baton_element_type)BATON_ELEMENT_TYPE_COUNT, sum));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_all_reduce(bad, comm, src, 0, dst, 0, 4, f32,
                                                (baton_reduce_op)BATON_REDUCE_OP_COUNT));
  /* ranges outside the buffers: 2048 floats in 4096 bytes; all-gather's dst holds 2 * count */
  EXPECT_RESULT(
      BATON_ERROR_INVALID_ARGUMENT,
      baton_command_buffer_all_reduce(bad, comm, src, 0, dst, 0, 2 * FLOW_COUNT, f32, sum));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_all_gather(bad, comm, src, 0, dst, 0, FLOW_COUNT, f32));
  /* overlapping, not in place */
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_command_buffer_all_reduce(bad, comm, src, 0, src, 4, 4, f32, sum));
  /* another device's communicator and buffer */
  EXPECT_RESULT(
      BATON_ERROR_DEVICE_MISMATCH,
      baton_command_buffer_all_reduce(bad, flow->communicators[1], src, 0, dst, 0, 4, f32, sum));
  EXPECT_RESULT(BATON_ERROR_DEVICE_MISMATCH,
                baton_command_buffer_all_reduce(bad, comm, flow->src[1], 0, dst, 0, 4, f32, sum));
  EXPECT_RESULT(
      BATON_ERROR_INVALID_HANDLE,
      baton_command_buffer_all_reduce(bad, BATON_NULL_HANDLE, src, 0, dst, 0, 4, f32, sum));
  CHECK_OK(baton_command_buffer_end(bad));
  CHECK_OK(baton_command_buffer_destroy(bad));
  return 0;
}

static int cuda_flow_run(struct cuda_flow* flow, char* why, size_t capacity) {
  baton_instance_create_info info = BATON_INSTANCE_CREATE_INFO_INIT;
  info.backend_mask =
      BATON_BACKEND_BIT(BATON_BACKEND_KIND_HOST) | BATON_BACKEND_BIT(BATON_BACKEND_KIND_CUDA);
  CHECK_OK(baton_create_instance(&info, &flow->instance));

  /* (1) Is there a collective library for CUDA? */
  baton_collective_support support;
  CHECK_OK(
      baton_instance_get_collective_support(flow->instance, BATON_BACKEND_KIND_CUDA, &support));
  REQUIRE(support.backend == BATON_BACKEND_KIND_CUDA);
  if (!support.available) {
    REQUIRE(support.reason[0] != '\0');
    snprintf(why, capacity, "no collective library for CUDA: %s", support.reason);
    flow->skipped = true;
    return 0;
  }
  REQUIRE(support.reason[0] == '\0');
  REQUIRE(support.library[0] != '\0');
  REQUIRE(support.version > 0);

  baton_physical_device physical[2];
  int line = find_cuda_devices(flow, physical, why, capacity);
  if (line != 0 || flow->skipped) return line;

  /* (2) Two devices, one rank each. */
  for (int r = 0; r < 2; ++r) {
    baton_device_create_info device_info = BATON_DEVICE_CREATE_INFO_INIT;
    device_info.debug_name = r == 0 ? "rank0" : "rank1";
    CHECK_OK(
        baton_instance_create_device(flow->instance, physical[r], &device_info, &flow->devices[r]));
    baton_buffer_create_info buffer_info = BATON_BUFFER_CREATE_INFO_INIT;
    buffer_info.size = FLOW_BYTES;
    CHECK_OK(baton_device_create_buffer(flow->devices[r], &buffer_info, &flow->src[r]));
    CHECK_OK(baton_device_create_buffer(flow->devices[r], &buffer_info, &flow->dst[r]));
    buffer_info.memory = BATON_MEMORY_KIND_HOST_PINNED;
    CHECK_OK(baton_device_create_buffer(flow->devices[r], &buffer_info, &flow->readback[r]));
    CHECK_OK(baton_instance_create_semaphore(flow->instance, NULL, &flow->done[r]));
    CHECK_OK(baton_device_create_command_buffer(flow->devices[r], &flow->commands[r]));
  }

  /* (3) Bad input: creation. */
  line = bad_creation(flow, why, capacity);
  if (line != 0) return line;

  /* The group, made at once; rank i on devices[i]. */
  baton_communicator_group_create_info group = BATON_COMMUNICATOR_GROUP_CREATE_INFO_INIT;
  group.timeout_ns = FLOW_COLLECTIVE_TIMEOUT_NS;
  group.debug_name = "c-flow";
  CHECK_OK(baton_instance_create_communicators(flow->instance, flow->devices, 2, &group,
                                               flow->communicators));
  for (uint32_t r = 0; r < 2; ++r) {
    REQUIRE(flow->communicators[r] != BATON_NULL_HANDLE);
    uint32_t rank = 99, ranks = 0;
    CHECK_OK(baton_communicator_get_rank(flow->communicators[r], &rank));
    CHECK_OK(baton_communicator_get_rank_count(flow->communicators[r], &ranks));
    REQUIRE(rank == r && ranks == 2);
    baton_device owner = BATON_NULL_HANDLE;
    CHECK_OK(baton_communicator_get_device(flow->communicators[r], &owner));
    REQUIRE(owner == flow->devices[r]);
    EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                  baton_communicator_get_rank(flow->communicators[r], NULL));
    EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                  baton_communicator_get_state(flow->communicators[r], NULL));
  }

  /* (3) Bad input: commands. */
  line = bad_commands(flow, why, capacity);
  if (line != 0) return line;

  /* The all-reduce: rank r's src holds r + 1 everywhere; dst = the sum, copied to host-pinned
   * memory; each queue signals its semaphore when that is done. */
  for (uint32_t r = 0; r < 2; ++r) {
    baton_command_buffer commands = flow->commands[r];
    CHECK_OK(baton_command_buffer_begin(commands));
    CHECK_OK(baton_command_buffer_fill_buffer(commands, flow->src[r], 0, FLOW_BYTES,
                                              float_bits((float)(r + 1))));
    CHECK_OK(
        baton_command_buffer_fill_buffer(commands, flow->dst[r], 0, FLOW_BYTES, float_bits(-1.0f)));
    CHECK_OK(baton_command_buffer_all_reduce(commands, flow->communicators[r], flow->src[r], 0,
                                             flow->dst[r], 0, FLOW_COUNT,
                                             BATON_ELEMENT_TYPE_FLOAT32, BATON_REDUCE_OP_SUM));
    CHECK_OK(baton_command_buffer_copy_buffer(commands, flow->dst[r], 0, flow->readback[r], 0,
                                              FLOW_BYTES));
    CHECK_OK(baton_command_buffer_end(commands));
  }
  for (uint32_t r = 0; r < 2; ++r) {
    baton_queue queue = BATON_NULL_HANDLE;
    CHECK_OK(baton_device_get_queue(flow->devices[r], 0, &queue));
    const baton_semaphore_value signal = {flow->done[r], 1};
    const baton_submit_info submit = {NULL, 0, &flow->commands[r], 1, &signal, 1};
    CHECK_OK(baton_queue_submit(queue, &submit, 1));
  }
  const baton_semaphore_value both[2] = {{flow->done[0], 1}, {flow->done[1], 1}};
  CHECK_OK(
      baton_instance_wait_semaphores(flow->instance, both, 2, BATON_WAIT_MODE_ALL, FLOW_WAIT_NS));
  for (uint32_t r = 0; r < 2; ++r) {
    void* mapped = NULL;
    CHECK_OK(baton_buffer_map(flow->readback[r], &mapped));
    REQUIRE(mapped != NULL);
    const float* values = (const float*)mapped;
    for (uint32_t i = 0; i < FLOW_COUNT; ++i)
      if (values[i] != 3.0f)
        return fail_at(why, capacity, __FILE__, __LINE__,
                       "rank %u: element %u of the all-reduce is %g, expected 3", (unsigned)r,
                       (unsigned)i, (double)values[i]);
  }

  /* (4) Both are ready, with no failure reason; then destroyed. */
  for (uint32_t r = 0; r < 2; ++r) {
    baton_communicator_state state = BATON_COMMUNICATOR_STATE_FAILED;
    CHECK_OK(baton_communicator_get_state(flow->communicators[r], &state));
    REQUIRE(state == BATON_COMMUNICATOR_STATE_READY);
    char reason[64] = "x";
    CHECK_OK(baton_communicator_get_failure_reason(flow->communicators[r], reason, sizeof reason));
    REQUIRE(reason[0] == '\0');
    EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                  baton_communicator_get_failure_reason(flow->communicators[r], NULL, 8));
    EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                  baton_communicator_get_failure_reason(flow->communicators[r], reason, 0));
  }
  for (uint32_t r = 0; r < 2; ++r) {
    CHECK_OK(baton_communicator_destroy(flow->communicators[r]));
    uint32_t rank = 0;
    EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE,
                  baton_communicator_get_rank(flow->communicators[r], &rank));
    EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_communicator_destroy(flow->communicators[r]));
    flow->communicators[r] = BATON_NULL_HANDLE;
  }
  return 0;
}

int c_api_collectives_flow_cuda(char* why, size_t capacity) {
  struct cuda_flow flow;
  memset(&flow, 0, sizeof flow);
  int line = cuda_flow_run(&flow, why, capacity);
  /* Whatever happened: the instance destroys the devices, the communicators and the rest. After
   * a failure, children are still alive (BATON_ERROR_OBJECT_IN_USE); after a success only the
   * semaphores, command buffers and buffers are, and they go explicitly first. */
  if (flow.instance != BATON_NULL_HANDLE) {
    if (line == 0 && !flow.skipped) {
      for (int r = 0; r < 2; ++r) {
        CHECK_OK(baton_semaphore_destroy(flow.done[r]));
        CHECK_OK(baton_command_buffer_destroy(flow.commands[r]));
        CHECK_OK(baton_buffer_destroy(flow.src[r]));
        CHECK_OK(baton_buffer_destroy(flow.dst[r]));
        CHECK_OK(baton_buffer_destroy(flow.readback[r]));
        CHECK_OK(baton_device_destroy(flow.devices[r]));
      }
      CHECK_OK(baton_instance_destroy(flow.instance));
    } else {
      (void)baton_instance_destroy(flow.instance);
    }
  }
  if (line != 0) return line;
  return flow.skipped ? C_API_COLLECTIVES_SKIPPED : 0;
}

/* ---- one CUDA device: a one-rank communicator from an id ------------------------------------- */

static int single_rank_run(baton_instance* instance, char* why, size_t capacity, bool* skipped) {
  baton_instance_create_info info = BATON_INSTANCE_CREATE_INFO_INIT;
  info.backend_mask =
      BATON_BACKEND_BIT(BATON_BACKEND_KIND_HOST) | BATON_BACKEND_BIT(BATON_BACKEND_KIND_CUDA);
  CHECK_OK(baton_create_instance(&info, instance));
  baton_collective_support support;
  CHECK_OK(baton_instance_get_collective_support(*instance, BATON_BACKEND_KIND_CUDA, &support));
  if (!support.available) {
    snprintf(why, capacity, "no collective library for CUDA: %s", support.reason);
    *skipped = true;
    return 0;
  }
  baton_physical_device physical[32];
  uint32_t count = 32;
  baton_result r = baton_instance_enumerate_physical_devices(*instance, &count, physical);
  REQUIRE(r == BATON_SUCCESS || r == BATON_NOT_READY);
  baton_physical_device cuda = BATON_NULL_HANDLE;
  for (uint32_t i = 0; i < count && cuda == BATON_NULL_HANDLE; ++i) {
    baton_physical_device_properties properties;
    CHECK_OK(baton_physical_device_get_properties(physical[i], &properties));
    if (properties.backend == BATON_BACKEND_KIND_CUDA) cuda = physical[i];
  }
  if (cuda == BATON_NULL_HANDLE) {
    snprintf(why, capacity, "no CUDA device");
    *skipped = true;
    return 0;
  }
  baton_device device = BATON_NULL_HANDLE;
  CHECK_OK(baton_instance_create_device(*instance, cuda, NULL, &device));

  /* An id (plain bytes, not all zero: it names where rank 0 listens), then rank 0 of 1. */
  baton_communicator_create_info create = BATON_COMMUNICATOR_CREATE_INFO_INIT;
  CHECK_OK(baton_instance_create_communicator_id(*instance, BATON_BACKEND_KIND_CUDA, &create.id));
  bool nonzero = false;
  for (size_t i = 0; i < BATON_COMMUNICATOR_ID_SIZE; ++i) nonzero |= create.id.bytes[i] != 0;
  REQUIRE(nonzero);
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                baton_instance_create_communicator_id(*instance, BATON_BACKEND_KIND_CUDA, NULL));
  create.rank = 0;
  create.rank_count = 1;
  create.timeout_ns = FLOW_COLLECTIVE_TIMEOUT_NS;
  create.debug_name = "solo";
  baton_communicator solo = BATON_NULL_HANDLE;
  CHECK_OK(baton_device_create_communicator(device, &create, &solo));
  uint32_t rank = 99, ranks = 0;
  CHECK_OK(baton_communicator_get_rank(solo, &rank));
  CHECK_OK(baton_communicator_get_rank_count(solo, &ranks));
  REQUIRE(rank == 0 && ranks == 1);
  baton_communicator_state state = BATON_COMMUNICATOR_STATE_FAILED;
  CHECK_OK(baton_communicator_get_state(solo, &state));
  REQUIRE(state == BATON_COMMUNICATOR_STATE_READY);

  /* What NCCL (2.24 and later) refuses at the call, refused when recorded with the same result as
   * the C++ API: the average of float8 on a communicator of one rank. The recording stays usable.
   */
  if (support.version >= 22400) {
    baton_buffer_create_info bytes = BATON_BUFFER_CREATE_INFO_INIT;
    bytes.size = 64;
    baton_buffer eight = BATON_NULL_HANDLE;
    CHECK_OK(baton_device_create_buffer(device, &bytes, &eight));
    baton_command_buffer cb = BATON_NULL_HANDLE;
    CHECK_OK(baton_device_create_command_buffer(device, &cb));
    CHECK_OK(baton_command_buffer_begin(cb));
    EXPECT_RESULT(
        BATON_ERROR_NOT_SUPPORTED,
        baton_command_buffer_all_reduce(cb, solo, eight, 0, eight, 0, 64,
                                        BATON_ELEMENT_TYPE_FLOAT8_E4M3, BATON_REDUCE_OP_AVG));
    const char* message = baton_last_error_message();
    REQUIRE(strstr(message, "allReduce avg of float8e4m3") != NULL);
    REQUIRE(strstr(message, "NCCL") != NULL);
    CHECK_OK(baton_command_buffer_all_reduce(cb, solo, eight, 0, eight, 0, 64,
                                             BATON_ELEMENT_TYPE_FLOAT8_E4M3, BATON_REDUCE_OP_SUM));
    CHECK_OK(baton_command_buffer_end(cb));
    CHECK_OK(baton_command_buffer_destroy(cb));
    CHECK_OK(baton_buffer_destroy(eight));
  }

  /* Split: without a color this rank joins nothing; with one it is rank 0 of a new group of 1. */
  baton_communicator part = BATON_NULL_HANDLE;
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_communicator_split(solo, 0, 0, NULL));
  EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_communicator_split(solo, -5, 0, &part));
  CHECK_OK(baton_communicator_split(solo, BATON_SPLIT_NO_COLOR, 0, &part));
  REQUIRE(part == BATON_NULL_HANDLE);
  CHECK_OK(baton_communicator_split(solo, 3, 0, &part));
  REQUIRE(part != BATON_NULL_HANDLE && part != solo);
  CHECK_OK(baton_communicator_get_rank_count(part, &ranks));
  REQUIRE(ranks == 1);
  baton_device owner = BATON_NULL_HANDLE;
  CHECK_OK(baton_communicator_get_device(part, &owner));
  REQUIRE(owner == device);

  /* Shrink: every rank (this one) excluded, a rank out of range, a null list with a count. */
  if (support.can_shrink) {
    const uint32_t self = 0, outside = 1;
    baton_communicator shrunk = BATON_NULL_HANDLE;
    EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_communicator_shrink(solo, &self, 1, &shrunk));
    EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT,
                  baton_communicator_shrink(solo, &outside, 1, &shrunk));
    EXPECT_RESULT(BATON_ERROR_INVALID_ARGUMENT, baton_communicator_shrink(solo, NULL, 1, &shrunk));
    REQUIRE(shrunk == BATON_NULL_HANDLE);
  }

  CHECK_OK(baton_communicator_destroy(part));
  CHECK_OK(baton_communicator_destroy(solo));
  EXPECT_RESULT(BATON_ERROR_INVALID_HANDLE, baton_communicator_get_state(solo, &state));
  CHECK_OK(baton_device_destroy(device));
  return 0;
}

int c_api_collectives_flow_cuda_single_rank(char* why, size_t capacity) {
  baton_instance instance = BATON_NULL_HANDLE;
  bool skipped = false;
  int line = single_rank_run(&instance, why, capacity, &skipped);
  if (instance != BATON_NULL_HANDLE) {
    baton_result destroyed = baton_instance_destroy(instance);
    if (line == 0 && !skipped) CHECK_OK(destroyed);
  }
  if (line != 0) return line;
  return skipped ? C_API_COLLECTIVES_SKIPPED : 0;
}
