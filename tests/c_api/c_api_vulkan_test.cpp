// Vulkan interop through the C API (baton/baton_vulkan.h): the C scenario of
// c_api_vulkan_flow.c, memory import, the defaults of the INIT macros, and bad input given to the
// C and the C++ function side by side (the same result and message). Needs a Vulkan device
// (Mesa's lavapipe in CI); without one the tests that use it skip and say why.
#include <baton/baton_vulkan.h>
#include <gtest/gtest.h>

#include <baton/baton.hpp>
#include <baton/vulkan.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "c_api_vulkan_flow.h"
#include "interop/vulkan_context.hpp"

namespace {

using baton::Result;

baton_vulkan_device toC(const baton::VulkanDevice& v) {
  baton_vulkan_device out = BATON_VULKAN_DEVICE_INIT;
  out.instance = v.instance;
  out.physical_device = v.physicalDevice;
  out.device = v.device;
  out.get_instance_proc_addr = v.getInstanceProcAddr;
  return out;
}

template <class C, class Cpp>
C toC(Cpp handle) {
  return reinterpret_cast<C>(static_cast<uintptr_t>(handle.raw()));
}

// As in c_api_test.cpp: the C call and the C++ call, each after a sentinel error.
#define EXPECT_SAME(expected, cCall, cppCall)                                          \
  do {                                                                                 \
    (void)baton::Queue(0xdead).waitIdle(0);                                            \
    const baton_result cResult = (cCall);                                              \
    const std::string cMessage = baton_last_error_message();                           \
    (void)baton::Queue(0xdead).waitIdle(0);                                            \
    const Result cppResult = (cppCall);                                                \
    const std::string cppMessage = baton::lastErrorMessage();                          \
    EXPECT_STREQ(baton_result_name(cResult), baton::resultName(expected)) << cMessage; \
    EXPECT_EQ(static_cast<int>(cResult), static_cast<int>(cppResult)) << #cppCall;     \
    EXPECT_EQ(cMessage, cppMessage) << #cCall << " vs " << #cppCall;                   \
  } while (0)

TEST(CApiVulkanDefaults, InitMacrosAreTheCppDefaults) {
  const baton::VulkanSemaphoreImportInfo semaphore;
  const baton_vulkan_semaphore_import_info cSemaphore =
      c_api_vulkan_default_semaphore_import_info();
  EXPECT_EQ(cSemaphore.vulkan.instance, semaphore.vulkan.instance);
  EXPECT_EQ(cSemaphore.vulkan.get_instance_proc_addr, semaphore.vulkan.getInstanceProcAddr);
  EXPECT_EQ(cSemaphore.semaphore, semaphore.semaphore);
  EXPECT_EQ(cSemaphore.semaphore_type, semaphore.semaphoreType);
  EXPECT_EQ(cSemaphore.export_handle_types, semaphore.exportHandleTypes);
  EXPECT_EQ(cSemaphore.fd, semaphore.fd);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(cSemaphore.device), semaphore.device.raw());
  EXPECT_EQ(static_cast<int>(cSemaphore.mode), static_cast<int>(semaphore.mode));
  EXPECT_EQ(static_cast<int>(cSemaphore.failure_policy), static_cast<int>(semaphore.failurePolicy));
  EXPECT_EQ(cSemaphore.debug_name, semaphore.debugName);
  const baton::VulkanTimelineCreateInfo timeline;
  const baton_vulkan_timeline_create_info cTimeline = c_api_vulkan_default_timeline_create_info();
  EXPECT_EQ(cTimeline.initial_value, timeline.initialValue);
  EXPECT_EQ(static_cast<int>(cTimeline.mode), static_cast<int>(timeline.mode));
  EXPECT_EQ(static_cast<int>(cTimeline.failure_policy), static_cast<int>(timeline.failurePolicy));
  const baton::VulkanMemoryImportInfo memory;
  const baton_vulkan_memory_import_info cMemory = c_api_vulkan_default_memory_import_info();
  EXPECT_EQ(cMemory.memory, memory.memory);
  EXPECT_EQ(cMemory.allocation_size, memory.allocationSize);
  EXPECT_EQ(cMemory.offset, memory.offset);
  EXPECT_EQ(cMemory.size, memory.size);
  EXPECT_EQ(cMemory.memory_type_index, memory.memoryTypeIndex);
  EXPECT_EQ(cMemory.host_pointer, memory.hostPointer);
  EXPECT_EQ(cMemory.fd, memory.fd);
  EXPECT_EQ(cMemory.dedicated, memory.dedicated);
  EXPECT_EQ(static_cast<int>(cMemory.mode), static_cast<int>(memory.mode));
  EXPECT_EQ(c_api_vulkan_default_device().device, baton::VulkanDevice().device);
  EXPECT_STREQ(baton_interop_mode_name(BATON_INTEROP_MODE_NATIVE),
               baton::interopModeName(baton::InteropMode::Native));
}

