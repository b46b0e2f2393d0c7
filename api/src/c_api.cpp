// The C API (baton/baton.h): each function converts its arguments and calls the C++ public
// function of the same name, so that the two APIs cannot drift apart (no second validation, no
// second semantics, the same results and messages). Nothing here can throw: the C++ calls are
// noexcept and the conversions are casts.
//
// Conversions are free because the C types are laid out as the C++ ones, which the
// static_asserts below check (as Vulkan-Hpp does between vk:: structs and Vk* structs):
//  - a C handle holds the C++ handle's 64-bit value (a pointer-typed handle is that value as a
//    pointer), so handles convert by value, and output handles and arrays of handles,
//    baton_semaphore_value and baton_submit_info are handed to C++ in place;
//  - callbacks are passed through as they are: the C function types differ from the C++ ones
//    only where the ABI does not (a 32-bit enum for an enum class over int32_t/uint32_t, a
//    pointer for a reference). ISO C++ leaves a call through a different function type
//    undefined (strictly, C language linkage alone makes a different type); the SysV x86-64 and
//    AAPCS64 calling conventions make these calls identical to matching ones. A trampoline
//    would need {callback, userData} storage that lives as long as the recording, which the C++
//    API gives no hook to free. (Clang's -fsanitize=function would flag these calls.)
//  - create-infos and properties are converted field by field (a null create-info gives the C++
//    defaults).
// The handle conversions are in c_api_handles.hpp, shared with c_api_vulkan.cpp.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "baton/baton.h"
#include "baton/baton.hpp"
#include "c_api_handles.hpp"

namespace {

using baton::Buffer;
using baton::BufferImageCopy;
using baton::CommandBuffer;
using baton::Device;
using baton::Image;
using baton::ImageInfo;
using baton::Instance;
using baton::NativeImage;
using baton::NativeImageLevel;
using baton::PhysicalDevice;
using baton::Queue;
using baton::Result;
using baton::Semaphore;
using baton::SemaphoreValue;
using baton::Span;
using baton::SubmitInfo;

// ---- the correspondence the conversions rely on ------------------------------------------------

#define BATON_C_SAME_VALUE(cValue, cppValue)                                            \
  static_assert(static_cast<int64_t>(cValue) == static_cast<int64_t>(cppValue), #cValue \
                " "                                                                     \
                "differs from " #cppValue)

BATON_C_SAME_VALUE(BATON_SUCCESS, Result::Success);
BATON_C_SAME_VALUE(BATON_NOT_READY, Result::NotReady);
BATON_C_SAME_VALUE(BATON_TIMEOUT, Result::Timeout);
BATON_C_SAME_VALUE(BATON_ERROR_INVALID_ARGUMENT, Result::ErrorInvalidArgument);
BATON_C_SAME_VALUE(BATON_ERROR_INVALID_HANDLE, Result::ErrorInvalidHandle);
BATON_C_SAME_VALUE(BATON_ERROR_DEVICE_MISMATCH, Result::ErrorDeviceMismatch);
BATON_C_SAME_VALUE(BATON_ERROR_NON_INCREASING_VALUE, Result::ErrorNonIncreasingValue);
BATON_C_SAME_VALUE(BATON_ERROR_SEMAPHORE_FAILED, Result::ErrorSemaphoreFailed);
BATON_C_SAME_VALUE(BATON_ERROR_DEVICE_LOST, Result::ErrorDeviceLost);
BATON_C_SAME_VALUE(BATON_ERROR_OUT_OF_HOST_MEMORY, Result::ErrorOutOfHostMemory);
BATON_C_SAME_VALUE(BATON_ERROR_OUT_OF_DEVICE_MEMORY, Result::ErrorOutOfDeviceMemory);
BATON_C_SAME_VALUE(BATON_ERROR_BACKEND_UNAVAILABLE, Result::ErrorBackendUnavailable);
BATON_C_SAME_VALUE(BATON_ERROR_NOT_SUPPORTED, Result::ErrorNotSupported);
BATON_C_SAME_VALUE(BATON_ERROR_HOST_CALL_FAILED, Result::ErrorHostCallFailed);
BATON_C_SAME_VALUE(BATON_ERROR_OBJECT_IN_USE, Result::ErrorObjectInUse);
BATON_C_SAME_VALUE(BATON_ERROR_DRIVER, Result::ErrorDriver);
BATON_C_SAME_VALUE(BATON_ERROR_INVALID_STATE, Result::ErrorInvalidState);
static_assert(sizeof(baton_result) == sizeof(Result));

BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_UNDEFINED, baton::ImageFormat::Undefined);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R8_UNORM, baton::ImageFormat::R8Unorm);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R8G8_UNORM, baton::ImageFormat::R8G8Unorm);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R8G8B8A8_UNORM, baton::ImageFormat::R8G8B8A8Unorm);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R8G8B8A8_SRGB, baton::ImageFormat::R8G8B8A8Srgb);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_B8G8R8A8_UNORM, baton::ImageFormat::B8G8R8A8Unorm);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_B8G8R8A8_SRGB, baton::ImageFormat::B8G8R8A8Srgb);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R8G8B8A8_UINT, baton::ImageFormat::R8G8B8A8Uint);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R8G8B8A8_SNORM, baton::ImageFormat::R8G8B8A8Snorm);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R16_SFLOAT, baton::ImageFormat::R16Sfloat);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R16G16_SFLOAT, baton::ImageFormat::R16G16Sfloat);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R16G16B16A16_SFLOAT, baton::ImageFormat::R16G16B16A16Sfloat);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R16G16B16A16_UNORM, baton::ImageFormat::R16G16B16A16Unorm);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R16G16B16A16_UINT, baton::ImageFormat::R16G16B16A16Uint);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R32_SFLOAT, baton::ImageFormat::R32Sfloat);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R32_UINT, baton::ImageFormat::R32Uint);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R32G32_SFLOAT, baton::ImageFormat::R32G32Sfloat);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R32G32B32A32_SFLOAT, baton::ImageFormat::R32G32B32A32Sfloat);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_R32G32B32A32_UINT, baton::ImageFormat::R32G32B32A32Uint);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_A2B10G10R10_UNORM_PACK32,
                   baton::ImageFormat::A2B10G10R10UnormPack32);
