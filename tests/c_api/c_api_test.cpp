// The C API (baton/baton.h): the C scenarios of c_api_flow.c, the layouts the C layer hands to
// C++ in place, and bad input given to the C and the C++ function side by side: the same result
// and the same message (the C layer adds no semantics of its own).
#include <baton/baton.h>
#include <gtest/gtest.h>

#include <baton/baton.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "c_api_collectives_flow.h"
#include "c_api_flow.h"
#include "c_api_graph_flow.h"

namespace {

// ---- the C scenarios ----------------------------------------------------------------------------

#define RUN_C_FLOW(name)                                     \
  TEST(CApiFlow, name) {                                     \
    char why[2048] = "";                                     \
    EXPECT_EQ(c_api_flow_##name(why, sizeof why), 0) << why; \
  }

RUN_C_FLOW(enumerate)
RUN_C_FLOW(semaphores)
RUN_C_FLOW(shared_semaphores)
RUN_C_FLOW(submit)
RUN_C_FLOW(buffers)
RUN_C_FLOW(bad_input)

// Whether BATON_TEST_REQUIRE_BACKENDS (names, comma-separated) names `backend` ("cuda", "hip"),
// as on the fake driver's registrations (tests/c_api/meson.build): there a flow that would skip
// that backend fails instead.
bool backendRequired(const char* backend) {
  const char* list = std::getenv("BATON_TEST_REQUIRE_BACKENDS");
  return list && (std::string(",") + list + ",").find(std::string(",") + backend + ",") !=
                     std::string::npos;
}
bool cudaRequired() { return backendRequired("cuda"); }

// Graph command buffers from C (c_api_graph_flow.c) on every backend that loads here; a backend
// that BATON_TEST_REQUIRE_BACKENDS names must be among them.
TEST(CApiGraphFlow, EveryBackend) {
  char why[2048] = "";
  uint32_t backends = 0;
  EXPECT_EQ(c_api_graph_flow_every_backend(&backends, why, sizeof why), 0) << why;
  for (uint32_t k = 0; k < BATON_BACKEND_KIND_COUNT; ++k) {
    const char* name = baton_backend_name(static_cast<baton_backend_kind>(k));
    if (backendRequired(name)) {
      EXPECT_NE(backends & BATON_BACKEND_BIT(k), 0u)
          << "no graph command buffer ran on " << name
          << " (required here by BATON_TEST_REQUIRE_BACKENDS)";
    }
  }
}

// The collectives' C scenarios (c_api_collectives_flow.c); those that need CUDA and a collective
// library skip, saying why, where there are none.
#define RUN_C_COLLECTIVES_FLOW(name)                                                        \
  TEST(CApiCollectivesFlow, name) {                                                         \
    char why[2048] = "";                                                                    \
    const int line = c_api_collectives_flow_##name(why, sizeof why);                        \
    if (line == C_API_COLLECTIVES_SKIPPED) {                                                \
      if (cudaRequired())                                                                   \
        FAIL() << why << "\n(required here by BATON_TEST_REQUIRE_BACKENDS: must not skip)"; \
      GTEST_SKIP() << why;                                                                  \
    }                                                                                       \
    EXPECT_EQ(line, 0) << why;                                                              \
  }

RUN_C_COLLECTIVES_FLOW(names)
RUN_C_COLLECTIVES_FLOW(host)
RUN_C_COLLECTIVES_FLOW(cuda)
RUN_C_COLLECTIVES_FLOW(cuda_single_rank)

// ---- layouts ------------------------------------------------------------------------------------

// c_api.cpp hands baton_submit_info arrays to Queue::submit as SubmitInfo arrays; it checks the
// sizes and offsets at compile time, but a Span's members are private: check their order here.
TEST(CApiLayout, SubmitInfoIsPointerThenCount) {
  baton_semaphore_value values[3] = {};
  baton_command_buffer commands[2] = {};
  baton_submit_info c = {values, 3, commands, 2, values + 1, 1};
  baton::SubmitInfo cpp;
  static_assert(sizeof c == sizeof cpp);
  std::memcpy(static_cast<void*>(&cpp), &c, sizeof c);
  EXPECT_EQ(static_cast<const void*>(cpp.waits.data()), static_cast<const void*>(values));
  EXPECT_EQ(cpp.waits.size(), 3u);
  EXPECT_EQ(static_cast<const void*>(cpp.commandBuffers.data()),
            static_cast<const void*>(commands));
  EXPECT_EQ(cpp.commandBuffers.size(), 2u);
  EXPECT_EQ(static_cast<const void*>(cpp.signals.data()), static_cast<const void*>(values + 1));
  EXPECT_EQ(cpp.signals.size(), 1u);
}

TEST(CApiLayout, HandlesHoldTheCppValue) {
  baton::Semaphore cpp(0x1234'0000'0042ull);
  baton_semaphore c;
  static_assert(sizeof c == sizeof cpp);
  std::memcpy(static_cast<void*>(&c), &cpp, sizeof c);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c), 0x1234'0000'0042ull);
}

