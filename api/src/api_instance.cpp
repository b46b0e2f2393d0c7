// Public entry points of Instance and PhysicalDevice.
#include <cstring>

#include "api_entry.hpp"
#include "baton/device.hpp"
#include "baton/instance.hpp"
#include "baton/physical_device.hpp"
#include "baton/semaphore.hpp"
#include "callback_scope.hpp"
#include "shared_timeline.hpp"

namespace baton {

using core::copyText;

Result createInstance(const InstanceCreateInfo& info, Instance* out) noexcept {
  return entry("createInstance", [&](const core::Instance*& owner) -> Status {
    BATON_NULL_CHECK(out, "instance output pointer");
    *out = Instance();
    if (info.backendMask & ~kAllBackends)
      return error(Result::ErrorInvalidArgument, "backendMask 0x%x has unknown bits",
                   info.backendMask);
    Ref<core::Instance> inst = makeRef<core::Instance>(info);
    owner = inst.get();
    for (uint32_t k = 0; k < kBackendKindCount; ++k) {
      BackendInfo& bi = inst->backendInfos[k];
      bi.kind = static_cast<BackendKind>(k);
      copyText(bi.reason, sizeof bi.reason,
               format("the %s backend is not compiled into this build of baton (disabled, or "
                      "its headers were not found, when it was configured)",
                      backendName(bi.kind)));
    }
    inst->backends = core::createBackends();
    for (auto& backend : inst->backends) {
      BackendInfo& bi = inst->backendInfos[static_cast<uint32_t>(backend->kind())];
      bi.compiled = true;
      bi.reason[0] = '\0';
      if (backend->kind() != BackendKind::Host &&
          !(info.backendMask & backendBit(backend->kind()))) {
        copyText(bi.reason, sizeof bi.reason, "not requested in InstanceCreateInfo::backendMask");
        continue;
      }
      Status s = backend->load();
      if (!s.ok()) {
        copyText(bi.reason, sizeof bi.reason, s.message());
        inst->debug(MessageSeverity::Info, format("%s backend unavailable: %s",
                                                  backendName(bi.kind), s.message().c_str()));
        continue;
      }
      bi.available = true;
      bi.deviceCount = backend->deviceCount();
      if (bi.deviceCount == 0) copyText(bi.reason, sizeof bi.reason, backend->noDevicesReason());
      inst->debug(MessageSeverity::Info,
                  format("%s backend loaded: %u device(s)", backendName(bi.kind), bi.deviceCount));
      for (uint32_t d = 0; d < bi.deviceCount; ++d) {
        Ref<core::PhysicalDevice> pd = makeRef<core::PhysicalDevice>(inst.get(), backend.get(), d);
        uint64_t h = HandleTable::get().insert(pd, ObjectType::PhysicalDevice);
        if (!h) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
        pd->handle = h;
        inst->physicalDevices.push_back(h);
      }
    }
    uint64_t h = HandleTable::get().insert(inst, ObjectType::Instance);
    if (!h) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
    inst->handle = h;
    *out = Instance(h);
    return Status();
  });
}

Result Instance::destroy() const noexcept {
  // Holds the instance until entry() has reported the result through its callback: `o` below may
  // be the last reference, and report() must not use a freed owner.
  Ref<Object> keepAlive;
  return entry("Instance::destroy", [&](const core::Instance*& owner) -> Status {
    Status st;
    {
      Ref<core::Instance> inst =
          find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
      if (!inst) return st;
      owner = inst.get();
      BATON_TRY(core::refuseInsideOwnCallback("Instance::destroy", nullptr, inst.get()));
    }
    Ref<Object> o = HandleTable::get().remove(handle_, ObjectType::Instance, "instance", &st);
    if (!o) return st;
    keepAlive = o;
    auto* inst = static_cast<core::Instance*>(o.get());
    owner = inst;
    size_t live = 0;
    // Devices first: their shutdown fails held submissions, whose signals may be semaphores.
    auto children = inst->children.takeAll();
    for (int pass = 0; pass < 2; ++pass) {
      for (auto& [h, type] : children) {
        bool devicePass = type == ObjectType::Device;
        if ((pass == 0) != devicePass) continue;
        Status ignored;
        Ref<Object> child = HandleTable::get().remove(h, type, "child", &ignored);
        if (!child) continue;
        ++live;
        message(inst, MessageSeverity::Warning,
                format("instance destroyed with a live %s (handle 0x%llx): destroyed with it",
                       objectTypeName(type), static_cast<unsigned long long>(h)));
        if (type == ObjectType::Device) {
          static_cast<core::Device*>(child.get())->shutdown();
        } else if (type == ObjectType::Semaphore) {
          auto* s = static_cast<core::Semaphore*>(child.get());
          if (s->hasWaiters())
            s->fail(Result::ErrorSemaphoreFailed,
                    "its instance was destroyed while it was waited on");
          s->detachExternals();
        }
      }
    }
    for (uint64_t h : inst->physicalDevices) {
      Status ignored;
      HandleTable::get().remove(h, ObjectType::PhysicalDevice, "physical device", &ignored);
    }
    if (live)
      return error(Result::ErrorObjectInUse,
                   "instance destroyed with %zu live child object(s); they were destroyed too",
                   live);
    return Status();
  });
}

Result Instance::enumerateBackends(uint32_t* count, BackendInfo* infos) const noexcept {
  return entry("Instance::enumerateBackends", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst = find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(count, "count");
    if (!infos) {
      *count = kBackendKindCount;
      return Status();
    }
    uint32_t n = std::min(*count, kBackendKindCount);
    for (uint32_t i = 0; i < n; ++i) infos[i] = inst->backendInfos[i];
    *count = n;
    return Status(n < kBackendKindCount ? Result::NotReady : Result::Success);
  });
}