BATON_C_SAME_VALUE(BATON_IMAGE_FORMAT_B10G11R11_UFLOAT_PACK32,
                   baton::ImageFormat::B10G11R11UfloatPack32);
static_assert(sizeof(baton_image_format) == sizeof(baton::ImageFormat));

BATON_C_SAME_VALUE(BATON_BACKEND_KIND_HOST, baton::BackendKind::Host);
BATON_C_SAME_VALUE(BATON_BACKEND_KIND_CUDA, baton::BackendKind::Cuda);
BATON_C_SAME_VALUE(BATON_BACKEND_KIND_HIP, baton::BackendKind::Hip);
BATON_C_SAME_VALUE(BATON_BACKEND_KIND_COUNT, baton::kBackendKindCount);
BATON_C_SAME_VALUE(BATON_ALL_BACKENDS, baton::kAllBackends);
BATON_C_SAME_VALUE(BATON_BACKEND_BIT(BATON_BACKEND_KIND_CUDA),
                   baton::backendBit(baton::BackendKind::Cuda));
static_assert(sizeof(baton_backend_kind) == sizeof(baton::BackendKind));
BATON_C_SAME_VALUE(BATON_WAIT_MODE_ALL, baton::WaitMode::All);
BATON_C_SAME_VALUE(BATON_WAIT_MODE_ANY, baton::WaitMode::Any);
BATON_C_SAME_VALUE(BATON_MESSAGE_SEVERITY_INFO, baton::MessageSeverity::Info);
BATON_C_SAME_VALUE(BATON_MESSAGE_SEVERITY_WARNING, baton::MessageSeverity::Warning);
BATON_C_SAME_VALUE(BATON_MESSAGE_SEVERITY_ERROR, baton::MessageSeverity::Error);
static_assert(sizeof(baton_message_severity) == sizeof(baton::MessageSeverity));
BATON_C_SAME_VALUE(BATON_MEMORY_KIND_DEVICE, baton::MemoryKind::Device);
BATON_C_SAME_VALUE(BATON_MEMORY_KIND_HOST_PINNED, baton::MemoryKind::HostPinned);
BATON_C_SAME_VALUE(BATON_COMMAND_BUFFER_USAGE_REPLAY, baton::CommandBufferUsage::Replay);
BATON_C_SAME_VALUE(BATON_COMMAND_BUFFER_USAGE_GRAPH, baton::CommandBufferUsage::Graph);
static_assert(sizeof(baton_command_buffer_usage) == sizeof(baton::CommandBufferUsage));

