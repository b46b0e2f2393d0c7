#include "callback_scope.hpp"
#include "notifier.hpp"
#include "objects.hpp"
#include "report.hpp"
#include "trace.hpp"

namespace baton::core {

Timepoint::Timepoint(Device* device, BackendKind backend) : device_(device), backend_(backend) {}
Timepoint::~Timepoint() = default;

Buffer::~Buffer() {
  if (backed.load(std::memory_order_acquire) && !imported && !shared)
    device->impl()->free(allocation);
}

Device::Device(Ref<Instance> instance, Ref<PhysicalDevice> physical, const char* debugName)
    : instance_(std::move(instance)), physical_(std::move(physical)) {
  const uint32_t serial = instance_->deviceSerials.fetch_add(1, std::memory_order_relaxed) + 1;
  const std::string where =
      format("%s:%u", backendName(physical_->properties.backend), physical_->ordinal);
  label_ = debugName && *debugName
               ? format("device #%u '%s' (%s)", serial, debugName, where.c_str())
               : format("device #%u (%s)", serial, where.c_str());
}

Device::~Device() {
  // Queues' backend halves first (they may use the device's backend half), then the device's.
  for (Ref<Queue>& q : queues) q->setImpl(nullptr);
  queues.clear();
  impl_.reset();
}

Status Device::init(uint32_t queueCount) {
  BATON_TRY(physical_->backend->createDevice(physical_->ordinal, *this, &impl_));
  for (uint32_t i = 0; i < queueCount; ++i) {
    Ref<Queue> q = makeRef<Queue>(this, i);
    std::unique_ptr<QueueImpl> qi;
    BATON_TRY(impl_->createQueue(i, *q, &qi));
    q->setImpl(std::move(qi));
    queues.push_back(std::move(q));
  }
  return Status();
}

size_t Device::shutdown() {
  Status why(Result::ErrorSemaphoreFailed, label_ + " was destroyed before this submission ran");
  for (Ref<Queue>& q : queues) q->failHeld(why);
  for (Ref<Queue>& q : queues) (void)q->waitIdle(Deadline::never());
  for (uint64_t h : queueHandles) {
    Status ignored;
    HandleTable::get().remove(h, ObjectType::Queue, "queue", &ignored);
  }
  size_t live = 0;
  for (auto& [h, type] : children.takeAll()) {
    Status ignored;
    if (HandleTable::get().remove(h, type, "child", &ignored)) {
      ++live;
      message(instance(), MessageSeverity::Warning,
              format("%s destroyed with a live %s (handle 0x%llx): destroyed with it",
                     label_.c_str(), objectTypeName(type), static_cast<unsigned long long>(h)));
    }
  }
  return live;
}

void Device::markLost(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(lostMutex_);
    if (lost_.load(std::memory_order_relaxed)) return;
    lostReason_ = reason;
    lost_.store(true, std::memory_order_release);
  }
  trace::deviceLost(label_, reason);
  Notifier::Scope scope;
  message(instance(), MessageSeverity::Error, label_ + " lost: " + reason);
  std::string text = label_ + " was lost: " + reason;
  Status why(Result::ErrorDeviceLost, text);
  for (Ref<Queue>& q : queues) q->failHeld(why);
  std::lock_guard<std::mutex> lock(instance()->semaphoresMutex);
  for (Semaphore* s : instance()->semaphores) s->failIfPendingOn(this, text);
}

Status refuseInsideOwnCallback(const char* operation, const Device* device,
                               const Instance* instance) {
  const CallbackScope* scope = CallbackScope::current();
  if (!scope) [[likely]]
    return Status();
  const Device* running = scope->device();
  if (running != device && !(instance && running && running->instance() == instance))
    return Status();
  return Status(
      Result::ErrorInvalidState,
      format("%s was called from %s running on queue %u of %s: it would wait for that "
             "callback's own work, so it is refused (call it once the submission has "
             "completed, from another thread)",
             operation, scope->kindName(), scope->queueIndex(), running->label().c_str()));
}

Status Device::lostStatus() const {
  std::lock_guard<std::mutex> lock(lostMutex_);
  return Status(Result::ErrorDeviceLost, label_ + " was lost: " + lostReason_);
}

}  // namespace baton::core