// The BATON_*_INIT macros are the C++ defaults.
TEST(CApiDefaults, InitMacrosAreTheCppDefaults) {
  const baton::InstanceCreateInfo instance;
  const baton_instance_create_info cInstance = c_api_default_instance_create_info();
  EXPECT_EQ(cInstance.debug_callback, nullptr);
  EXPECT_EQ(cInstance.debug_user_data, instance.debugUserData);
  EXPECT_EQ(cInstance.backend_mask, instance.backendMask);
  EXPECT_EQ(cInstance.trace_path, instance.tracePath);
  const baton::SemaphoreCreateInfo semaphore;
  const baton_semaphore_create_info cSemaphore = c_api_default_semaphore_create_info();
  EXPECT_EQ(cSemaphore.initial_value, semaphore.initialValue);
  EXPECT_EQ(cSemaphore.debug_name, semaphore.debugName);
  const baton::DeviceCreateInfo device;
  const baton_device_create_info cDevice = c_api_default_device_create_info();
  EXPECT_EQ(cDevice.queue_count, device.queueCount);
  EXPECT_EQ(cDevice.debug_name, device.debugName);
  const baton::BufferCreateInfo buffer;
  const baton_buffer_create_info cBuffer = c_api_default_buffer_create_info();
  EXPECT_EQ(cBuffer.size, buffer.size);
  EXPECT_EQ(static_cast<uint32_t>(cBuffer.memory), static_cast<uint32_t>(buffer.memory));
  EXPECT_EQ(cBuffer.flags, buffer.flags);
  const baton::BufferImportInfo import;
  const baton_buffer_import_info cImport = BATON_BUFFER_IMPORT_INFO_INIT;
  EXPECT_EQ(cImport.fd, import.fd);
  EXPECT_EQ(cImport.size, import.size);
  EXPECT_EQ(static_cast<uint32_t>(cImport.memory), static_cast<uint32_t>(import.memory));
  const baton::CommandBufferCreateInfo commandBuffer;
  const baton_command_buffer_create_info cCommandBuffer =
      c_api_default_command_buffer_create_info();
  EXPECT_EQ(static_cast<uint32_t>(cCommandBuffer.usage),
            static_cast<uint32_t>(commandBuffer.usage));
  EXPECT_EQ(cCommandBuffer.debug_name, commandBuffer.debugName);
}

TEST(CApiDefaults, CollectiveInitMacrosAreTheCppDefaults) {
  const baton::CommunicatorCreateInfo communicator;
  const baton_communicator_create_info cCommunicator = c_api_default_communicator_create_info();
  EXPECT_EQ(
      std::memcmp(cCommunicator.id.bytes, communicator.id.bytes, sizeof communicator.id.bytes), 0);
  EXPECT_EQ(cCommunicator.rank, communicator.rank);
  EXPECT_EQ(cCommunicator.rank_count, communicator.rankCount);
  EXPECT_EQ(cCommunicator.timeout_ns, communicator.timeoutNs);
  EXPECT_EQ(cCommunicator.debug_name, communicator.debugName);
  const baton::CommunicatorGroupCreateInfo group;
  const baton_communicator_group_create_info cGroup =
      c_api_default_communicator_group_create_info();
  EXPECT_EQ(cGroup.timeout_ns, group.timeoutNs);
  EXPECT_EQ(cGroup.debug_name, group.debugName);
}

TEST(CApiNames, CollectiveNamesMatchTheCppNames) {
  for (uint32_t t = 0; t <= baton::kElementTypeCount; ++t) {
    EXPECT_STREQ(baton_element_type_name(static_cast<baton_element_type>(t)),
                 baton::elementTypeName(static_cast<baton::ElementType>(t)));
    EXPECT_EQ(baton_element_size(static_cast<baton_element_type>(t)),
              baton::elementSize(static_cast<baton::ElementType>(t)));
  }
  for (uint32_t op = 0; op <= baton::kReduceOpCount; ++op)
    EXPECT_STREQ(baton_reduce_op_name(static_cast<baton_reduce_op>(op)),
                 baton::reduceOpName(static_cast<baton::ReduceOp>(op)));
}

TEST(CApiNames, MatchTheCppNames) {
  for (int32_t r = -16; r <= 3; ++r)
    EXPECT_STREQ(baton_result_name(static_cast<baton_result>(r)),
                 baton::resultName(static_cast<baton::Result>(r)));
  for (uint32_t k = 0; k <= BATON_BACKEND_KIND_COUNT; ++k)
    EXPECT_STREQ(baton_backend_name(static_cast<baton_backend_kind>(k)),
                 baton::backendName(static_cast<baton::BackendKind>(k)));
  char c[128], cpp[128];
  EXPECT_EQ(baton_capability_names(~0ull, c, sizeof c),
            baton::capabilityNames(~0ull, cpp, sizeof cpp));
  EXPECT_STREQ(c, cpp);
  EXPECT_FALSE(baton_is_error(BATON_TIMEOUT));
  EXPECT_TRUE(baton_is_error(BATON_ERROR_INVALID_STATE));
}

// ---- bad input, C and C++ side by side ----------------------------------------------------------

template <class C, class Cpp>
C toC(Cpp handle) {
  if constexpr (std::is_pointer_v<C>) {
    return reinterpret_cast<C>(static_cast<uintptr_t>(handle.raw()));
  } else {
    return handle.raw();
  }
}