static_assert(BATON_WAIT_FOREVER == baton::kWaitForever);
static_assert(BATON_HOST_WAIT_SPIN_DEFAULT_NS == baton::kHostWaitSpinDefaultNs);
static_assert(BATON_HOST_WAIT_SPIN_FOREVER == baton::kHostWaitSpinForever);
BATON_C_SAME_VALUE(BATON_MAX_WAIT_COUNT, baton::kMaxWaitCount);
BATON_C_SAME_VALUE(BATON_MAX_QUEUES, baton::kMaxQueues);
BATON_C_SAME_VALUE(BATON_MAX_SUBMIT_INFOS, baton::kMaxSubmitInfos);
BATON_C_SAME_VALUE(BATON_MAX_SUBMIT_ENTRIES, baton::kMaxSubmitEntries);
BATON_C_SAME_VALUE(BATON_MAX_UPDATE_SIZE, baton::kMaxUpdateSize);
static_assert(BATON_NATIVE_CAPTURABLE == baton::kNativeCapturable);
static_assert(BATON_HOST_CALL_INFALLIBLE == baton::kHostCallInfallible);
static_assert(BATON_CAPTURE_QUEUE_INDEX == baton::kCaptureQueueIndex);

static_assert(BATON_CAPABILITY_DEVICE_MEMORY == baton::kCapabilityDeviceMemory);
static_assert(BATON_CAPABILITY_HOST_PINNED_MEMORY == baton::kCapabilityHostPinnedMemory);
static_assert(BATON_CAPABILITY_STREAM_ORDERED_ALLOC == baton::kCapabilityStreamOrderedAlloc);
static_assert(BATON_CAPABILITY_STREAM_MEM_OPS_64 == baton::kCapabilityStreamMemOps64);
static_assert(BATON_CAPABILITY_NATIVE_TIMEPOINT_WAITS == baton::kCapabilityNativeTimepointWaits);
static_assert(BATON_CAPABILITY_EXTERNAL_SEMAPHORE_TIMELINE_FD ==
              baton::kCapabilityExternalSemaphoreTimelineFd);
static_assert(BATON_CAPABILITY_EXTERNAL_MEMORY_OPAQUE_FD ==
              baton::kCapabilityExternalMemoryOpaqueFd);
static_assert(BATON_CAPABILITY_HOST_MAPPED_DEVICE_MEMORY ==
              baton::kCapabilityHostMappedDeviceMemory);
static_assert(BATON_CAPABILITY_GRAPH_COMMAND_BUFFERS == baton::kCapabilityGraphCommandBuffers);
static_assert(BATON_CAPABILITY_SHAREABLE_MEMORY == baton::kCapabilityShareableMemory);
static_assert(BATON_BUFFER_SHAREABLE == baton::kBufferShareable);

#undef BATON_C_SAME_VALUE

// C and C++ objects that are handed over in place.
template <class C, class Cpp>
constexpr bool kSameLayout = sizeof(C) == sizeof(Cpp) && alignof(C) == alignof(Cpp) &&
                             std::is_standard_layout_v<Cpp>&& std::is_trivially_copyable_v<Cpp>;

static_assert(kSameLayout<baton_instance, Instance>);
static_assert(kSameLayout<baton_physical_device, PhysicalDevice>);
static_assert(kSameLayout<baton_device, Device>);
static_assert(kSameLayout<baton_queue, Queue>);
static_assert(kSameLayout<baton_semaphore, Semaphore>);
static_assert(kSameLayout<baton_command_buffer, CommandBuffer>);
static_assert(kSameLayout<baton_buffer, Buffer>);
static_assert(kSameLayout<baton_image, Image>);
static_assert(kSameLayout<baton_image_info, ImageInfo>);
static_assert(offsetof(baton_image_info, array_layers) == offsetof(ImageInfo, arrayLayers));
static_assert(kSameLayout<baton_buffer_image_copy, BufferImageCopy>);
static_assert(offsetof(baton_buffer_image_copy, buffer_row_length) ==
              offsetof(BufferImageCopy, bufferRowLength));
