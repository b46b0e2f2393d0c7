// Public entry points of baton/vulkan.hpp: validation, the choice between native and bridged
// mode, semaphore and memory import, device matching.
//
// Native mode (docs/architecture.md, 'Vulkan interop: native and bridged'), where the baton
// device's backend imports OPAQUE_FD handles (DeviceImpl::importsTimelineFd / importsMemoryFd: the
// CUDA backend):
//   - semaphores: the fd (given, or exported here with vkGetSemaphoreFdKHR) is imported into the
//     device; the VulkanMirror holds the import (ExternalTimeline::onDevice). That device's queues
//     signal it in stream order next to their event record, and wait for it GPU-side for values
//     nothing recorded covers yet (the scheduler, Queue::waitExternally), so Vulkan -> CUDA and
//     CUDA -> Vulkan edges involve no host. Everything else stays as in bridged mode: values
//     raised elsewhere (host signals, host queues, other devices) are forwarded with
//     vkSignalSemaphore, which also releases GPU-side waits; Vulkan's own signals are observed
//     by the watcher for host waiters; host waits on values baton queues signal use baton's
//     events, never vkWaitSemaphores (10 ms to notice a CUDA signal on the NVIDIA driver).
//   - memory: the fd is imported and [offset, offset + size) mapped into the device's address
//     space; the buffer's import object releases both.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "api_entry.hpp"
#include "baton/vulkan.hpp"
#include "bridge.hpp"
#include "fd_timeline.hpp"
#include "image_formats.hpp"
#include "vulkan_functions.hpp"