// Runs the C call, then the C++ call, each after a sentinel error so that a message that did not
// change is noticed; both must return `expected` with the same message.
#define EXPECT_SAME(expected, cCall, cppCall)                                      \
  do {                                                                             \
    (void)baton::Queue(0xdead).waitIdle(0);                                        \
    const std::string sentinel = baton::lastErrorMessage();                        \
    const baton_result cResult = (cCall);                                          \
    const std::string cMessage = baton_last_error_message();                       \
    (void)baton::Queue(0xdead).waitIdle(0);                                        \
    const baton::Result cppResult = (cppCall);                                     \
    const std::string cppMessage = baton::lastErrorMessage();                      \
    EXPECT_EQ(baton::resultName(static_cast<baton::Result>(cResult)),              \
              std::string(baton::resultName(expected)))                            \
        << #cCall << ": " << cMessage;                                             \
    EXPECT_EQ(static_cast<int>(cResult), static_cast<int>(cppResult)) << #cppCall; \
    EXPECT_EQ(cMessage, cppMessage) << #cCall << " vs " << #cppCall;               \
    if (baton::isError(expected)) {                                                \
      EXPECT_NE(cMessage, sentinel) << #cCall << " (no message)";                  \
    }                                                                              \
  } while (0)

// EXPECT_SAME where the documentation leaves the result open (which of two checks comes first):
// whatever C++ returns, C returns it too, with the same message.
#define EXPECT_SAME_RESULT(cCall, cppCall)                                         \
  do {                                                                             \
    (void)baton::Queue(0xdead).waitIdle(0);                                        \
    const baton_result cResult = (cCall);                                          \
    const std::string cMessage = baton_last_error_message();                       \
    (void)baton::Queue(0xdead).waitIdle(0);                                        \
    const baton::Result cppResult = (cppCall);                                     \
    const std::string cppMessage = baton::lastErrorMessage();                      \
    EXPECT_EQ(static_cast<int>(cResult), static_cast<int>(cppResult)) << #cppCall; \
    EXPECT_EQ(cMessage, cppMessage) << #cCall << " vs " << #cppCall;               \
  } while (0)

using baton::Result;

class CApiBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(baton::createInstance({}, &instance_), Result::Success);
    uint32_t count = 1;
    ASSERT_FALSE(baton::isError(instance_.enumeratePhysicalDevices(&count, &physical_)));
    ASSERT_EQ(instance_.createDevice(physical_, {2, "a"}, &deviceA_), Result::Success);
    ASSERT_EQ(instance_.createDevice(physical_, {1, "b"}, &deviceB_), Result::Success);
    ASSERT_EQ(deviceA_.getQueue(0, &queue_), Result::Success);
    ASSERT_EQ(instance_.createSemaphore({0, "s"}, &semaphore_), Result::Success);
    ASSERT_EQ(deviceA_.createCommandBuffer(&commands_), Result::Success);
    ASSERT_EQ(deviceB_.createCommandBuffer(&commandsB_), Result::Success);
    ASSERT_EQ(deviceA_.createBuffer({64}, &buffer_), Result::Success);
    ASSERT_EQ(instance_.createSemaphore({}, &destroyedSemaphore_), Result::Success);
    ASSERT_EQ(destroyedSemaphore_.destroy(), Result::Success);
    ASSERT_EQ(deviceA_.createBuffer({64}, &destroyedBuffer_), Result::Success);
    ASSERT_EQ(destroyedBuffer_.destroy(), Result::Success);
  }
  void TearDown() override { (void)instance_.destroy(); }

  baton::Instance instance_;
  baton::PhysicalDevice physical_;
  baton::Device deviceA_, deviceB_;
  baton::Queue queue_;
  baton::Semaphore semaphore_, destroyedSemaphore_;
  baton::CommandBuffer commands_, commandsB_;
  baton::Buffer buffer_, destroyedBuffer_;
};

baton_result cHostCall(void*) { return BATON_SUCCESS; }
Result cppHostCall(void*) { return Result::Success; }
baton_result cNative(const baton_native_queue*, void*) { return BATON_SUCCESS; }
Result cppNative(const baton::NativeQueue&, void*) { return Result::Success; }

TEST_F(CApiBadInput, NullHandles) {
  const baton_instance nullInstance = BATON_NULL_HANDLE;
  const baton::Instance nullInstanceCpp;
  uint32_t count = 0;
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_instance_destroy(nullInstance),
              nullInstanceCpp.destroy());
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_instance_enumerate_backends(nullInstance, &count, nullptr),
              nullInstanceCpp.enumerateBackends(&count, nullptr));
  baton_semaphore s;
  baton::Semaphore sCpp;
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_instance_create_semaphore(nullInstance, nullptr, &s),
              nullInstanceCpp.createSemaphore({}, &sCpp));
  baton_physical_device_properties properties;
  baton::PhysicalDeviceProperties propertiesCpp;
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_physical_device_get_properties(BATON_NULL_HANDLE, &properties),
              baton::PhysicalDevice().getProperties(&propertiesCpp));
  baton_queue q;
  baton::Queue qCpp;
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_device_get_queue(BATON_NULL_HANDLE, 0, &q),
              baton::Device().getQueue(0, &qCpp));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_device_wait_idle(BATON_NULL_HANDLE, 0),
              baton::Device().waitIdle(0));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_device_set_host_wait_spin(BATON_NULL_HANDLE, 0),
              baton::Device().setHostWaitSpin(0));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_queue_submit(BATON_NULL_HANDLE, nullptr, 0),
              baton::Queue().submit({}));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_queue_wait_idle(BATON_NULL_HANDLE, 0),
              baton::Queue().waitIdle(0));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_semaphore_signal(BATON_NULL_HANDLE, 1),
              baton::Semaphore().signal(1));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_semaphore_wait(BATON_NULL_HANDLE, 1, 0),
              baton::Semaphore().wait(1, 0));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_semaphore_fail(BATON_NULL_HANDLE, nullptr),
              baton::Semaphore().fail(nullptr));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_command_buffer_begin(BATON_NULL_HANDLE),
              baton::CommandBuffer().begin());
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_host_call(BATON_NULL_HANDLE, cHostCall, nullptr),
              baton::CommandBuffer().hostCall(cppHostCall, nullptr));
  void* pointer = nullptr;
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_buffer_map(BATON_NULL_HANDLE, &pointer),
              baton::Buffer().map(&pointer));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_buffer_destroy(BATON_NULL_HANDLE),
              baton::Buffer().destroy());
}