static_assert(offsetof(baton_buffer_image_copy, height) == offsetof(BufferImageCopy, height));
static_assert(kSameLayout<baton_native_image, NativeImage>);
static_assert(offsetof(baton_native_image, texture_object) == offsetof(NativeImage, textureObject));
static_assert(kSameLayout<baton_native_image_level, NativeImageLevel>);
static_assert(offsetof(baton_native_image_level, layer_pitch) ==
              offsetof(NativeImageLevel, layerPitch));
static_assert(sizeof(baton_semaphore) == sizeof(uint64_t));

static_assert(kSameLayout<baton_semaphore_value, SemaphoreValue>);
static_assert(offsetof(baton_semaphore_value, semaphore) == offsetof(SemaphoreValue, semaphore));
static_assert(offsetof(baton_semaphore_value, value) == offsetof(SemaphoreValue, value));

// A Span is {pointer, size}; that its members come in that order is checked by
// tests/c_api/c_api_test.cpp (its members are private).
static_assert(sizeof(Span<const SemaphoreValue>) == sizeof(void*) + sizeof(size_t));
static_assert(sizeof(Span<const CommandBuffer>) == sizeof(void*) + sizeof(size_t));
static_assert(kSameLayout<baton_submit_info, SubmitInfo>);
static_assert(offsetof(baton_submit_info, waits) == offsetof(SubmitInfo, waits));
static_assert(offsetof(baton_submit_info, command_buffers) == offsetof(SubmitInfo, commandBuffers));
static_assert(offsetof(baton_submit_info, signals) == offsetof(SubmitInfo, signals));

// baton_command_buffer_create_info is converted field by field; a binding that mirrors either
// struct still sees the one layout.
static_assert(sizeof(baton_command_buffer_create_info) == sizeof(baton::CommandBufferCreateInfo));
static_assert(offsetof(baton_command_buffer_create_info, usage) ==
              offsetof(baton::CommandBufferCreateInfo, usage));
static_assert(offsetof(baton_command_buffer_create_info, debug_name) ==
              offsetof(baton::CommandBufferCreateInfo, debugName));

// Native callbacks receive the C++ NativeQueue as a baton_native_queue.
static_assert(kSameLayout<baton_native_queue, baton::NativeQueue>);
static_assert(offsetof(baton_native_queue, backend) == offsetof(baton::NativeQueue, backend));
static_assert(offsetof(baton_native_queue, stream) == offsetof(baton::NativeQueue, stream));
static_assert(offsetof(baton_native_queue, device_ordinal) ==
              offsetof(baton::NativeQueue, deviceOrdinal));
static_assert(offsetof(baton_native_queue, queue_index) ==
              offsetof(baton::NativeQueue, queueIndex));

// ---- conversions ------------------------------------------------------------------------------

using baton::c_api::toC;
using baton::c_api::toCpp;
using baton::c_api::toCppOut;

Span<const SemaphoreValue> toCpp(const baton_semaphore_value* values, size_t count) noexcept {
  return {reinterpret_cast<const SemaphoreValue*>(values), count};
}

baton::InstanceCreateInfo toCpp(const baton_instance_create_info* info) noexcept {
  baton::InstanceCreateInfo out;
  if (info) {
    out.debugCallback = reinterpret_cast<baton::DebugCallback>(info->debug_callback);
    out.debugUserData = info->debug_user_data;
    out.backendMask = info->backend_mask;
    out.tracePath = info->trace_path;
  }
  return out;
}

baton::SemaphoreCreateInfo toCpp(const baton_semaphore_create_info* info) noexcept {
  baton::SemaphoreCreateInfo out;
  if (info) {
    out.initialValue = info->initial_value;
    out.debugName = info->debug_name;
    out.flags = info->flags;
  }
  return out;
}

baton::DeviceCreateInfo toCpp(const baton_device_create_info* info) noexcept {
  baton::DeviceCreateInfo out;
  if (info) {
    out.queueCount = info->queue_count;
    out.debugName = info->debug_name;
  }
  return out;
}

// An unknown memory kind passes through unchanged, for C++'s validation to report it.
baton::BufferCreateInfo toCpp(const baton_buffer_create_info* info) noexcept {
  baton::BufferCreateInfo out;
  if (info) {
    out.size = info->size;
    out.memory = static_cast<baton::MemoryKind>(info->memory);
    out.flags = info->flags;
  }
  return out;
}