namespace baton {

using interop::VulkanFunctions;
using interop::VulkanMirror;

namespace {

void copyText(char* dst, size_t capacity, const std::string& text) {
  size_t n = std::min(capacity - 1, text.size());
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

// Ownership rule of every fd field: baton takes it only on success, so a bad one is reported
// before anything else happens.
Status checkFd(int fd, const char* field) {
  if (fd == -1) return Status();
  if (fd < -1)
    return error(Result::ErrorInvalidArgument, "%s is %d: pass -1 or an open fd", field, fd);
  if (fcntl(fd, F_GETFD) == -1)
    return error(Result::ErrorInvalidArgument, "%s %d is not an open file descriptor (%s)", field,
                 fd, std::strerror(errno));
  return Status();
}

// A descriptor handed to a driver import. The driver keeps what it imports, and the NVIDIA
// driver also closed a descriptor it refused (a pipe's memory import, on the H100): so the driver
// gets a duplicate, and the caller's descriptor is untouched when the import fails. After a
// failure the duplicate is closed unless the driver closed it already, which is checked by
// identity (device and inode), so that a number another thread reused meanwhile is never closed.
class DriverFd {
 public:
  explicit DriverFd(int original) {
    struct stat st {};
    if (fstat(original, &st) != 0) return;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    dup_ = fcntl(original, F_DUPFD_CLOEXEC, 0);
  }
  ~DriverFd() {
    struct stat st {};
    if (dup_ >= 0 && fstat(dup_, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) close(dup_);
  }
  DriverFd(const DriverFd&) = delete;
  DriverFd& operator=(const DriverFd&) = delete;
  // Success: the duplicate, or ErrorOutOfHostMemory when none could be made.
  Status status() const {
    return dup_ >= 0 ? Status()
                     : error(Result::ErrorOutOfHostMemory, "duplicating a descriptor: %s",
                             std::strerror(errno));
  }
  int get() const noexcept { return dup_; }
  // The import succeeded: the duplicate is the driver's.
  void taken() noexcept { dup_ = -1; }

 private:
  int dup_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

bool validRequest(InteropModeRequest r) {
  return r == InteropModeRequest::Auto || r == InteropModeRequest::Native ||
         r == InteropModeRequest::Bridged;
}

enum class ImportKind { Semaphore, Memory, Image };

// Why `device` cannot import `kind` natively ("" when it can), as far as the baton device goes:
// its backend's capability, and whether this build and driver implement the import.
std::string whyNoDeviceImport(const core::Device& device, ImportKind kind) {
  const PhysicalDeviceProperties& p = device.physical()->properties;
  const core::DeviceImpl& impl = *device.impl();
  bool capable = false, provided = false;
  const char* what = "";
  const char* hip = "";  // HIP's limits are the API's: they will not change with a driver update
  switch (kind) {
    case ImportKind::Semaphore:
      capable = p.capabilities & kCapabilityExternalSemaphoreTimelineFd;
      provided = impl.importsTimelineFd();
      what = "external timeline semaphores";
      hip = ": HIP (ROCm 5.2) has no timeline external-semaphore handle type";
      break;
    case ImportKind::Memory:
      capable = p.capabilities & kCapabilityExternalMemoryOpaqueFd;
      provided = impl.importsMemoryFd();
      what = "external memory";
      break;
    case ImportKind::Image:
      capable = provided = impl.importsImageFd();
      what = "Vulkan images";
      hip = ": HIP (ROCm 5.2) has no call that maps external memory as a mipmapped array";
      break;
  }
  if (!capable)
    return format("baton device %s (the %s backend) cannot import %s%s", device.label().c_str(),
                  backendName(p.backend), what, p.backend == BackendKind::Hip ? hip : "");
  if (!provided)
    return format("native import is not implemented by the %s backend in this build",
                  backendName(p.backend));
  return "";
}

struct ModeChoice {
  InteropMode mode = InteropMode::Bridged;
  std::string reason;  // why this mode
  bool uuidMismatch = false;
  Status refusal;  // set when Native was requested and is impossible
};

// Collects every reason native import is impossible (all of them, so that one message tells the
// whole story; `extra`: reasons of the object itself, such as an image's tiling), then applies
// the request.
ModeChoice chooseMode(ImportKind kind, InteropModeRequest request, const VulkanFunctions& fns,
                      bool deviceChecked, core::Device* device, bool exportable,
                      const std::vector<std::string>& extra = {}) {
  const bool semaphore = kind == ImportKind::Semaphore;
  std::vector<std::string> why;
  if (!device) {
    why.push_back("no baton device was given to import into natively");
  } else {
    const PhysicalDeviceProperties& p = device->physical()->properties;
    std::string deviceWhy = whyNoDeviceImport(*device, kind);
    if (!deviceWhy.empty()) why.push_back(deviceWhy);
    if (std::memcmp(p.uuid, fns.deviceUuid, VK_UUID_SIZE) != 0) {
      if (p.backend != BackendKind::Host) {
        why.push_back(format("baton device %s (UUID %s) is not the Vulkan device %s (UUID %s)",
                             device->label().c_str(), interop::uuidText(p.uuid).c_str(),
                             fns.label.c_str(), interop::uuidText(fns.deviceUuid).c_str()));
        // Only a GPU can be the wrong GPU; the host backend is never the Vulkan device.
      }
    }
  }
  const char* ext = semaphore ? VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME
                              : VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
  bool offered = semaphore ? fns.hasExternalSemaphoreFd : fns.hasExternalMemoryFd;
  bool enabled = semaphore ? fns.getSemaphoreFd != nullptr : fns.getMemoryFd != nullptr;
  if (!offered) {
    why.push_back(format("%s is not supported by the Vulkan device %s", ext, fns.label.c_str()));
  } else if (deviceChecked && !enabled) {
    why.push_back(format("%s is not enabled on the VkDevice", ext));
  }
  if (semaphore && offered && !exportable)
    why.push_back(
        "the semaphore was not created exportable as OPAQUE_FD "
        "(VkExportSemaphoreCreateInfo) and no fd was given");
  why.insert(why.end(), extra.begin(), extra.end());

  ModeChoice choice;
  for (const std::string& w : why)
    if (w.find("UUID") != std::string::npos) choice.uuidMismatch = true;
  std::string list;
  for (size_t i = 0; i < why.size(); ++i) list += (i ? "; " : "") + why[i];

  if (request == InteropModeRequest::Bridged) {
    choice.reason = "bridged mode was requested (InteropModeRequest::Bridged)";
    return choice;
  }
  if (why.empty() && semaphore && request == InteropModeRequest::Auto) {
    // Possible, but slower in every hop measured but one (bench/interop, H100 with the NVIDIA
    // driver 580): each queue hop between Vulkan and CUDA, and a CUDA signal seen by
    // vkWaitSemaphores (milliseconds natively, while bridged forwards it); only a Vulkan host
    // signal -> CUDA queue was faster natively (docs/performance.md, 'Measurements behind design
    // choices'). The driver's own path for a GPU-side wait or signal of a shared timeline is what
    // costs a fraction of a millisecond, and a Vulkan-side signal or wait by the host avoids it. So
    // Auto bridges semaphores on every device; Native stays available on request
    // (InteropModeRequest::Native).
    choice.reason =
        "bridged, although native import is possible: forwarding through the host is faster on "
        "the measured driver (NVIDIA: a Vulkan <-> CUDA queue hop ~0.3 ms natively, 9-35 us "
        "bridged); request InteropModeRequest::Native for GPU-side waits and signals";
    return choice;
  }
  if (why.empty()) {
    choice.mode = InteropMode::Native;
    choice.reason = "the baton device imports the Vulkan handle natively";
    return choice;
  }
  if (request == InteropModeRequest::Native) {
    choice.refusal =
        Status(choice.uuidMismatch ? Result::ErrorDeviceMismatch : Result::ErrorNotSupported,
               std::string(kind == ImportKind::Image ? "native image import" : "native import") +
                   " is impossible: " + list);
    return choice;
  }
  choice.reason = "bridged, because native import is impossible: " + list;
  return choice;
}

// Looks up an optional baton device and checks it belongs to `instance` (when known).
Status findOptionalDevice(Device handle, const core::Instance* instance, Ref<core::Device>* out) {
  if (!handle) return Status();
  Status st;
  *out = find<core::Device>(handle.raw(), ObjectType::Device, "device", &st);
  if (!*out) return st;
  if (instance && (*out)->instance() != instance)
    return error(Result::ErrorDeviceMismatch, "device %s belongs to another instance",
                 (*out)->label().c_str());
  return Status();
}

// Hands a descriptor to a driver import, `import(fd)`: the caller's `given`, or (-1) one
// `exportFd` makes, closed here once the import is done or failed. The driver always gets a
// duplicate (DriverFd), so that the caller's descriptor is untouched until the whole import has
// succeeded; the caller's is then closed by the entry point, last.
template <class Export, class Import>
Status importDescriptor(int given, Export&& exportFd, Import&& import) {
  int fd = given;
  if (fd < 0) BATON_TRY(exportFd(&fd));
  DriverFd dup(fd);
  Status st = dup.status();
  if (st.ok()) st = import(dup.get());
  if (st.ok()) dup.taken();
  if (given < 0) close(fd);
  return st;
}

// vkGetSemaphoreFdKHR / vkGetMemoryFdKHR: a new OPAQUE_FD of `semaphore` / `memory`.
Status exportSemaphoreFd(const VulkanFunctions& fns, VkDevice device, VkSemaphore semaphore,
                         int* fd) {
  auto get =
      interop::vkStruct<VkSemaphoreGetFdInfoKHR>(VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR);
  get.semaphore = semaphore;
  get.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkResult r = fns.getSemaphoreFd(device, &get, fd);
  return r == VK_SUCCESS ? Status() : interop::vkFailure("vkGetSemaphoreFdKHR (OPAQUE_FD)", r);
}
Status exportMemoryFd(const VulkanFunctions& fns, VkDevice device, VkDeviceMemory memory, int* fd) {
  auto get = interop::vkStruct<VkMemoryGetFdInfoKHR>(VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR);
  get.memory = memory;
  get.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkResult r = fns.getMemoryFd(device, &get, fd);
  return r == VK_SUCCESS ? Status() : interop::vkFailure("vkGetMemoryFdKHR (OPAQUE_FD)", r);
}

// Native semaphore import into `device` (the descriptor as importDescriptor).
Status importTimeline(const VulkanFunctions& fns, const VulkanSemaphoreImportInfo& info,
                      core::Device& device, Ref<core::DeviceTimeline>* out) {
  return importDescriptor(
             info.fd,
             [&](int* fd) {
               return exportSemaphoreFd(fns, info.vulkan.device, info.semaphore, fd);
             },
             [&](int fd) { return device.impl()->importTimelineFd(fd, device.handle, out); })
      .context("importing the timeline semaphore into " + device.label());
}

// Native memory import into `device`: *allocation and *keep as DeviceImpl::importMemoryFd; the
// descriptor as importDescriptor.
Status importMemoryNative(const VulkanFunctions& fns, const VulkanMemoryImportInfo& info,
                          core::Device& device, core::Allocation* allocation, Ref<Object>* keep) {
  return importDescriptor(
             info.fd,
             [&](int* fd) { return exportMemoryFd(fns, info.vulkan.device, info.memory, fd); },
             [&](int fd) {
               core::MemoryFdImport import;
               import.fd = fd;
               import.allocationSize = info.allocationSize;
               import.offset = info.offset;
               import.size = info.size;
               import.dedicated = info.dedicated;
               return device.impl()->importMemoryFd(import, allocation, keep);
             })
      .context("importing Vulkan memory into " + device.label());
}

// Loads the functions of `vulkan` (instance and device level) and checks that `memoryTypeIndex`
// is one of its memory types (*props: the memory properties).
Status loadForMemoryImport(const VulkanDevice& vulkan, uint32_t memoryTypeIndex,
                           VulkanFunctions* fns, VkPhysicalDeviceMemoryProperties* props) {
  BATON_TRY(interop::loadInstance(vulkan, fns));
  BATON_TRY(interop::loadDevice(vulkan, fns));
  fns->getPhysicalDeviceMemoryProperties(vulkan.physicalDevice, props);
  if (memoryTypeIndex >= props->memoryTypeCount)
    return error(Result::ErrorInvalidArgument,
                 "memoryTypeIndex %u is not a memory type of %s (it has %u): state the "
                 "VkMemoryAllocateInfo::memoryTypeIndex the memory was allocated with",
                 memoryTypeIndex, fns->label.c_str(), props->memoryTypeCount);
  return Status();
}

// Bridged imports share memory by mapping: a HOST_VISIBLE | HOST_COHERENT type (no flushes to
// order). `what` names the import in messages, `reason` says why bridged.
Status checkHostCoherent(const VulkanFunctions& fns, const VkPhysicalDeviceMemoryProperties& props,
                         uint32_t type, const char* what, const std::string& reason) {
  const VkMemoryPropertyFlags needed =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkMemoryPropertyFlags flags = props.memoryTypes[type].propertyFlags;
  if ((flags & needed) != needed)
    return error(Result::ErrorNotSupported,
                 "bridged %s import shares memory by mapping, so it needs a HOST_VISIBLE | "
                 "HOST_COHERENT memory type; type %u of %s has flags 0x%x (%s)",
                 what, type, fns.label.c_str(), flags, reason.c_str());
  return Status();
}

// Maps [offset, +size) of `memory` for a bridged import, unless the caller mapped it (`given`).
// *mapped: baton mapped it (and unmaps it with the import).
Status mapForBridge(const VulkanFunctions& fns, VkDevice device, VkDeviceMemory memory,
                    VkDeviceSize offset, VkDeviceSize size, void* given, void** host,
                    bool* mapped) {
  *mapped = false;
  *host = given;
  if (given) return Status();
  VkResult r = fns.mapMemory(device, memory, offset, size, 0, host);
  if (r != VK_SUCCESS)
    return interop::vkFailure(
        "vkMapMemory (is the memory already mapped? Vulkan allows one "
        "mapping per allocation: pass it as hostPointer)",
        r);
  *mapped = true;
  return Status();
}

Status importSemaphore(const Ref<core::Instance>& inst, const VulkanSemaphoreImportInfo& info,
                       Semaphore* out, InteropMode* mode = nullptr) {
  if (!info.semaphore)
    return error(Result::ErrorInvalidArgument, "VulkanSemaphoreImportInfo::semaphore is null");
  if (info.semaphoreType == VK_SEMAPHORE_TYPE_MAX_ENUM)
    return error(Result::ErrorInvalidArgument,
                 "VulkanSemaphoreImportInfo::semaphoreType is not stated: Vulkan cannot be asked "
                 "a semaphore's type, so state the VkSemaphoreTypeCreateInfo::semaphoreType it was "
                 "created with");
  if (info.semaphoreType != VK_SEMAPHORE_TYPE_TIMELINE)
    return error(Result::ErrorNotSupported,
                 "only timeline semaphores can be imported (semaphoreType is %d, not "
                 "VK_SEMAPHORE_TYPE_TIMELINE): a binary semaphore cannot carry baton's timeline",
                 static_cast<int>(info.semaphoreType));
  if (!validRequest(info.mode))
    return error(Result::ErrorInvalidArgument, "unknown InteropModeRequest %u",
                 static_cast<unsigned>(info.mode));
  if (info.failurePolicy != VulkanFailurePolicy::Hold &&
      info.failurePolicy != VulkanFailurePolicy::Release)
    return error(Result::ErrorInvalidArgument, "unknown VulkanFailurePolicy %u",
                 static_cast<unsigned>(info.failurePolicy));
  BATON_TRY(checkFd(info.fd, "VulkanSemaphoreImportInfo::fd"));
  Ref<core::Device> device;
  BATON_TRY(findOptionalDevice(info.device, inst.get(), &device));

  VulkanFunctions fns;
  BATON_TRY(interop::loadInstance(info.vulkan, &fns));
  BATON_TRY(interop::loadDevice(info.vulkan, &fns));
  if (!fns.timelineSemaphores)
    return error(Result::ErrorNotSupported, "the Vulkan device %s has no timeline semaphores",
                 fns.label.c_str());

  bool exportable =
      info.fd >= 0 || (info.exportHandleTypes & VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT);
  ModeChoice choice =
      chooseMode(ImportKind::Semaphore, info.mode, fns, true, device.get(), exportable);
  if (!choice.refusal.ok()) return choice.refusal;
  uint64_t initial = 0;
  VkResult r = fns.getSemaphoreCounterValue(info.vulkan.device, info.semaphore, &initial);
  if (r != VK_SUCCESS)
    return interop::vkFailure("vkGetSemaphoreCounterValue (reading the value to import)", r);
  Ref<core::DeviceTimeline> external;
  if (choice.mode == InteropMode::Native) {
    Status imported = importTimeline(fns, info, *device, &external);
    if (!imported.ok()) {
      if (info.mode == InteropModeRequest::Native) return imported;
      choice.mode = InteropMode::Bridged;  // Auto: still usable, bridged
      choice.reason = "bridged, because native import failed: " + imported.message();
    }
  }

  std::string name =
      info.debugName && info.debugName[0]
          ? info.debugName
          : format("vulkan-timeline-0x%llx",
                   static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(info.semaphore)));
  Ref<core::Semaphore> s = makeRef<core::Semaphore>(inst, initial, name);
  Ref<VulkanMirror> mirror =
      makeRef<VulkanMirror>(fns, info.vulkan.device, info.semaphore, info.failurePolicy,
                            choice.mode, choice.reason, initial, std::move(external));
  s->addExternal(mirror);
  BATON_TRY(mirror->attach(s.get()));
  uint64_t h = HandleTable::get().insert(s, ObjectType::Semaphore);
  if (!h) {
    mirror->detach();
    return Status(Result::ErrorOutOfHostMemory, "handle table is full");
  }
  s->setHandle(h);
  inst->children.add(h, ObjectType::Semaphore);
  if (info.fd >= 0) close(info.fd);  // baton's now (native: the driver has a duplicate)
  core::message(inst.get(), choice.uuidMismatch ? MessageSeverity::Warning : MessageSeverity::Info,
                "semaphore '" + name + "' imported from Vulkan device " + fns.label + " in " +
                    interopModeName(choice.mode) + " mode: " + choice.reason);
  *out = Semaphore(h);
  if (mode) *mode = choice.mode;
  return Status();
}

// Vulkan memory that a baton Buffer uses: released with the buffer's last reference.
class ImportedMemory final : public Object {
 public:
  ImportedMemory(const VulkanFunctions& fns, VkDevice device, VkDeviceMemory memory, bool mapped,
                 InteropMode mode, std::string reason, Ref<Object> native = {},
                 VkImage image = VK_NULL_HANDLE)
      : fns(fns),
        device(device),
        memory(memory),
        mappedByBaton(mapped),
        mode(mode),
        reason(std::move(reason)),
        native(std::move(native)),
        image(image) {}
  ~ImportedMemory() override {
    if (mappedByBaton) fns.unmapMemory(device, memory);
  }
  const VulkanFunctions fns;
  const VkDevice device;
  const VkDeviceMemory memory;
  const bool mappedByBaton;
  const InteropMode mode;
  const std::string reason;
  const Ref<Object> native;  // native mode: the backend's import (mapping + driver object)
  const VkImage image;       // images: the VkImage the memory is bound to
};

// Makes the Buffer of an imported range and publishes its handle.
Status publishImported(const Ref<core::Device>& dev, const VulkanMemoryImportInfo& info,
                       const VulkanFunctions& fns, const ModeChoice& choice,
                       Ref<ImportedMemory> memory, const core::Allocation& allocation,
                       MemoryKind kind, Buffer* buffer) {
  BufferCreateInfo bci;
  bci.size = info.size;
  bci.memory = kind;
  Ref<core::Buffer> b = makeRef<core::Buffer>(dev, bci);
  b->allocation = allocation;
  b->imported = std::move(memory);
  b->backed.store(true, std::memory_order_release);
  uint64_t h = HandleTable::get().insert(b, ObjectType::Buffer);
  if (!h) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
  b->handle = h;
  dev->children.add(h, ObjectType::Buffer);
  core::message(dev->instance(),
                choice.uuidMismatch ? MessageSeverity::Warning : MessageSeverity::Info,
                format("%llu bytes of Vulkan memory of %s imported into %s in %s mode: %s",
                       static_cast<unsigned long long>(info.size), fns.label.c_str(),
                       dev->label().c_str(), interopModeName(choice.mode), choice.reason.c_str()));
  *buffer = Buffer(h);
  return Status();
}

VkExternalSemaphoreHandleTypeFlags batonSemaphoreTypes(const core::Device* d) {
  return d && whyNoDeviceImport(*d, ImportKind::Semaphore).empty()
             ? VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT
             : 0;
}

VkExternalMemoryHandleTypeFlags batonMemoryTypes(const core::Device* d) {
  return d && whyNoDeviceImport(*d, ImportKind::Memory).empty()
             ? VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT
             : 0;
}

}  // namespace

const char* interopModeName(InteropMode mode) noexcept {
  switch (mode) {
    case InteropMode::Native: return "native";
    case InteropMode::Bridged: return "bridged";
  }
  return "unknown";
}

Result importVulkanSemaphore(Instance instance, const VulkanSemaphoreImportInfo& info,
                             Semaphore* semaphore) noexcept {
  return entry("importVulkanSemaphore", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst =
        find<core::Instance>(instance.raw(), ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(semaphore, "semaphore output pointer");
    *semaphore = Semaphore();
    return importSemaphore(inst, info, semaphore);
  });
}

Result createVulkanTimeline(Instance instance, const VulkanTimelineCreateInfo& info,
                            VulkanTimeline* timeline) noexcept {
  return entry("createVulkanTimeline", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst =
        find<core::Instance>(instance.raw(), ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(timeline, "timeline output pointer");
    *timeline = VulkanTimeline();
    VulkanFunctions fns;
    BATON_TRY(interop::loadInstance(info.vulkan, &fns));
    BATON_TRY(interop::loadDevice(info.vulkan, &fns));
    if (!fns.timelineSemaphores)
      return error(Result::ErrorNotSupported, "the Vulkan device %s has no timeline semaphores",
                   fns.label.c_str());

    // Exportable as OPAQUE_FD only where Vulkan can export timelines that way (and the
    // extension is enabled), so that creation never fails for a capability native mode might
    // not even use.
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr,
                                   VK_SEMAPHORE_TYPE_TIMELINE, info.initialValue};
    VkPhysicalDeviceExternalSemaphoreInfo query{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO, &type,
        VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    auto props = interop::vkStruct<VkExternalSemaphoreProperties>(
        VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES);
    fns.getPhysicalDeviceExternalSemaphoreProperties(info.vulkan.physicalDevice, &query, &props);
    bool exportable = fns.getSemaphoreFd && (props.externalSemaphoreFeatures &
                                             VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT);
    VkExportSemaphoreCreateInfo exportInfo{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO, nullptr,
                                           VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    if (exportable) type.pNext = &exportInfo;
    VkSemaphoreCreateInfo create{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type, 0};
    VkSemaphore vk = VK_NULL_HANDLE;
    VkResult r = fns.createSemaphore(info.vulkan.device, &create, nullptr, &vk);
    if (r != VK_SUCCESS) return interop::vkFailure("vkCreateSemaphore (timeline)", r);

    VulkanSemaphoreImportInfo import;
    import.vulkan = info.vulkan;
    import.semaphore = vk;
    import.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    import.exportHandleTypes = exportable ? VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT : 0;
    import.device = info.device;
    import.mode = info.mode;
    import.failurePolicy = info.failurePolicy;
    import.debugName = info.debugName;
    Semaphore s;
    InteropMode mode = InteropMode::Bridged;
    Status imported = importSemaphore(inst, import, &s, &mode);
    if (!imported.ok()) {
      fns.destroySemaphore(info.vulkan.device, vk, nullptr);
      return imported;
    }
    timeline->vulkan = vk;
    timeline->baton = s;
    timeline->mode = mode;
    return Status();
  });
}

Result destroyVulkanTimeline(const VulkanDevice& vulkan, const VulkanTimeline& timeline) noexcept {
  Result batonResult = Result::Success;
  if (timeline.baton) batonResult = timeline.baton.destroy();
  Result vulkanResult = entry("destroyVulkanTimeline", [&](const core::Instance*&) -> Status {
    if (!timeline.vulkan) return Status();
    VulkanFunctions fns;
    BATON_TRY(interop::loadInstance(vulkan, &fns));
    BATON_TRY(interop::loadDevice(vulkan, &fns));
    fns.destroySemaphore(vulkan.device, timeline.vulkan, nullptr);
    return Status();
  });
  return isError(vulkanResult) ? vulkanResult : batonResult;
}

Result getVulkanSemaphoreInterop(Semaphore semaphore, VulkanInteropInfo* info) noexcept {
  return entry("getVulkanSemaphoreInterop", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Semaphore> s =
        find<core::Semaphore>(semaphore.raw(), ObjectType::Semaphore, "semaphore", &st);
    if (!s) return st;
    owner = s->instance();
    BATON_NULL_CHECK(info, "info output pointer");
    *info = VulkanInteropInfo();
    // Only VulkanMirror is of kind Vulkan, only VulkanFdTimeline of kind VulkanFd.
    auto* m = static_cast<VulkanMirror*>(s->external(core::ExternalTimeline::Kind::Vulkan));
    if (!m) {
      auto* fd = static_cast<interop::VulkanFdTimeline*>(
          s->external(core::ExternalTimeline::Kind::VulkanFd));
      if (!fd)
        return error(Result::ErrorInvalidArgument, "semaphore '%s' was not imported from Vulkan",
                     s->name().c_str());
      info->mode = InteropMode::Native;
      info->failurePolicy = VulkanFailurePolicy::Hold;
      copyText(info->reason, sizeof info->reason, fd->reason());
      return Status();
    }
    info->mode = m->mode();
    info->device = m->device();
    info->semaphore = m->vulkanSemaphore();
    info->failurePolicy = m->policy();
    copyText(info->reason, sizeof info->reason, m->reason());
    return Status();
  });
}

Result importVulkanSemaphoreFd(Device device, const VulkanSemaphoreFdImportInfo& info,
                               Semaphore* semaphore) noexcept {
  return entry("importVulkanSemaphoreFd", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = find<core::Device>(device.raw(), ObjectType::Device, "device", &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(semaphore, "semaphore output pointer");
    *semaphore = Semaphore();
    if (info.fd < 0)
      return error(Result::ErrorInvalidArgument,
                   "VulkanSemaphoreFdImportInfo::fd is %d: pass the OPAQUE_FD exported from the "
                   "Vulkan timeline semaphore",
                   info.fd);
    BATON_TRY(checkFd(info.fd, "VulkanSemaphoreFdImportInfo::fd"));
    std::string why = whyNoDeviceImport(*dev, ImportKind::Semaphore);
    if (!why.empty())
      return error(Result::ErrorNotSupported,
                   "%s cannot import a Vulkan timeline from its descriptor: %s (in the process "
                   "that owns the VkDevice, importVulkanSemaphore bridges any device)",
                   dev->label().c_str(), why.c_str());
    Ref<core::DeviceTimeline> external;
    BATON_TRY(importDescriptor(
                  info.fd, [](int*) { return Status(); },
                  [&](int fd) { return dev->impl()->importTimelineFd(fd, dev->handle, &external); })
                  .context(format("importing a Vulkan timeline from descriptor %d into %s", info.fd,
                                  dev->label().c_str())));
    std::string name = info.debugName && info.debugName[0] ? info.debugName : "vulkan-fd-timeline";
    Ref<core::Semaphore> s =
        makeRef<core::Semaphore>(Ref<core::Instance>(dev->instance()), info.initialValue, name);
    std::string reason = format(
        "imported from its OPAQUE_FD into %s: that device's queues wait for it and signal it "
        "GPU-side; other values are passed on and observed through it",
        dev->label().c_str());
    Ref<interop::VulkanFdTimeline> timeline =
        makeRef<interop::VulkanFdTimeline>(std::move(external), info.initialValue, reason);
    s->addExternal(timeline);
    BATON_TRY(timeline->attach(s.get()));
    uint64_t h = HandleTable::get().insert(s, ObjectType::Semaphore);
    if (!h) {
      timeline->detach();
      return Status(Result::ErrorOutOfHostMemory, "handle table is full");
    }
    s->setHandle(h);
    dev->instance()->children.add(h, ObjectType::Semaphore);
    close(info.fd);
    core::message(dev->instance(), MessageSeverity::Info, "semaphore '" + name + "' " + reason);
    *semaphore = Semaphore(h);
    return Status();
  });
}

Result importVulkanMemory(Device device, const VulkanMemoryImportInfo& info,
                          Buffer* buffer) noexcept {
  return entry("importVulkanMemory", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = find<core::Device>(device.raw(), ObjectType::Device, "device", &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(buffer, "buffer output pointer");
    *buffer = Buffer();
    if (!info.memory)
      return error(Result::ErrorInvalidArgument, "VulkanMemoryImportInfo::memory is null");
    if (info.size == 0)
      return error(Result::ErrorInvalidArgument, "VulkanMemoryImportInfo::size is 0");
    if (info.offset > info.allocationSize || info.size > info.allocationSize - info.offset)
      return error(Result::ErrorInvalidArgument,
                   "range [%llu, +%llu) lies outside the allocation of %llu bytes",
                   static_cast<unsigned long long>(info.offset),
                   static_cast<unsigned long long>(info.size),
                   static_cast<unsigned long long>(info.allocationSize));
    if (!validRequest(info.mode))
      return error(Result::ErrorInvalidArgument, "unknown InteropModeRequest %u",
                   static_cast<unsigned>(info.mode));
    BATON_TRY(checkFd(info.fd, "VulkanMemoryImportInfo::fd"));
    VulkanFunctions fns;
    VkPhysicalDeviceMemoryProperties memProps;
    BATON_TRY(loadForMemoryImport(info.vulkan, info.memoryTypeIndex, &fns, &memProps));

    ModeChoice choice = chooseMode(ImportKind::Memory, info.mode, fns, true, dev.get(), true);
    if (!choice.refusal.ok()) return choice.refusal;
    if (choice.mode == InteropMode::Native) {
      core::Allocation allocation;
      Ref<Object> native;
      Status imported = importMemoryNative(fns, info, *dev, &allocation, &native);
      if (imported.ok()) {
        Ref<ImportedMemory> memory = makeRef<ImportedMemory>(
            fns, info.vulkan.device, info.memory, false, choice.mode, choice.reason, native);
        BATON_TRY(publishImported(dev, info, fns, choice, memory, allocation, MemoryKind::Device,
                                  buffer));
        if (info.fd >= 0) close(info.fd);  // baton's now (the driver has a duplicate)
        return Status();
      }
      if (info.mode == InteropModeRequest::Native) return imported;
      choice.mode = InteropMode::Bridged;  // Auto: try the mapping
      choice.reason = "bridged, because native import failed: " + imported.message();
    }

    BATON_TRY(checkHostCoherent(fns, memProps, info.memoryTypeIndex, "memory", choice.reason));
    if (dev->backend() != BackendKind::Host)
      return error(Result::ErrorNotSupported,
                   "bridged memory import into %s needs its backend to register the host mapping "
                   "(cuMemHostRegister), which this build does not do (%s)",
                   dev->label().c_str(), choice.reason.c_str());
    void* host = nullptr;
    bool mapped = false;
    BATON_TRY(mapForBridge(fns, info.vulkan.device, info.memory, info.offset, info.size,
                           info.hostPointer, &host, &mapped));
    Ref<ImportedMemory> memory = makeRef<ImportedMemory>(fns, info.vulkan.device, info.memory,
                                                         mapped, choice.mode, choice.reason);
    core::Allocation allocation;
    allocation.host = host;
    allocation.deviceAddress = reinterpret_cast<uintptr_t>(host);
    allocation.size = info.size;
    BATON_TRY(publishImported(dev, info, fns, choice, memory, allocation, MemoryKind::HostPinned,
                              buffer));
    if (info.fd >= 0) close(info.fd);  // bridged mode has no use for it
    return Status();
  });
}

namespace {

// The checks of VulkanImageImportInfo that need no Vulkan call.
Status checkImageInfo(const VulkanImageImportInfo& info) {
  if (!info.image)
    return error(Result::ErrorInvalidArgument, "VulkanImageImportInfo::image is null");
  if (!info.memory)
    return error(Result::ErrorInvalidArgument, "VulkanImageImportInfo::memory is null");
  if (info.width == 0 || info.height == 0)
    return error(Result::ErrorInvalidArgument, "the image's extent is %u x %u", info.width,
                 info.height);
  uint32_t levels = 1;
  for (uint32_t side = std::max(info.width, info.height); side > 1; side >>= 1) ++levels;
  if (info.mipLevels == 0 || info.mipLevels > levels)
    return error(Result::ErrorInvalidArgument,
                 "mipLevels %u: a %u x %u image has between 1 and %u levels", info.mipLevels,
                 info.width, info.height, levels);
  if (info.arrayLayers == 0) return error(Result::ErrorInvalidArgument, "arrayLayers is 0");
  if (info.tiling != VK_IMAGE_TILING_LINEAR && info.tiling != VK_IMAGE_TILING_OPTIMAL)
    return error(Result::ErrorInvalidArgument,
                 "VulkanImageImportInfo::tiling is %d: state the VkImageCreateInfo::tiling the "
                 "image was created with (LINEAR or OPTIMAL)",
                 static_cast<int>(info.tiling));
  if (info.memoryOffset >= info.allocationSize)
    return error(Result::ErrorInvalidArgument,
                 "memoryOffset %llu lies outside the allocation of %llu bytes",
                 static_cast<unsigned long long>(info.memoryOffset),
                 static_cast<unsigned long long>(info.allocationSize));
  if (!validRequest(info.mode))
    return error(Result::ErrorInvalidArgument, "unknown InteropModeRequest %u",
                 static_cast<unsigned>(info.mode));
  return checkFd(info.fd, "VulkanImageImportInfo::fd");
}

// Bridged: every level's layer-0 address and pitches in the mapping, from
// vkGetImageSubresourceLayout (offsets from the image's memoryOffset), each checked against the
// allocation.
Status bridgedLevels(const VulkanFunctions& fns, const VulkanImageImportInfo& info, uint8_t* mapped,
                     core::Image& image) {
  const uint64_t available = info.allocationSize - info.memoryOffset;
  for (uint32_t level = 0; level < info.mipLevels; ++level) {
    VkImageSubresource sub{VK_IMAGE_ASPECT_COLOR_BIT, level, 0};
    VkSubresourceLayout layout{};
    fns.getImageSubresourceLayout(info.vulkan.device, info.image, &sub, &layout);
    core::Image::Level l;
    l.width = std::max(1u, info.width >> level);
    l.height = std::max(1u, info.height >> level);
    l.rowPitch = layout.rowPitch;
    l.layerPitch = layout.arrayPitch;
    const uint64_t lastByte = layout.offset + (info.arrayLayers - 1) * layout.arrayPitch +
                              (l.height - 1) * layout.rowPitch +
                              uint64_t(l.width) * image.texelBytes;
    if (layout.rowPitch < uint64_t(l.width) * image.texelBytes || lastByte > available)
      return error(Result::ErrorInvalidArgument,
                   "level %u's layout (offset %llu, row pitch %llu, array pitch %llu) does not fit "
                   "%u x %u texels of %u bytes in the %llu bytes bound: do the image's format, "
                   "extent, levels and layers match its VkImageCreateInfo?",
                   level, static_cast<unsigned long long>(layout.offset),
                   static_cast<unsigned long long>(layout.rowPitch),
                   static_cast<unsigned long long>(layout.arrayPitch), l.width, l.height,
                   image.texelBytes, static_cast<unsigned long long>(available));
    l.host = mapped + layout.offset;
    image.levels.push_back(l);
  }
  return Status();
}

// Publishes an imported image's handle.
Status publishImage(const Ref<core::Device>& dev, const Ref<core::Image>& img,
                    const std::string& label, const VulkanFunctions& fns, InteropMode mode,
                    const std::string& reason, Image* image) {
  uint64_t h = HandleTable::get().insert(img, ObjectType::Image);
  if (!h) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
  img->handle = h;
  dev->children.add(h, ObjectType::Image);
  core::message(dev->instance(), MessageSeverity::Info,
                format("%s of %s imported into %s in %s mode: %s", label.c_str(), fns.label.c_str(),
                       dev->label().c_str(), interopModeName(mode), reason.c_str()));
  *image = Image(h);
  return Status();
}

}  // namespace

Result importVulkanImage(Device device, const VulkanImageImportInfo& info, Image* image) noexcept {
  return entry("importVulkanImage", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = find<core::Device>(device.raw(), ObjectType::Device, "device", &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(image, "image output pointer");
    *image = Image();
    BATON_TRY(checkImageInfo(info));
    const ImageFormat texelFormat = imageFormatFromVulkan(info.format);
    if (texelFormat == ImageFormat::Undefined)
      return error(Result::ErrorNotSupported,
                   "%s is not an image format baton shares: the 8-, 16- and 32-bit colour formats "
                   "of baton::ImageFormat are (docs/guide.md, 'Vulkan images')",
                   interop::vkFormatName(info.format).c_str());
    VulkanFunctions fns;
    VkPhysicalDeviceMemoryProperties memProps;
    BATON_TRY(loadForMemoryImport(info.vulkan, info.memoryTypeIndex, &fns, &memProps));

    std::string name = info.debugName && info.debugName[0] ? info.debugName : "vulkan-image";
    std::string label = format("image '%s' (%s %ux%u, %u level(s), %u layer(s))", name.c_str(),
                               imageFormatName(texelFormat), info.width, info.height,
                               info.mipLevels, info.arrayLayers);
    ImageInfo imageInfo;
    imageInfo.format = texelFormat;
    imageInfo.width = info.width;
    imageInfo.height = info.height;
    imageInfo.mipLevels = info.mipLevels;
    imageInfo.arrayLayers = info.arrayLayers;
    Ref<core::Image> img = makeRef<core::Image>(dev, imageInfo, label);

    // What only an image can make impossible, where the device maps images at all.
    std::vector<std::string> imageWhy;
    if (dev->impl()->importsImageFd()) {
      if (info.tiling == VK_IMAGE_TILING_LINEAR)
        imageWhy.push_back(
            "CUDA maps only OPTIMAL images as arrays (cuExternalMemoryGetMappedMipmappedArray "
            "refused a LINEAR one with CUDA_ERROR_INVALID_VALUE on the H100)");
      if (info.mipLevels > 1 && info.arrayLayers > 1)
        imageWhy.push_back(
            "an image with several levels and several layers: CUDA's layered mipmapped array does "
            "not lay out layers past the first as the NVIDIA Vulkan driver does (measured on the "
            "H100); import one with one level, or one layer");
    }
    ModeChoice choice =
        chooseMode(ImportKind::Image, info.mode, fns, true, dev.get(), true, imageWhy);
    if (!choice.refusal.ok()) return choice.refusal;

    if (choice.mode == InteropMode::Native) {
      BATON_TRY(
          importDescriptor(
              info.fd,
              [&](int* fd) { return exportMemoryFd(fns, info.vulkan.device, info.memory, fd); },
              [&](int fd) {
                core::ImageFdImport in;
                in.fd = fd;
                in.allocationSize = info.allocationSize;
                in.offset = info.memoryOffset;
                in.dedicated = info.dedicated;
                in.colorAttachment = (info.usage & VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT) != 0;
                return dev->impl()->importImageFd(in, *img);
              })
              .context("importing " + label + " into " + dev->label()));
      const std::string reason =
          "the memory is mapped as the device's own image (a CUDA mipmapped array)";
      Ref<Object> driverObjects = std::move(img->memory);
      img->memory =
          makeRef<ImportedMemory>(fns, info.vulkan.device, info.memory, false, InteropMode::Native,
                                  reason, std::move(driverObjects), info.image);
      BATON_TRY(publishImage(dev, img, label, fns, InteropMode::Native, reason, image));
      if (info.fd >= 0) close(info.fd);  // baton's now (the driver has a duplicate)
      return Status();
    }

    // Bridged: a LINEAR image in host-visible, coherent memory, mapped; the host backend only.
    if (dev->backend() != BackendKind::Host)
      return error(choice.uuidMismatch ? Result::ErrorDeviceMismatch : Result::ErrorNotSupported,
                   "%s cannot import this Vulkan image: %s, and bridged images are shared by "
                   "mapping, which only the host backend's copies use",
                   dev->label().c_str(), choice.reason.c_str());
    if (info.tiling != VK_IMAGE_TILING_LINEAR)
      return error(Result::ErrorNotSupported,
                   "bridged image import shares a LINEAR image by mapping; an OPTIMAL image's "
                   "texel layout is the driver's own and cannot be read through a mapping (%s)",
                   choice.reason.c_str());
    BATON_TRY(checkHostCoherent(fns, memProps, info.memoryTypeIndex, "image", choice.reason));
    if (!fns.getImageSubresourceLayout)
      return error(Result::ErrorNotSupported, "%s has no vkGetImageSubresourceLayout",
                   fns.label.c_str());
    void* host = nullptr;
    bool mapped = false;
    BATON_TRY(mapForBridge(fns, info.vulkan.device, info.memory, info.memoryOffset, VK_WHOLE_SIZE,
                           info.hostPointer, &host, &mapped));
    const std::string reason =
        "a LINEAR image in HOST_VISIBLE | HOST_COHERENT memory, shared by mapping with the host "
        "backend (" +
        choice.reason + ")";
    // From here on the mapping is the import's: released with the image's last reference.
    img->memory = makeRef<ImportedMemory>(fns, info.vulkan.device, info.memory, mapped,
                                          InteropMode::Bridged, reason, Ref<Object>(), info.image);
    BATON_TRY(bridgedLevels(fns, info, static_cast<uint8_t*>(host), *img));
    BATON_TRY(publishImage(dev, img, label, fns, InteropMode::Bridged, reason, image));
    if (info.fd >= 0) close(info.fd);  // bridged mode has no use for it
    return Status();
  });
}

namespace {

// getVulkanImageInterop / getVulkanMemoryInterop: what the object's ImportedMemory says.
// `what` names the kind ("image", "buffer").
template <class T>
Status describeImported(uint64_t handle, ObjectType type, const char* what,
                        Ref<Object> T::*imported, const core::Instance*& owner,
                        VulkanInteropInfo* info) {
  Status st;
  Ref<T> object = find<T>(handle, type, what, &st);
  if (!object) return st;
  owner = object->device->instance();
  BATON_NULL_CHECK(info, "info output pointer");
  *info = VulkanInteropInfo();
  auto* m = dynamic_cast<ImportedMemory*>((object.get()->*imported).get());
  if (!m) return error(Result::ErrorInvalidArgument, "%s was not imported from Vulkan", what);
  info->mode = m->mode;
  info->device = m->device;
  info->memory = m->memory;
  info->image = m->image;
  copyText(info->reason, sizeof info->reason, m->reason);
  return Status();
}

}  // namespace

Result getVulkanImageInterop(Image image, VulkanInteropInfo* info) noexcept {
  return entry("getVulkanImageInterop", [&](const core::Instance*& owner) -> Status {
    return describeImported<core::Image>(image.raw(), ObjectType::Image, "image",
                                         &core::Image::memory, owner, info);
  });
}

Result getVulkanMemoryInterop(Buffer buffer, VulkanInteropInfo* info) noexcept {
  return entry("getVulkanMemoryInterop", [&](const core::Instance*& owner) -> Status {
    return describeImported<core::Buffer>(buffer.raw(), ObjectType::Buffer, "buffer",
                                          &core::Buffer::imported, owner, info);
  });
}

Result matchVulkanPhysicalDevice(Instance instance, const VulkanDevice& vulkan,
                                 PhysicalDevice* physicalDevice) noexcept {
  return entry("matchVulkanPhysicalDevice", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst =
        find<core::Instance>(instance.raw(), ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(physicalDevice, "physical device output pointer");
    *physicalDevice = PhysicalDevice();
    VulkanFunctions fns;
    BATON_TRY(interop::loadInstance(vulkan, &fns));
    for (uint64_t h : inst->physicalDevices) {
      Ref<core::PhysicalDevice> pd =
          find<core::PhysicalDevice>(h, ObjectType::PhysicalDevice, "physical device", &st);
      if (pd && std::memcmp(pd->properties.uuid, fns.deviceUuid, VK_UUID_SIZE) == 0) {
        *physicalDevice = PhysicalDevice(h);
        return Status();
      }
    }
    return error(Result::ErrorNotSupported,
                 "no baton physical device has the UUID %s of the Vulkan device %s (the host "
                 "backend never matches a Vulkan device: import with it in bridged mode)",
                 interop::uuidText(fns.deviceUuid).c_str(), fns.label.c_str());
  });
}

Result queryVulkanInterop(const VulkanDevice& vulkan, Device device,
                          VulkanInteropSupport* support) noexcept {
  return entry("queryVulkanInterop", [&](const core::Instance*& owner) -> Status {
    Ref<core::Device> dev;
    BATON_TRY(findOptionalDevice(device, nullptr, &dev));
    if (dev) owner = dev->instance();
    BATON_NULL_CHECK(support, "support output pointer");
    *support = VulkanInteropSupport();
    VulkanFunctions fns;
    BATON_TRY(interop::loadInstance(vulkan, &fns));
    bool deviceChecked = false;
    if (vulkan.device) {
      BATON_TRY(interop::loadDevice(vulkan, &fns));
      deviceChecked = true;
    }
    support->timelineSemaphores = fns.timelineSemaphores;
    support->vulkanExternalSemaphoreFd = fns.hasExternalSemaphoreFd;
    support->vulkanExternalMemoryFd = fns.hasExternalMemoryFd;

    for (VkExternalSemaphoreHandleTypeFlagBits t :
         {VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT,
          VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT}) {
      VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr,
                                     VK_SEMAPHORE_TYPE_TIMELINE, 0};
      VkPhysicalDeviceExternalSemaphoreInfo query{
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO, &type, t};
      auto props = interop::vkStruct<VkExternalSemaphoreProperties>(
          VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES);
      fns.getPhysicalDeviceExternalSemaphoreProperties(vulkan.physicalDevice, &query, &props);
      if (props.externalSemaphoreFeatures & VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT)
        support->vulkanSemaphoreExportTypes |= t;
    }
    for (VkExternalMemoryHandleTypeFlagBits t :
         {VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
          VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
          VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT}) {
      VkPhysicalDeviceExternalBufferInfo query{
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO, nullptr, 0,
          VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT,
          t};
      auto props = interop::vkStruct<VkExternalBufferProperties>(
          VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES);
      fns.getPhysicalDeviceExternalBufferProperties(vulkan.physicalDevice, &query, &props);
      if (props.externalMemoryProperties.externalMemoryFeatures &
          VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT)
        support->vulkanMemoryExportTypes |= t;
    }
    support->batonSemaphoreImportTypes = batonSemaphoreTypes(dev.get());
    support->batonMemoryImportTypes = batonMemoryTypes(dev.get());
    support->uuidMatches =
        dev && std::memcmp(dev->physical()->properties.uuid, fns.deviceUuid, VK_UUID_SIZE) == 0;

    bool exportable =
        support->vulkanSemaphoreExportTypes & VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
    ModeChoice sem = chooseMode(ImportKind::Semaphore, InteropModeRequest::Auto, fns, deviceChecked,
                                dev.get(), exportable);
    ModeChoice mem = chooseMode(ImportKind::Memory, InteropModeRequest::Auto, fns, deviceChecked,
                                dev.get(), true);
    support->semaphoreMode = sem.mode;
    support->memoryMode = mem.mode;
    copyText(support->semaphoreReason, sizeof support->semaphoreReason, sem.reason);
    copyText(support->memoryReason, sizeof support->memoryReason, mem.reason);
    return Status();
  });
}

}  // namespace baton