TEST_F(CApiBadInput, DestroyedAndWrongTypeHandles) {
  const auto s = toC<baton_semaphore>(destroyedSemaphore_);
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_semaphore_signal(s, 1),
              destroyedSemaphore_.signal(1));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_semaphore_destroy(s),
              destroyedSemaphore_.destroy());
  const baton_semaphore_value wait = {s, 1};
  const baton::SemaphoreValue waitCpp{destroyedSemaphore_, 1};
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_instance_wait_semaphores(toC<baton_instance>(instance_), &wait, 1,
                                             BATON_WAIT_MODE_ALL, 0),
              instance_.waitSemaphores(waitCpp, baton::WaitMode::All, 0));
  const baton_submit_info submit = {nullptr, 0, nullptr, 0, &wait, 1};
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_queue_submit(toC<baton_queue>(queue_), &submit, 1),
              queue_.submit(baton::SubmitInfo{{}, {}, waitCpp}));
  void* pointer = nullptr;
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_buffer_map(toC<baton_buffer>(destroyedBuffer_), &pointer),
              destroyedBuffer_.map(&pointer));
  ASSERT_EQ(commands_.begin(), Result::Success);
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_fill_buffer(toC<baton_command_buffer>(commands_),
                                               toC<baton_buffer>(destroyedBuffer_), 0, 4, 0),
              commands_.fillBuffer(destroyedBuffer_, 0, 4, 0));
  // A semaphore's handle where a buffer belongs (a binding can do this; C needs a cast).
  const baton::Buffer wrongType(semaphore_.raw());
  uint64_t size = 0;
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_buffer_get_size(toC<baton_buffer>(wrongType), &size), wrongType.getSize(&size));
}

TEST_F(CApiBadInput, NullOutputsAndArrays) {
  const auto instance = toC<baton_instance>(instance_);
  const auto device = toC<baton_device>(deviceA_);
  const auto queue = toC<baton_queue>(queue_);
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_create_instance(nullptr, nullptr),
              baton::createInstance({}, nullptr));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_instance_enumerate_physical_devices(instance, nullptr, nullptr),
              instance_.enumeratePhysicalDevices(nullptr, nullptr));
  baton_backend_info infos[1];
  baton::BackendInfo infosCpp[1];
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_instance_enumerate_backends(instance, nullptr, infos),
              instance_.enumerateBackends(nullptr, infosCpp));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_instance_create_semaphore(instance, nullptr, nullptr),
              instance_.createSemaphore({}, nullptr));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_physical_device_get_properties(toC<baton_physical_device>(physical_), nullptr),
              physical_.getProperties(nullptr));
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_device_get_queue(device, 0, nullptr),
              deviceA_.getQueue(0, nullptr));
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_device_get_queue_count(device, nullptr),
              deviceA_.getQueueCount(nullptr));
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_device_create_command_buffer(device, nullptr),
              deviceA_.createCommandBuffer(nullptr));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_semaphore_get_value(toC<baton_semaphore>(semaphore_), nullptr),
              semaphore_.getValue(nullptr));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_semaphore_get_failure_reason(toC<baton_semaphore>(semaphore_), nullptr, 8),
              semaphore_.getFailureReason(nullptr, 8));
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_buffer_map(toC<baton_buffer>(buffer_), nullptr),
              buffer_.map(nullptr));
  // Null arrays with counts, and counts above the limits (nothing is read past the count check).
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_queue_submit(queue, nullptr, 2),
              queue_.submit(baton::Span<const baton::SubmitInfo>(nullptr, 2)));
  const baton_submit_info one = {};
  const baton::SubmitInfo oneCpp;
  EXPECT_SAME(
      Result::ErrorInvalidArgument, baton_queue_submit(queue, &one, BATON_MAX_SUBMIT_INFOS + 1),
      queue_.submit(baton::Span<const baton::SubmitInfo>(&oneCpp, baton::kMaxSubmitInfos + 1)));
  const baton_submit_info nullWaits = {nullptr, 3, nullptr, 0, nullptr, 0};
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_queue_submit(queue, &nullWaits, 1),
              queue_.submit(
                  baton::SubmitInfo{baton::Span<const baton::SemaphoreValue>(nullptr, 3), {}, {}}));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_instance_wait_semaphores(instance, nullptr, 1, BATON_WAIT_MODE_ANY, 0),
              instance_.waitSemaphores(baton::Span<const baton::SemaphoreValue>(nullptr, 1),
                                       baton::WaitMode::Any, 0));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_device_wait_semaphores(device, nullptr, BATON_MAX_WAIT_COUNT + 1,
                                           BATON_WAIT_MODE_ALL, 0),
              deviceA_.waitSemaphores(
                  baton::Span<const baton::SemaphoreValue>(nullptr, baton::kMaxWaitCount + 1),
                  baton::WaitMode::All, 0));
}