class CApiVulkan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { vk_ = std::make_unique<baton::test::VulkanContext>(); }
  static void TearDownTestSuite() { vk_.reset(); }
  void SetUp() override {
    if (!vk_->ok()) GTEST_SKIP() << "no usable Vulkan device: " << vk_->skip;
    ASSERT_EQ(baton::createInstance({}, &instance_), Result::Success);
    uint32_t count = 1;
    ASSERT_FALSE(baton::isError(instance_.enumeratePhysicalDevices(&count, &physical_)));
    ASSERT_EQ(instance_.createDevice(physical_, {}, &device_), Result::Success);
  }
  void TearDown() override {
    if (instance_) (void)instance_.destroy();
  }

  static std::unique_ptr<baton::test::VulkanContext> vk_;
  baton::Instance instance_;
  baton::PhysicalDevice physical_;
  baton::Device device_;
};
std::unique_ptr<baton::test::VulkanContext> CApiVulkan::vk_;

TEST_F(CApiVulkan, BridgedTimelineFromC) {
  char why[2048] = "";
  EXPECT_EQ(c_api_vulkan_flow_bridged(vk_->instance, vk_->physical, vk_->device,
                                      vk_->view().getInstanceProcAddr, why, sizeof why),
            0)
      << why;
}

TEST_F(CApiVulkan, BridgedMemory) {
  baton::test::VulkanBuffer memory = vk_->createHostBuffer(256);
  ASSERT_NE(memory.memory, VK_NULL_HANDLE);
  baton_vulkan_memory_import_info info = BATON_VULKAN_MEMORY_IMPORT_INFO_INIT;
  info.vulkan = toC(vk_->view());
  info.memory = memory.memory;
  info.allocation_size = memory.allocationSize;
  info.size = memory.size;
  info.memory_type_index = memory.memoryType;
  baton_buffer buffer = BATON_NULL_HANDLE;
  ASSERT_EQ(baton_import_vulkan_memory(toC<baton_device>(device_), &info, &buffer), BATON_SUCCESS)
      << baton_last_error_message();
  baton_vulkan_interop_info interop;
  ASSERT_EQ(baton_get_vulkan_memory_interop(buffer, &interop), BATON_SUCCESS);
  EXPECT_EQ(interop.mode, BATON_INTEROP_MODE_BRIDGED);
  EXPECT_EQ(interop.memory, memory.memory);
  void* mapped = nullptr;
  ASSERT_EQ(baton_buffer_map(buffer, &mapped), BATON_SUCCESS);
  std::memset(mapped, 0x5a, 256);
  uint64_t size = 0;
  ASSERT_EQ(baton_buffer_get_size(buffer, &size), BATON_SUCCESS);
  EXPECT_EQ(size, 256u);
  EXPECT_EQ(baton_buffer_destroy(buffer), BATON_SUCCESS);
  vk_->destroy(memory);
}