Result Instance::enumeratePhysicalDevices(uint32_t* count, PhysicalDevice* devices) const noexcept {
  return entry("Instance::enumeratePhysicalDevices", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst = find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(count, "count");
    uint32_t total = static_cast<uint32_t>(inst->physicalDevices.size());
    if (!devices) {
      *count = total;
      return Status();
    }
    uint32_t n = std::min(*count, total);
    for (uint32_t i = 0; i < n; ++i) devices[i] = PhysicalDevice(inst->physicalDevices[i]);
    *count = n;
    return Status(n < total ? Result::NotReady : Result::Success);
  });
}

namespace {
// Publishes a new semaphore under a handle; a shared one's counterpart stops when that fails.
Status publishSemaphore(core::Instance& inst, const Ref<core::Semaphore>& s, Semaphore* out) {
  uint64_t h = HandleTable::get().insert(s, ObjectType::Semaphore);
  if (!h) {
    s->detachExternals();
    return Status(Result::ErrorOutOfHostMemory, "handle table is full");
  }
  if (s->name().empty()) {
    // Name it after its handle so messages can tell semaphores apart.
    const_cast<std::string&>(s->name()) = format("#%llx", static_cast<unsigned long long>(h));
  }
  s->setHandle(h);
  inst.children.add(h, ObjectType::Semaphore);
  *out = Semaphore(h);
  return Status();
}
}  // namespace

Result Instance::createSemaphore(const SemaphoreCreateInfo& info,
                                 Semaphore* semaphore) const noexcept {
  return entry("Instance::createSemaphore", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst = find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(semaphore, "semaphore output pointer");
    *semaphore = Semaphore();
    if (info.flags & ~uint32_t{kSemaphoreShareable})
      return error(Result::ErrorInvalidArgument, "unknown semaphore create flags 0x%x",
                   info.flags & ~uint32_t{kSemaphoreShareable});
    std::string name = info.debugName ? info.debugName : "";
    Ref<core::Semaphore> s = makeRef<core::Semaphore>(inst, info.initialValue, name);
    if (info.flags & kSemaphoreShareable) BATON_TRY(core::makeShareable(*s));
    return publishSemaphore(*inst, s, semaphore);
  });
}

Result Instance::importSemaphore(const SemaphoreImportInfo& info,
                                 Semaphore* semaphore) const noexcept {
  return entry("Instance::importSemaphore", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst = find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(semaphore, "semaphore output pointer");
    *semaphore = Semaphore();
    std::string name = info.debugName ? info.debugName : "";
    Ref<core::Semaphore> s = makeRef<core::Semaphore>(inst, 0, name);
    BATON_TRY(core::attachShared(*s, info.fd).context("importing a shared semaphore"));
    return publishSemaphore(*inst, s, semaphore);
  });
}