TEST_F(CApiBadInput, ValuesAndEnums) {
  const auto instance = toC<baton_instance>(instance_);
  const auto device = toC<baton_device>(deviceA_);
  const auto semaphore = toC<baton_semaphore>(semaphore_);
  baton_instance_create_info badMask = BATON_INSTANCE_CREATE_INFO_INIT;
  badMask.backend_mask = 0x80;
  baton_instance created;
  baton::Instance createdCpp;
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_create_instance(&badMask, &created),
              baton::createInstance({nullptr, nullptr, 0x80}, &createdCpp));
  const baton_semaphore_value wait = {semaphore, 1};
  const baton::SemaphoreValue waitCpp{semaphore_, 1};
  EXPECT_SAME(
      Result::ErrorInvalidArgument,
      baton_instance_wait_semaphores(instance, &wait, 1, static_cast<baton_wait_mode>(5), 0),
      instance_.waitSemaphores(waitCpp, static_cast<baton::WaitMode>(5), 0));
  EXPECT_SAME(Result::Timeout,
              baton_instance_wait_semaphores(instance, &wait, 1, BATON_WAIT_MODE_ALL, 0),
              instance_.waitSemaphores(waitCpp, baton::WaitMode::All, 0));
  baton_buffer buffer;
  baton::Buffer bufferCpp;
  const baton_buffer_create_info badKind = {16, static_cast<baton_memory_kind>(9), 0};
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_device_create_buffer(device, &badKind, &buffer),
              deviceA_.createBuffer({16, static_cast<baton::MemoryKind>(9), 0}, &bufferCpp));
  const baton_buffer_create_info badFlags = {16, BATON_MEMORY_KIND_DEVICE, 0x80};
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_device_create_buffer(device, &badFlags, &buffer),
              deviceA_.createBuffer({16, baton::MemoryKind::Device, 0x80}, &bufferCpp));
  baton_buffer_import_info badImport = BATON_BUFFER_IMPORT_INFO_INIT;
  badImport.size = 16;
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_device_import_buffer(device, &badImport, &buffer),
              deviceA_.importBuffer({-1, 16, baton::MemoryKind::Device}, &bufferCpp));
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_device_import_buffer(device, nullptr, &buffer),
              deviceA_.importBuffer({}, &bufferCpp));
  // A null create-info is the C++ default: size 0.
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_device_create_buffer(device, nullptr, &buffer),
              deviceA_.createBuffer({}, &bufferCpp));
  baton_device_create_info noQueues = BATON_DEVICE_CREATE_INFO_INIT;
  noQueues.queue_count = 0;
  baton_device createdDevice;
  baton::Device createdDeviceCpp;
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_instance_create_device(instance, toC<baton_physical_device>(physical_),
                                           &noQueues, &createdDevice),
              instance_.createDevice(physical_, {0}, &createdDeviceCpp));
  baton_queue queue;
  baton::Queue queueCpp;
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_device_get_queue(device, 2, &queue),
              deviceA_.getQueue(2, &queueCpp));
  ASSERT_EQ(semaphore_.signal(3), Result::Success);
  EXPECT_SAME(Result::ErrorNonIncreasingValue, baton_semaphore_signal(semaphore, 3),
              semaphore_.signal(3));
  const baton_semaphore_value stale = {semaphore, 2};
  const baton_submit_info submit = {nullptr, 0, nullptr, 0, &stale, 1};
  EXPECT_SAME(Result::ErrorNonIncreasingValue,
              baton_queue_submit(toC<baton_queue>(queue_), &submit, 1),
              queue_.submit(baton::SubmitInfo{{}, {}, baton::SemaphoreValue{semaphore_, 2}}));
}

TEST_F(CApiBadInput, StateMismatchAndFailure) {
  const auto queue = toC<baton_queue>(queue_);
  const auto commands = toC<baton_command_buffer>(commands_);
  const auto buffer = toC<baton_buffer>(buffer_);
  EXPECT_SAME(Result::ErrorInvalidState, baton_command_buffer_end(commands), commands_.end());
  EXPECT_SAME(Result::ErrorInvalidState,
              baton_command_buffer_fill_buffer(commands, buffer, 0, 4, 1),
              commands_.fillBuffer(buffer_, 0, 4, 1));
  const baton_submit_info unended = {nullptr, 0, &commands, 1, nullptr, 0};
  EXPECT_SAME(Result::ErrorInvalidState, baton_queue_submit(queue, &unended, 1),
              queue_.submit(baton::SubmitInfo{{}, commands_, {}}));
  ASSERT_EQ(commands_.begin(), Result::Success);
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_command_buffer_copy_buffer(commands, buffer, 0, buffer, 8, 16),
              commands_.copyBuffer(buffer_, 0, buffer_, 8, 16));  // overlapping
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_command_buffer_update_buffer(commands, buffer, 0, 8, nullptr),
              commands_.updateBuffer(buffer_, 0, 8, nullptr));
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_command_buffer_native(commands, nullptr, nullptr),
              commands_.native(nullptr, nullptr));

  // Objects of another device.
  const auto commandsB = toC<baton_command_buffer>(commandsB_);
  ASSERT_EQ(commandsB_.begin(), Result::Success);
  EXPECT_SAME(Result::ErrorDeviceMismatch,
              baton_command_buffer_fill_buffer(commandsB, buffer, 0, 4, 1),
              commandsB_.fillBuffer(buffer_, 0, 4, 1));
  ASSERT_EQ(commandsB_.end(), Result::Success);
  const baton_submit_info otherDevice = {nullptr, 0, &commandsB, 1, nullptr, 0};
  EXPECT_SAME(Result::ErrorDeviceMismatch, baton_queue_submit(queue, &otherDevice, 1),
              queue_.submit(baton::SubmitInfo{{}, commandsB_, {}}));

  // A failed semaphore: waits return its reason, a second fail returns the first failure.
  const auto semaphore = toC<baton_semaphore>(semaphore_);
  ASSERT_EQ(semaphore_.fail("first reason"), Result::Success);
  EXPECT_SAME(Result::ErrorSemaphoreFailed, baton_semaphore_wait(semaphore, 1, 0),
              semaphore_.wait(1, 0));
  EXPECT_NE(std::string(baton_last_error_message()).find("first reason"), std::string::npos);
  EXPECT_SAME(Result::ErrorSemaphoreFailed, baton_semaphore_fail(semaphore, "second"),
              semaphore_.fail("second"));
  EXPECT_SAME(Result::ErrorSemaphoreFailed, baton_semaphore_signal(semaphore, 10),
              semaphore_.signal(10));
  char reason[8];
  EXPECT_SAME(Result::Success, baton_semaphore_get_failure_reason(semaphore, reason, sizeof reason),
              semaphore_.getFailureReason(reason, sizeof reason));
  EXPECT_STREQ(reason, "first r");  // truncated to the capacity
}

