#include "bridge.hpp"

#include <pthread.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "objects.hpp"
#include "report.hpp"

namespace baton::interop {

using core::error;
using core::format;
using core::Status;

namespace {

// The VkSemaphores imported now: two imports of one would both forward every value. Never
// destroyed, so that an import leaked until exit cannot touch a destroyed set.
std::mutex& importedMutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::set<std::pair<VkDevice, VkSemaphore>>& imported() {
  static auto* s = new std::set<std::pair<VkDevice, VkSemaphore>>;
  return *s;
}

}  // namespace

VulkanMirror::VulkanMirror(const VulkanFunctions& fns, VkDevice device, VkSemaphore semaphore,
                           VulkanFailurePolicy policy, InteropMode mode, std::string reason,
                           uint64_t initialValue, core::Ref<core::DeviceTimeline> external)
    : ForwardingTimeline(initialValue),
      fns_(fns),
      device_(device),
      vkSemaphore_(semaphore),
      policy_(policy),
      mode_(mode),
      reason_(std::move(reason)),
      external_(std::move(external)) {}

VulkanMirror::~VulkanMirror() {
  // Every path that destroys the handle calls detach(); this only guards against one that
  // forgets (a joinable std::thread would terminate the process). The watcher holds no
  // reference to the semaphore, so this never runs on the watcher itself.
  if (watcher_.joinable()) detach();
}

Status VulkanMirror::attach(core::Semaphore* semaphore) {
  {
    std::lock_guard<std::mutex> lock(importedMutex());
    if (!imported().insert({device_, vkSemaphore_}).second)
      return error(Result::ErrorInvalidState,
                   "VkSemaphore 0x%llx is already imported into baton; destroy that import first "
                   "(two imports would both forward every value)",
                   static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(vkSemaphore_)));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    semaphore_ = semaphore;
    attached_ = true;
  }
  try {
    watcher_ = std::thread([this] { watch(); });
    // For profilers, debuggers and the timeline trace's track names.
    pthread_setname_np(watcher_.native_handle(), "baton-bridge");
  } catch (const std::system_error& e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      attached_ = false;
    }
    std::lock_guard<std::mutex> lock(importedMutex());
    imported().erase({device_, vkSemaphore_});
    return error(Result::ErrorOutOfHostMemory, "could not start the watcher thread: %s", e.what());
  }
  return Status();
}

void VulkanMirror::detach() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!attached_ || detached_) return;
    detached_ = true;  // from here on the core hooks return at once and the watcher ends
  }
  stoppedIdle_.notify_all();
  {
    std::lock_guard<std::mutex> lock(demandMutex_);
    stopping_ = true;
  }
  demandCv_.notify_all();
  watcher_.join();  // within kWatchTimeoutNs
  std::lock_guard<std::mutex> lock(importedMutex());
  imported().erase({device_, vkSemaphore_});
}

void VulkanMirror::watch() {
  for (;;) {
    uint64_t target = nextVulkanTarget();
    if (!target) {
      // Detached, or stopped (failed): nothing more to observe; sleep until detach.
      std::unique_lock<std::mutex> lock(mutex_);
      stoppedIdle_.wait(lock, [&] { return detached_; });
      return;
    }
    if (mode_ == InteropMode::Bridged && !semaphore_->hasWaiters()) {
      awaitDemand();
      continue;
    }
    auto wait = vkStruct<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
    wait.semaphoreCount = 1;
    wait.pSemaphores = &vkSemaphore_;
    wait.pValues = &target;
    VkResult r = fns_.waitSemaphores(device_, &wait, kWatchTimeoutNs);
    if (r == VK_TIMEOUT) continue;
    if (r != VK_SUCCESS) {
      // VK_ERROR_DEVICE_LOST (or out of memory): Vulkan signals can no longer be observed; fail
      // the baton side so that nothing waits for them forever.
      lose("vkWaitSemaphores on its Vulkan semaphore returned " + vkResultName(r) +
           "; Vulkan signals can no longer be observed");
      continue;
    }
    uint64_t value = 0;
    r = fns_.getSemaphoreCounterValue(device_, vkSemaphore_, &value);
    if (r == VK_SUCCESS) {
      observe(value);
    } else {
      lose("vkGetSemaphoreCounterValue on its Vulkan semaphore returned " + vkResultName(r));
    }
  }
}