TEST_F(CApiVulkan, BadInputMatchesCpp) {
  const auto instance = toC<baton_instance>(instance_);
  const auto device = toC<baton_device>(device_);
  baton_semaphore semaphore = BATON_NULL_HANDLE;
  baton::Semaphore semaphoreCpp;
  // Null info: the defaults, whose null handles are refused.
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_import_vulkan_semaphore(instance, nullptr, &semaphore),
              baton::importVulkanSemaphore(instance_, {}, &semaphoreCpp));
  // The semaphore type not stated, then a binary semaphore.
  VkSemaphore timeline = vk_->createTimeline();
  baton_vulkan_semaphore_import_info info = BATON_VULKAN_SEMAPHORE_IMPORT_INFO_INIT;
  info.vulkan = toC(vk_->view());
  info.semaphore = timeline;
  baton::VulkanSemaphoreImportInfo infoCpp;
  infoCpp.vulkan = vk_->view();
  infoCpp.semaphore = timeline;
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_import_vulkan_semaphore(instance, &info, &semaphore),
              baton::importVulkanSemaphore(instance_, infoCpp, &semaphoreCpp));
  info.semaphore_type = infoCpp.semaphoreType = VK_SEMAPHORE_TYPE_BINARY;
  EXPECT_SAME(Result::ErrorNotSupported, baton_import_vulkan_semaphore(instance, &info, &semaphore),
              baton::importVulkanSemaphore(instance_, infoCpp, &semaphoreCpp));
  info.semaphore_type = infoCpp.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  info.mode = BATON_INTEROP_MODE_REQUEST_NATIVE;
  infoCpp.mode = baton::InteropModeRequest::Native;
  info.device = device;
  infoCpp.device = device_;
  EXPECT_SAME(Result::ErrorNotSupported, baton_import_vulkan_semaphore(instance, &info, &semaphore),
              baton::importVulkanSemaphore(instance_, infoCpp, &semaphoreCpp));
  info.mode = static_cast<baton_interop_mode_request>(7);
  infoCpp.mode = static_cast<baton::InteropModeRequest>(7);
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_import_vulkan_semaphore(instance, &info, &semaphore),
              baton::importVulkanSemaphore(instance_, infoCpp, &semaphoreCpp));
  vk_->destroy(timeline);

  // A semaphore not imported from Vulkan; null outputs; no Vulkan device.
  ASSERT_EQ(instance_.createSemaphore({}, &semaphoreCpp), Result::Success);
  baton_vulkan_interop_info interop;
  baton::VulkanInteropInfo interopCpp;
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_get_vulkan_semaphore_interop(toC<baton_semaphore>(semaphoreCpp), &interop),
              baton::getVulkanSemaphoreInterop(semaphoreCpp, &interopCpp));
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_get_vulkan_semaphore_interop(toC<baton_semaphore>(semaphoreCpp), nullptr),
              baton::getVulkanSemaphoreInterop(semaphoreCpp, nullptr));
  baton_vulkan_interop_support support;
  baton::VulkanInteropSupport supportCpp;
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_query_vulkan_interop(nullptr, device, &support),
              baton::queryVulkanInterop({}, device_, &supportCpp));
  const baton_vulkan_device vulkan = toC(vk_->view());
  baton_physical_device physical = BATON_NULL_HANDLE;
  baton::PhysicalDevice physicalCpp;
  {
    // The result depends on the machine (ErrorNotSupported without a GPU whose CUDA device is
    // the Vulkan device, Success on one): the C and C++ calls must agree.
    (void)baton::Queue(0xdead).waitIdle(0);
    const baton_result cResult = baton_match_vulkan_physical_device(instance, &vulkan, &physical);
    const std::string cMessage = baton_last_error_message();
    (void)baton::Queue(0xdead).waitIdle(0);
    const Result cppResult = baton::matchVulkanPhysicalDevice(instance_, vk_->view(), &physicalCpp);
    EXPECT_EQ(static_cast<int>(cResult), static_cast<int>(cppResult));
    if (cResult == BATON_SUCCESS)
      EXPECT_EQ(reinterpret_cast<uintptr_t>(physical), static_cast<uintptr_t>(physicalCpp.raw()));
    else
      EXPECT_EQ(cMessage, std::string(baton::lastErrorMessage()));
  }
  baton_vulkan_timeline created;
  baton::VulkanTimeline createdCpp;
  EXPECT_SAME(Result::ErrorInvalidArgument,
              baton_create_vulkan_timeline(instance, nullptr, &created),
              baton::createVulkanTimeline(instance_, {}, &createdCpp));
  // A timeline of null handles is nothing to destroy; a VkSemaphore without its VkDevice is
  // refused (and left alone).
  EXPECT_SAME(Result::Success, baton_destroy_vulkan_timeline(nullptr, nullptr),
              baton::destroyVulkanTimeline({}, {}));
  baton_vulkan_timeline orphan = {vk_->createTimeline(), BATON_NULL_HANDLE,
                                  BATON_INTEROP_MODE_BRIDGED};
  baton::VulkanTimeline orphanCpp;
  orphanCpp.vulkan = orphan.vulkan;
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_destroy_vulkan_timeline(nullptr, &orphan),
              baton::destroyVulkanTimeline({}, orphanCpp));
  vk_->destroy(orphan.vulkan);
  baton_buffer buffer = BATON_NULL_HANDLE;
  baton::Buffer bufferCpp;
  EXPECT_SAME(Result::ErrorInvalidArgument, baton_import_vulkan_memory(device, nullptr, &buffer),
              baton::importVulkanMemory(device_, {}, &bufferCpp));
}

}  // namespace