// Graph command buffers: creation with parameters, and the native callbacks they refuse.
TEST_F(CApiBadInput, GraphCommandBuffers) {
  const auto device = toC<baton_device>(deviceA_);
  baton_command_buffer_create_info info = BATON_COMMAND_BUFFER_CREATE_INFO_INIT;
  baton::CommandBufferCreateInfo infoCpp;
  info.usage = static_cast<baton_command_buffer_usage>(5);
  infoCpp.usage = static_cast<baton::CommandBufferUsage>(5);
  baton_command_buffer out = BATON_NULL_HANDLE;
  baton::CommandBuffer outCpp;
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_device_create_command_buffer_with_info(device, &info, &out),
              deviceA_.createCommandBuffer(infoCpp, &outCpp));
  EXPECT_EQ(out, BATON_NULL_HANDLE);
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_device_create_command_buffer_with_info(device, &info, nullptr),
              deviceA_.createCommandBuffer(infoCpp, nullptr));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_device_create_command_buffer_with_info(BATON_NULL_HANDLE, &info, &out),
              baton::Device().createCommandBuffer(infoCpp, &outCpp));

  // A graph command buffer (made through C++; its C handle is the same object).
  infoCpp.usage = baton::CommandBufferUsage::Graph;
  infoCpp.debugName = "g";
  baton::CommandBuffer graph;
  ASSERT_EQ(deviceA_.createCommandBuffer(infoCpp, &graph), Result::Success);
  const auto g = toC<baton_command_buffer>(graph);
  EXPECT_SAME(Result::ErrorInvalidState,
              baton_command_buffer_native_flags(g, cNative, nullptr, BATON_NATIVE_CAPTURABLE),
              graph.native(cppNative, nullptr, baton::kNativeCapturable));
  ASSERT_EQ(graph.begin(), Result::Success);
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_command_buffer_native(g, cNative, nullptr),
              graph.native(cppNative, nullptr));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_command_buffer_native_flags(g, cNative, nullptr, 0),
              graph.native(cppNative, nullptr, 0));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_command_buffer_native_flags(g, cNative, nullptr, BATON_NATIVE_CAPTURABLE | 4u),
              graph.native(cppNative, nullptr, baton::kNativeCapturable | 4u));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_command_buffer_native_flags(g, nullptr, nullptr, BATON_NATIVE_CAPTURABLE),
              graph.native(nullptr, nullptr, baton::kNativeCapturable));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_native_flags(BATON_NULL_HANDLE, cNative, nullptr,
                                                BATON_NATIVE_CAPTURABLE),
              baton::CommandBuffer().native(cppNative, nullptr, baton::kNativeCapturable));
  EXPECT_SAME(Result::Success,
              baton_command_buffer_native_flags(g, cNative, nullptr, BATON_NATIVE_CAPTURABLE),
              graph.native(cppNative, nullptr, baton::kNativeCapturable));
  EXPECT_EQ(graph.end(), Result::Success);
}

// ---- collectives: bad input, C and C++ side by side ------------------------------------------