void VulkanMirror::awaitDemand() {
  std::unique_lock<std::mutex> lock(demandMutex_);
  demand_ = false;
  // Published before the second look at the waiters: a waiter that links after that look finds
  // watching_ false and wakes this thread (onWaitLinked); one that linked before it, is seen.
  watching_.store(false, std::memory_order_seq_cst);
  lock.unlock();
  if (!semaphore_->hasWaiters()) {
    lock.lock();
    demandCv_.wait(lock, [&] { return demand_ || stopping_; });
    lock.unlock();
  }
  watching_.store(true, std::memory_order_seq_cst);
}

void VulkanMirror::onWaitLinked(uint64_t) {
  // The common case, a watcher already watching, costs one load.
  if (mode_ != InteropMode::Bridged || watching_.load(std::memory_order_seq_cst)) return;
  {
    std::lock_guard<std::mutex> lock(demandMutex_);
    demand_ = true;
  }
  demandCv_.notify_one();
}

void VulkanMirror::refresh(core::Semaphore&) {
  uint64_t value = 0;
  {
    // Held across the read, as in onReached: detach() returns only when no call of this mirror
    // can touch the VkSemaphore any more.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!attached_ || detached_ || stopped_) return;
    // A failed read leaves the value as last seen; the watcher reports Vulkan failures (lose)
    // when it next waits.
    if (fns_.getSemaphoreCounterValue(device_, vkSemaphore_, &value) != VK_SUCCESS ||
        value <= observed_)
      return;
  }
  observe(value);
}

uint64_t VulkanMirror::nextVulkanTarget() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (detached_ || stopped_) return 0;
  // Values up to what either side already knows need no waiting; the next one does.
  uint64_t known = std::max(forwarded_, observed_);
  return known == UINT64_MAX ? 0 : known + 1;
}

void VulkanMirror::onReached(core::Semaphore& semaphore, uint64_t value) {
  std::string problem;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!attached_ || detached_ || stopped_) return;
    if (takeDeviceSignal(value)) return;
    if (value <= forwarded_ || value <= observed_) return;
    // Vulkan forbids signalling a value that is not above the current one
    // (VUID-VkSemaphoreSignalInfo-value-03258); Vulkan may have got there on its own.
    uint64_t current = 0;
    VkResult r = fns_.getSemaphoreCounterValue(device_, vkSemaphore_, &current);
    if (r == VK_SUCCESS && current >= value) {
      observed_ = std::max(observed_, current);
      return;
    }
    if (r == VK_SUCCESS) {
      VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, nullptr, vkSemaphore_,
                                   value};
      r = fns_.signalSemaphore(device_, &signal);
      if (r == VK_SUCCESS) {
        forwarded_ = value;
        return;
      }
      problem = format("vkSignalSemaphore(%llu) returned %s",
                       static_cast<unsigned long long>(value), vkResultName(r).c_str());
    } else {
      problem = "vkGetSemaphoreCounterValue returned " + vkResultName(r);
    }
    stopped_ = true;
  }
  forwardingFailed(semaphore, problem);
}

void VulkanMirror::onFailed(core::Semaphore& semaphore) {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!attached_ || detached_ || stopped_) {
      stopped_ = true;
      return;
    }
    stopped_ = true;
    if (policy_ == VulkanFailurePolicy::Hold) {
      text = "semaphore '" + semaphore.name() +
             "' failed; VulkanFailurePolicy::Hold: baton no longer signals its Vulkan semaphore, "
             "so Vulkan work waiting for values above " +
             std::to_string(std::max(forwarded_, observed_)) + " stays blocked";
    } else {
      uint64_t current = 0;
      VkResult r = fns_.getSemaphoreCounterValue(device_, vkSemaphore_, &current);
      // The largest signal Vulkan accepts: within maxTimelineSemaphoreValueDifference of the
      // current value (VUID-VkSemaphoreSignalInfo-value-03260), and above every valid wait.
      uint64_t release = fns_.maxTimelineDifference > UINT64_MAX - current
                             ? UINT64_MAX
                             : current + fns_.maxTimelineDifference;
      if (r == VK_SUCCESS && release > current) {
        VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, nullptr, vkSemaphore_,
                                     release};
        r = fns_.signalSemaphore(device_, &signal);
      }
      text = "semaphore '" + semaphore.name() +
             "' failed; VulkanFailurePolicy::Release: its Vulkan semaphore was signalled to " +
             std::to_string(release) + " so that Vulkan waits return (" + vkResultName(r) +
             "); the data they guard is not valid";
    }
  }
  core::message(semaphore.instance(), MessageSeverity::Warning, text);
}

}  // namespace baton::interop