// An unknown usage passes through unchanged, for C++'s validation to report it.
baton::CommandBufferCreateInfo toCpp(const baton_command_buffer_create_info* info) noexcept {
  baton::CommandBufferCreateInfo out;
  if (info) {
    out.usage = static_cast<baton::CommandBufferUsage>(info->usage);
    out.debugName = info->debug_name;
  }
  return out;
}

// A C native callback as the C++ type: a pointer parameter where C++ has a reference, the same in
// the ABI (see the top of this file). GCC's -Wcast-function-type says the types differ; the cast
// through void (*)() is its documented way of saying that this is meant.
baton::NativeCallback toCpp(baton_native_callback callback) noexcept {
  auto generic = reinterpret_cast<void (*)()>(callback);
  return reinterpret_cast<baton::NativeCallback>(generic);
}

void toC(const baton::BackendInfo& in, baton_backend_info* out) noexcept {
  out->kind = static_cast<baton_backend_kind>(in.kind);
  out->compiled = in.compiled;
  out->available = in.available;
  out->device_count = in.deviceCount;
  static_assert(sizeof out->reason == sizeof in.reason);
  std::memcpy(out->reason, in.reason, sizeof out->reason);
}

void toC(const baton::PhysicalDeviceProperties& in,
         baton_physical_device_properties* out) noexcept {
  out->backend = static_cast<baton_backend_kind>(in.backend);
  out->ordinal = in.ordinal;
  static_assert(sizeof out->name == sizeof in.name && sizeof out->uuid == sizeof in.uuid &&
                sizeof out->arch == sizeof in.arch);
  std::memcpy(out->name, in.name, sizeof out->name);
  std::memcpy(out->uuid, in.uuid, sizeof out->uuid);
  std::memcpy(out->arch, in.arch, sizeof out->arch);
  out->compute_major = in.computeMajor;
  out->compute_minor = in.computeMinor;
  out->total_memory = in.totalMemory;
  out->max_queues = in.maxQueues;
  out->capabilities = in.capabilities;
}

}  // namespace