TEST_F(CApiBadInput, NullCommunicators) {
  const baton_communicator none = BATON_NULL_HANDLE;
  const baton::Communicator noneCpp;
  uint32_t value = 0;
  baton_device device;
  baton::Device deviceCpp;
  baton_communicator_state state;
  baton::CommunicatorState stateCpp;
  char reason[16];
  baton_communicator out;
  baton::Communicator outCpp;
  const uint32_t excluded = 1;
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_communicator_destroy(none), noneCpp.destroy());
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_communicator_get_rank(none, &value),
              noneCpp.getRank(&value));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_communicator_get_rank_count(none, &value),
              noneCpp.getRankCount(&value));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_communicator_get_device(none, &device),
              noneCpp.getDevice(&deviceCpp));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_communicator_get_state(none, &state),
              noneCpp.getState(&stateCpp));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_communicator_get_failure_reason(none, reason, sizeof reason),
              noneCpp.getFailureReason(reason, sizeof reason));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_communicator_split(none, 0, 0, &out),
              noneCpp.split(0, 0, &outCpp));
  EXPECT_SAME(Result::ErrorInvalidHandle, baton_communicator_shrink(none, &excluded, 1, &out),
              noneCpp.shrink(baton::Span<const uint32_t>(&excluded, 1), &outCpp));
  // A semaphore's handle where a communicator belongs.
  const baton::Communicator wrongType(semaphore_.raw());
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_communicator_get_rank(toC<baton_communicator>(wrongType), &value),
              wrongType.getRank(&value));

  // Collective commands of a null communicator.
  ASSERT_EQ(commands_.begin(), Result::Success);
  const auto commands = toC<baton_command_buffer>(commands_);
  const auto buffer = toC<baton_buffer>(buffer_);
  const baton_element_type f32 = BATON_ELEMENT_TYPE_FLOAT32;
  const baton_reduce_op sum = BATON_REDUCE_OP_SUM;
  const auto f32Cpp = baton::ElementType::Float32;
  const auto sumCpp = baton::ReduceOp::Sum;
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_all_reduce(commands, none, buffer, 0, buffer, 0, 4, f32, sum),
              commands_.allReduce(noneCpp, buffer_, 0, buffer_, 0, 4, f32Cpp, sumCpp));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_broadcast(commands, none, buffer, 0, buffer, 0, 4, f32, 0),
              commands_.broadcast(noneCpp, buffer_, 0, buffer_, 0, 4, f32Cpp, 0));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_reduce(commands, none, buffer, 0, buffer, 0, 4, f32, sum, 0),
              commands_.reduce(noneCpp, buffer_, 0, buffer_, 0, 4, f32Cpp, sumCpp, 0));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_all_gather(commands, none, buffer, 0, buffer, 0, 4, f32),
              commands_.allGather(noneCpp, buffer_, 0, buffer_, 0, 4, f32Cpp));
  EXPECT_SAME(
      Result::ErrorInvalidHandle,
      baton_command_buffer_reduce_scatter(commands, none, buffer, 0, buffer, 0, 4, f32, sum),
      commands_.reduceScatter(noneCpp, buffer_, 0, buffer_, 0, 4, f32Cpp, sumCpp));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_all_to_all(commands, none, buffer, 0, buffer, 32, 4, f32),
              commands_.allToAll(noneCpp, buffer_, 0, buffer_, 32, 4, f32Cpp));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_send(commands, none, buffer, 0, 4, f32, 0),
              commands_.send(noneCpp, buffer_, 0, 4, f32Cpp, 0));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_command_buffer_recv(commands, none, buffer, 0, 4, f32, 0),
              commands_.recv(noneCpp, buffer_, 0, 4, f32Cpp, 0));
  // Unknown enumerators with a null communicator: which check comes first is the C++ call's.
  EXPECT_SAME_RESULT(baton_command_buffer_all_reduce(commands, none, buffer, 0, buffer, 0, 4,
                                                     static_cast<baton_element_type>(99), sum),
                     commands_.allReduce(noneCpp, buffer_, 0, buffer_, 0, 4,
                                         static_cast<baton::ElementType>(99), sumCpp));
  EXPECT_SAME_RESULT(baton_command_buffer_all_reduce(commands, none, buffer, 0, buffer, 0, 0, f32,
                                                     static_cast<baton_reduce_op>(42)),
                     commands_.allReduce(noneCpp, buffer_, 0, buffer_, 0, 0, f32Cpp,
                                         static_cast<baton::ReduceOp>(42)));
}