namespace core {
// Shared by Instance/Device::waitSemaphores and Semaphore::wait.
Status waitEntries(const core::Instance* instance, Span<const SemaphoreValue> waits, WaitMode mode,
                   uint64_t timeoutNs) {
  if (waits.size() > kMaxWaitCount)
    return error(Result::ErrorInvalidArgument, "%zu wait entries exceed kMaxWaitCount (%zu)",
                 waits.size(), kMaxWaitCount);
  if (waits.size() && !waits.data())
    return error(Result::ErrorInvalidArgument, "wait list pointer is null with %zu entries",
                 waits.size());
  if (mode != WaitMode::All && mode != WaitMode::Any)
    return error(Result::ErrorInvalidArgument, "unknown wait mode %u", static_cast<unsigned>(mode));
  Deadline deadline = Deadline::after(timeoutNs);
  std::vector<HostWaitEntry> entries;
  entries.reserve(waits.size());
  for (size_t i = 0; i < waits.size(); ++i) {
    Status st;
    Ref<core::Semaphore> s =
        find<core::Semaphore>(waits[i].semaphore.raw(), ObjectType::Semaphore, "semaphore", &st);
    if (!s) return st.context(format("wait entry %zu", i));
    if (instance && s->instance() != instance)
      return error(Result::ErrorDeviceMismatch,
                   "wait entry %zu: semaphore '%s' belongs to another instance", i,
                   s->name().c_str());
    entries.push_back({std::move(s), waits[i].value});
  }
  return hostWait(entries, mode, deadline);
}
}  // namespace core

Result Instance::waitSemaphores(Span<const SemaphoreValue> waits, WaitMode mode,
                                uint64_t timeoutNs) const noexcept {
  return entry("Instance::waitSemaphores", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst = find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    return waitEntries(inst.get(), waits, mode, timeoutNs);
  });
}

Result Instance::createDevice(PhysicalDevice physicalDevice, const DeviceCreateInfo& info,
                              Device* device) const noexcept {
  return entry("Instance::createDevice", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst = find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(device, "device output pointer");
    *device = Device();
    Ref<core::PhysicalDevice> pd = find<core::PhysicalDevice>(
        physicalDevice.raw(), ObjectType::PhysicalDevice, "physical device", &st);
    if (!pd) return st;
    if (pd->instance != inst.get())
      return error(Result::ErrorDeviceMismatch, "physical device belongs to another instance");
    uint32_t maxQueues = std::min(pd->properties.maxQueues, kMaxQueues);
    if (info.queueCount == 0 || info.queueCount > maxQueues)
      return error(Result::ErrorInvalidArgument, "queueCount %u is outside 1..%u for %s",
                   info.queueCount, maxQueues, pd->properties.name);
    Ref<core::Device> dev = makeRef<core::Device>(inst, pd, info.debugName);
    Status s = dev->init(info.queueCount);
    if (!s.ok()) return s.context("creating " + dev->label());
    for (Ref<core::Queue>& q : dev->queues) {
      uint64_t qh = HandleTable::get().insert(q, ObjectType::Queue);
      if (!qh) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
      dev->queueHandles.push_back(qh);
    }
    uint64_t h = HandleTable::get().insert(dev, ObjectType::Device);
    if (!h) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
    dev->handle = h;
    inst->children.add(h, ObjectType::Device);
    *device = Device(h);
    return Status();
  });
}

Result PhysicalDevice::getProperties(PhysicalDeviceProperties* properties) const noexcept {
  return entry("PhysicalDevice::getProperties", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::PhysicalDevice> pd =
        find<core::PhysicalDevice>(handle_, ObjectType::PhysicalDevice, "physical device", &st);
    if (!pd) return st;
    owner = pd->instance;
    BATON_NULL_CHECK(properties, "properties output pointer");
    *properties = pd->properties;
    return Status();
  });
}

}  // namespace baton