extern "C" {

// ---- results, names ---------------------------------------------------------------------------

const char* baton_result_name(baton_result result) {
  return baton::resultName(static_cast<Result>(result));
}

const char* baton_last_error_message(void) { return baton::lastErrorMessage(); }

const char* baton_backend_name(baton_backend_kind kind) {
  return baton::backendName(static_cast<baton::BackendKind>(kind));
}

size_t baton_capability_names(uint64_t capabilities, char* buffer, size_t capacity) {
  return baton::capabilityNames(capabilities, buffer, capacity);
}

// ---- instance ---------------------------------------------------------------------------------

baton_result baton_create_instance(const baton_instance_create_info* info,
                                   baton_instance* instance) {
  return toC(baton::createInstance(toCpp(info), toCppOut<Instance>(instance)));
}

baton_result baton_instance_destroy(baton_instance instance) {
  return toC(toCpp<Instance>(instance).destroy());
}

baton_result baton_instance_enumerate_backends(baton_instance instance, uint32_t* count,
                                               baton_backend_info* infos) {
  if (!infos || !count) return toC(toCpp<Instance>(instance).enumerateBackends(count, nullptr));
  // At most kBackendKindCount entries exist, so asking for no more than that changes nothing.
  baton::BackendInfo cpp[baton::kBackendKindCount];
  uint32_t n = *count < baton::kBackendKindCount ? *count : baton::kBackendKindCount;
  Result r = toCpp<Instance>(instance).enumerateBackends(&n, cpp);
  if (!baton::isError(r)) {
    for (uint32_t i = 0; i < n; ++i) toC(cpp[i], &infos[i]);
    *count = n;
  }
  return toC(r);
}

baton_result baton_instance_enumerate_physical_devices(baton_instance instance, uint32_t* count,
                                                       baton_physical_device* devices) {
  return toC(
      toCpp<Instance>(instance).enumeratePhysicalDevices(count, toCppOut<PhysicalDevice>(devices)));
}

baton_result baton_instance_create_semaphore(baton_instance instance,
                                             const baton_semaphore_create_info* info,
                                             baton_semaphore* semaphore) {
  return toC(
      toCpp<Instance>(instance).createSemaphore(toCpp(info), toCppOut<Semaphore>(semaphore)));
}

baton_result baton_instance_import_semaphore(baton_instance instance,
                                             const baton_semaphore_import_info* info,
                                             baton_semaphore* semaphore) {
  baton::SemaphoreImportInfo in;  // null info: no descriptor, refused as such
  if (info) {
    in.fd = info->fd;
    in.debugName = info->debug_name;
  }
  return toC(toCpp<Instance>(instance).importSemaphore(in, toCppOut<Semaphore>(semaphore)));
}

baton_result baton_instance_wait_semaphores(baton_instance instance,
                                            const baton_semaphore_value* waits, size_t wait_count,
                                            baton_wait_mode mode, uint64_t timeout_ns) {
  return toC(toCpp<Instance>(instance).waitSemaphores(
      toCpp(waits, wait_count), static_cast<baton::WaitMode>(mode), timeout_ns));
}

baton_result baton_instance_create_device(baton_instance instance,
                                          baton_physical_device physical_device,
                                          const baton_device_create_info* info,
                                          baton_device* device) {
  return toC(toCpp<Instance>(instance).createDevice(toCpp<PhysicalDevice>(physical_device),
                                                    toCpp(info), toCppOut<Device>(device)));
}

// ---- physical device --------------------------------------------------------------------------

baton_result baton_physical_device_get_properties(baton_physical_device physical_device,
                                                  baton_physical_device_properties* properties) {
  baton::PhysicalDeviceProperties cpp;
  Result r = toCpp<PhysicalDevice>(physical_device).getProperties(properties ? &cpp : nullptr);
  if (!baton::isError(r)) toC(cpp, properties);
  return toC(r);
}

// ---- device -----------------------------------------------------------------------------------

baton_result baton_device_destroy(baton_device device) {
  return toC(toCpp<Device>(device).destroy());
}

baton_result baton_device_get_queue(baton_device device, uint32_t index, baton_queue* queue) {
  return toC(toCpp<Device>(device).getQueue(index, toCppOut<Queue>(queue)));
}

baton_result baton_device_get_queue_count(baton_device device, uint32_t* count) {
  return toC(toCpp<Device>(device).getQueueCount(count));
}

baton_result baton_device_get_physical_device(baton_device device,
                                              baton_physical_device* physical_device) {
  return toC(toCpp<Device>(device).getPhysicalDevice(toCppOut<PhysicalDevice>(physical_device)));
}

baton_result baton_device_create_command_buffer(baton_device device,
                                                baton_command_buffer* command_buffer) {
  return toC(toCpp<Device>(device).createCommandBuffer(toCppOut<CommandBuffer>(command_buffer)));
}

baton_result baton_device_create_command_buffer_with_info(
    baton_device device, const baton_command_buffer_create_info* info,
    baton_command_buffer* command_buffer) {
  return toC(toCpp<Device>(device).createCommandBuffer(toCpp(info),
                                                       toCppOut<CommandBuffer>(command_buffer)));
}

baton_result baton_device_create_buffer(baton_device device, const baton_buffer_create_info* info,
                                        baton_buffer* buffer) {
  return toC(toCpp<Device>(device).createBuffer(toCpp(info), toCppOut<Buffer>(buffer)));
}

baton_result baton_device_import_buffer(baton_device device, const baton_buffer_import_info* info,
                                        baton_buffer* buffer) {
  baton::BufferImportInfo in;  // null info: no descriptor, refused as such
  if (info) {
    in.fd = info->fd;
    in.size = info->size;
    in.memory = static_cast<baton::MemoryKind>(info->memory);
  }
  return toC(toCpp<Device>(device).importBuffer(in, toCppOut<Buffer>(buffer)));
}

baton_result baton_device_wait_idle(baton_device device, uint64_t timeout_ns) {
  return toC(toCpp<Device>(device).waitIdle(timeout_ns));
}

baton_result baton_device_wait_semaphores(baton_device device, const baton_semaphore_value* waits,
                                          size_t wait_count, baton_wait_mode mode,
                                          uint64_t timeout_ns) {
  return toC(toCpp<Device>(device).waitSemaphores(toCpp(waits, wait_count),
                                                  static_cast<baton::WaitMode>(mode), timeout_ns));
}

baton_result baton_device_set_host_wait_spin(baton_device device, uint64_t spin_ns) {
  return toC(toCpp<Device>(device).setHostWaitSpin(spin_ns));
}

// ---- queue ------------------------------------------------------------------------------------

baton_result baton_queue_submit(baton_queue queue, const baton_submit_info* submits,
                                size_t submit_count) {
  return toC(toCpp<Queue>(queue).submit(
      Span<const SubmitInfo>(reinterpret_cast<const SubmitInfo*>(submits), submit_count)));
}

baton_result baton_queue_alloca_buffer(baton_queue queue, const baton_semaphore_value* waits,
                                       size_t wait_count, const baton_buffer_create_info* info,
                                       const baton_semaphore_value* signals, size_t signal_count,
                                       baton_buffer* buffer) {
  return toC(toCpp<Queue>(queue).allocaBuffer(toCpp(waits, wait_count), toCpp(info),
                                              toCpp(signals, signal_count),
                                              toCppOut<Buffer>(buffer)));
}

baton_result baton_queue_dealloca_buffer(baton_queue queue, const baton_semaphore_value* waits,
                                         size_t wait_count, baton_buffer buffer,
                                         const baton_semaphore_value* signals,
                                         size_t signal_count) {
  return toC(toCpp<Queue>(queue).deallocaBuffer(toCpp(waits, wait_count), toCpp<Buffer>(buffer),
                                                toCpp(signals, signal_count)));
}

baton_result baton_queue_wait_idle(baton_queue queue, uint64_t timeout_ns) {
  return toC(toCpp<Queue>(queue).waitIdle(timeout_ns));
}

baton_result baton_queue_get_device(baton_queue queue, baton_device* device) {
  return toC(toCpp<Queue>(queue).getDevice(toCppOut<Device>(device)));
}

// ---- semaphore --------------------------------------------------------------------------------

baton_result baton_semaphore_destroy(baton_semaphore semaphore) {
  return toC(toCpp<Semaphore>(semaphore).destroy());
}

baton_result baton_semaphore_get_value(baton_semaphore semaphore, uint64_t* value) {
  return toC(toCpp<Semaphore>(semaphore).getValue(value));
}

baton_result baton_semaphore_export_fd(baton_semaphore semaphore, int* fd) {
  return toC(toCpp<Semaphore>(semaphore).exportFd(fd));
}

baton_result baton_semaphore_signal(baton_semaphore semaphore, uint64_t value) {
  return toC(toCpp<Semaphore>(semaphore).signal(value));
}

baton_result baton_semaphore_fail(baton_semaphore semaphore, const char* reason) {
  return toC(toCpp<Semaphore>(semaphore).fail(reason));
}

baton_result baton_semaphore_get_failure_reason(baton_semaphore semaphore, char* buffer,
                                                size_t capacity) {
  return toC(toCpp<Semaphore>(semaphore).getFailureReason(buffer, capacity));
}

baton_result baton_semaphore_wait(baton_semaphore semaphore, uint64_t value, uint64_t timeout_ns) {
  return toC(toCpp<Semaphore>(semaphore).wait(value, timeout_ns));
}

// ---- command buffer ---------------------------------------------------------------------------

baton_result baton_command_buffer_destroy(baton_command_buffer command_buffer) {
  return toC(toCpp<CommandBuffer>(command_buffer).destroy());
}

baton_result baton_command_buffer_begin(baton_command_buffer command_buffer) {
  return toC(toCpp<CommandBuffer>(command_buffer).begin());
}

baton_result baton_command_buffer_end(baton_command_buffer command_buffer) {
  return toC(toCpp<CommandBuffer>(command_buffer).end());
}

baton_result baton_command_buffer_copy_buffer(baton_command_buffer command_buffer, baton_buffer src,
                                              uint64_t src_offset, baton_buffer dst,
                                              uint64_t dst_offset, uint64_t size) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .copyBuffer(toCpp<Buffer>(src), src_offset, toCpp<Buffer>(dst), dst_offset, size));
}