TEST_F(CApiBadInput, HostHasNoCollectives) {
  const auto instance = toC<baton_instance>(instance_);
  const auto device = toC<baton_device>(deviceA_);
  // The support report, for every backend (whatever this machine has) and the bad ones.
  for (uint32_t k = 0; k < BATON_BACKEND_KIND_COUNT; ++k) {
    baton_collective_support c;
    baton::CollectiveSupport cpp;
    EXPECT_SAME(
        Result::Success,
        baton_instance_get_collective_support(instance, static_cast<baton_backend_kind>(k), &c),
        instance_.getCollectiveSupport(static_cast<baton::BackendKind>(k), &cpp));
    EXPECT_EQ(static_cast<uint32_t>(c.backend), static_cast<uint32_t>(cpp.backend));
    EXPECT_EQ(c.available, cpp.available);
    EXPECT_EQ(c.version, cpp.version);
    EXPECT_STREQ(c.library, cpp.library);
    EXPECT_STREQ(c.reason, cpp.reason);
    EXPECT_EQ(c.can_revoke, cpp.canRevoke);
    EXPECT_EQ(c.can_shrink, cpp.canShrink);
    EXPECT_EQ(c.blocking_calls, cpp.blockingCalls);
  }
  baton_collective_support support;
  baton::CollectiveSupport supportCpp;
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_instance_get_collective_support(instance, BATON_BACKEND_KIND_HOST, nullptr),
              instance_.getCollectiveSupport(baton::BackendKind::Host, nullptr));
  EXPECT_SAME(
      Result::ErrorInvalidArgument,
      baton_instance_get_collective_support(instance, static_cast<baton_backend_kind>(9), &support),
      instance_.getCollectiveSupport(static_cast<baton::BackendKind>(9), &supportCpp));
  EXPECT_SAME(
      Result::ErrorInvalidHandle,
      baton_instance_get_collective_support(BATON_NULL_HANDLE, BATON_BACKEND_KIND_HOST, &support),
      baton::Instance().getCollectiveSupport(baton::BackendKind::Host, &supportCpp));

  baton_communicator_id id;
  baton::CommunicatorId idCpp;
  EXPECT_SAME_RESULT(baton_instance_create_communicator_id(instance, BATON_BACKEND_KIND_HOST, &id),
                     instance_.createCommunicatorId(baton::BackendKind::Host, &idCpp));
  EXPECT_SAME_RESULT(
      baton_instance_create_communicator_id(instance, BATON_BACKEND_KIND_HOST, nullptr),
      instance_.createCommunicatorId(baton::BackendKind::Host, nullptr));
  EXPECT_SAME(
      Result::ErrorInvalidHandle,
      baton_instance_create_communicator_id(BATON_NULL_HANDLE, BATON_BACKEND_KIND_CUDA, &id),
      baton::Instance().createCommunicatorId(baton::BackendKind::Cuda, &idCpp));

  // A host device: not supported, alone or in a group; and bad arguments.
  baton_communicator_create_info info = BATON_COMMUNICATOR_CREATE_INFO_INIT;
  info.rank_count = 1;
  baton::CommunicatorCreateInfo infoCpp;
  infoCpp.rankCount = 1;
  baton_communicator out = BATON_NULL_HANDLE;
  baton::Communicator outCpp;
  EXPECT_SAME(Result::ErrorNotSupported, baton_device_create_communicator(device, &info, &out),
              deviceA_.createCommunicator(infoCpp, &outCpp));
  EXPECT_EQ(out, BATON_NULL_HANDLE);
  EXPECT_SAME_RESULT(baton_device_create_communicator(device, &info, nullptr),
                     deviceA_.createCommunicator(infoCpp, nullptr));
  EXPECT_SAME_RESULT(baton_device_create_communicator(device, nullptr, &out),
                     deviceA_.createCommunicator({}, &outCpp));
  EXPECT_SAME(Result::ErrorInvalidHandle,
              baton_device_create_communicator(BATON_NULL_HANDLE, &info, &out),
              baton::Device().createCommunicator(infoCpp, &outCpp));
  const baton_device devices[2] = {device, toC<baton_device>(deviceB_)};
  baton_communicator outs[2] = {};
  baton::Communicator outsCpp[2];
  EXPECT_SAME_RESULT(baton_instance_create_communicators(instance, devices, 2, nullptr, outs),
                     instance_.createCommunicators({deviceA_, deviceB_}, {}, outsCpp));
  EXPECT_SAME(Result::ErrorNotSupported,
              baton_instance_create_communicators(instance, devices, 1, nullptr, outs),
              instance_.createCommunicators(deviceA_, {}, outsCpp));
  EXPECT_SAME(
      Result::ErrorInvalidArgument,
      baton_instance_create_communicators(instance, nullptr, 2, nullptr, outs),
      instance_.createCommunicators(baton::Span<const baton::Device>(nullptr, 2), {}, outsCpp));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_instance_create_communicators(instance, devices, 0, nullptr, outs),
              instance_.createCommunicators({}, {}, outsCpp));
  EXPECT_SAME_RESULT(baton_instance_create_communicators(instance, devices, 1, nullptr, nullptr),
                     instance_.createCommunicators(deviceA_, {}, nullptr));
  EXPECT_EQ(outs[0], BATON_NULL_HANDLE);
  EXPECT_EQ(outs[1], BATON_NULL_HANDLE);
}

// Destroying parents with live children: the same result and report through either API.
TEST(CApiDestroy, ParentWithLiveChildren) {
  struct Run {
    baton::Result deviceResult, instanceResult;
    std::string deviceMessage, instanceMessage;
  };
  auto run = [](bool viaC) {
    Run out{};
    baton::Instance instance;
    EXPECT_EQ(baton::createInstance({}, &instance), Result::Success);
    uint32_t count = 1;
    baton::PhysicalDevice physical;
    (void)instance.enumeratePhysicalDevices(&count, &physical);
    baton::Device device;
    baton::CommandBuffer commands;
    baton::Semaphore semaphore;
    EXPECT_EQ(instance.createDevice(physical, {1}, &device), Result::Success);
    EXPECT_EQ(device.createCommandBuffer(&commands), Result::Success);
    EXPECT_EQ(instance.createSemaphore({}, &semaphore), Result::Success);
    out.deviceResult = viaC ? static_cast<Result>(baton_device_destroy(toC<baton_device>(device)))
                            : device.destroy();
    out.deviceMessage = baton::lastErrorMessage();
    out.instanceResult =
        viaC ? static_cast<Result>(baton_instance_destroy(toC<baton_instance>(instance)))
             : instance.destroy();
    out.instanceMessage = baton::lastErrorMessage();
    return out;
  };
  Run c = run(true), cpp = run(false);
  EXPECT_EQ(c.deviceResult, Result::ErrorObjectInUse);
  EXPECT_EQ(c.instanceResult, Result::ErrorObjectInUse);
  EXPECT_EQ(c.deviceResult, cpp.deviceResult);
  EXPECT_EQ(c.instanceResult, cpp.instanceResult);
  EXPECT_EQ(c.deviceMessage, cpp.deviceMessage);
  EXPECT_EQ(c.instanceMessage, cpp.instanceMessage);
}

}  // namespace