baton_result baton_command_buffer_fill_buffer(baton_command_buffer command_buffer, baton_buffer dst,
                                              uint64_t offset, uint64_t size, uint32_t pattern) {
  return toC(
      toCpp<CommandBuffer>(command_buffer).fillBuffer(toCpp<Buffer>(dst), offset, size, pattern));
}

baton_result baton_command_buffer_update_buffer(baton_command_buffer command_buffer,
                                                baton_buffer dst, uint64_t offset, uint64_t size,
                                                const void* data) {
  return toC(
      toCpp<CommandBuffer>(command_buffer).updateBuffer(toCpp<Buffer>(dst), offset, size, data));
}

baton_result baton_command_buffer_host_call(baton_command_buffer command_buffer,
                                            baton_host_callback callback, void* user_data) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .hostCall(reinterpret_cast<baton::HostCallback>(callback), user_data));
}

baton_result baton_command_buffer_host_call_flags(baton_command_buffer command_buffer,
                                                  baton_host_callback callback, void* user_data,
                                                  uint32_t flags) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .hostCall(reinterpret_cast<baton::HostCallback>(callback), user_data, flags));
}

baton_result baton_command_buffer_native(baton_command_buffer command_buffer,
                                         baton_native_callback callback, void* user_data) {
  return toC(toCpp<CommandBuffer>(command_buffer).native(toCpp(callback), user_data));
}

baton_result baton_command_buffer_native_flags(baton_command_buffer command_buffer,
                                               baton_native_callback callback, void* user_data,
                                               uint32_t flags) {
  return toC(toCpp<CommandBuffer>(command_buffer).native(toCpp(callback), user_data, flags));
}

// ---- image ------------------------------------------------------------------------------------

const char* baton_image_format_name(baton_image_format format) {
  return baton::imageFormatName(static_cast<baton::ImageFormat>(format));
}

uint32_t baton_image_format_texel_bytes(baton_image_format format) {
  return baton::imageFormatTexelBytes(static_cast<baton::ImageFormat>(format));
}

baton_result baton_image_destroy(baton_image image) { return toC(toCpp<Image>(image).destroy()); }

baton_result baton_image_get_info(baton_image image, baton_image_info* info) {
  return toC(toCpp<Image>(image).getInfo(reinterpret_cast<ImageInfo*>(info)));
}

baton_result baton_image_get_native(baton_image image, baton_native_image* native) {
  return toC(toCpp<Image>(image).getNative(reinterpret_cast<NativeImage*>(native)));
}

baton_result baton_image_get_native_level(baton_image image, uint32_t level,
                                          baton_native_image_level* native) {
  return toC(
      toCpp<Image>(image).getNativeLevel(level, reinterpret_cast<NativeImageLevel*>(native)));
}

baton_result baton_command_buffer_copy_buffer_to_image(baton_command_buffer command_buffer,
                                                       baton_buffer src, baton_image dst,
                                                       const baton_buffer_image_copy* regions,
                                                       size_t region_count) {
  Span<const BufferImageCopy> span(reinterpret_cast<const BufferImageCopy*>(regions),
                                   regions ? region_count : 0);
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .copyBufferToImage(toCpp<Buffer>(src), toCpp<Image>(dst), span));
}

baton_result baton_command_buffer_copy_image_to_buffer(baton_command_buffer command_buffer,
                                                       baton_image src, baton_buffer dst,
                                                       const baton_buffer_image_copy* regions,
                                                       size_t region_count) {
  Span<const BufferImageCopy> span(reinterpret_cast<const BufferImageCopy*>(regions),
                                   regions ? region_count : 0);
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .copyImageToBuffer(toCpp<Image>(src), toCpp<Buffer>(dst), span));
}

// ---- buffer -----------------------------------------------------------------------------------

baton_result baton_buffer_destroy(baton_buffer buffer) {
  return toC(toCpp<Buffer>(buffer).destroy());
}

baton_result baton_buffer_get_size(baton_buffer buffer, uint64_t* size) {
  return toC(toCpp<Buffer>(buffer).getSize(size));
}

baton_result baton_buffer_export_fd(baton_buffer buffer, int* fd) {
  return toC(toCpp<Buffer>(buffer).exportFd(fd));
}

baton_result baton_buffer_map(baton_buffer buffer, void** host_pointer) {
  return toC(toCpp<Buffer>(buffer).map(host_pointer));
}

baton_result baton_buffer_get_device_address(baton_buffer buffer, uint64_t* address) {
  return toC(toCpp<Buffer>(buffer).getDeviceAddress(address));
}

}  // extern "C"
