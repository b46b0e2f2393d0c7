// Bridged mode (docs/architecture.md, 'Vulkan interop: native and bridged'): a Vulkan timeline
// semaphore and a baton semaphore kept on one timeline by the host.
//
//   baton -> Vulkan  VulkanMirror::onReached, a core hook (ExternalTimeline) that runs on the
//                    thread that raised the baton value (a host signal, a host queue's worker, a
//                    backend's completion thread), calls vkSignalSemaphore there: no thread
//                    hand-off on the path.
//   Vulkan -> baton  a watcher thread per import waits with vkWaitSemaphores for the next value
//                    of its one semaphore and reaches what it reads in baton
//                    (Semaphore::reach, which releases held submissions on that thread).
//                    Bridged, it watches only while something in baton waits on the semaphore
//                    (a host wait asleep, a held submission: ExternalTimeline::onWaitLinked) and
//                    sleeps otherwise; reads that must not lag (getValue, a poll, a host
//                    signal's check) read the Vulkan counter themselves (refresh). On the NVIDIA
//                    driver vkWaitSemaphores uses CPU while it waits (bench/interop: ~10% of a
//                    core per idle import), so an import nobody waits on should not be in it.
//                    Native mode keeps watching: GPU-side waits for Vulkan values link no
//                    waiter, and the completion thread reads the value they waited for.
//
// Why a thread per import and not one vkWaitSemaphores(WAIT_ANY) per VkDevice: Mesa's emulated
// timelines (lavapipe, the CI driver) have no WAIT_ANY, and Mesa's runtime then busy-polls
// every semaphore for the whole timeout (vk_sync.c, __vk_sync_wait_many): measured 0.69 of a
// core per idle bridge here. A wait on one semaphore sleeps on a condition variable. The wait is
// bounded (kWatchTimeoutNs) because nothing else can interrupt it: the bound is the longest
// detach() waits, and costs ~100 wake-ups per second per import when idle.
//
// Lifetimes: a mirror watches while the baton semaphore's handle lives; the handle's destruction
// calls detach(), which returns only when neither the watcher nor a forwarding call can touch the
// VkSemaphore or the baton semaphore any more, so that the application may destroy the
// VkSemaphore (and, after its last import, the VkDevice) right after.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "baton/vulkan.hpp"
#include "forwarding.hpp"
#include "semaphore.hpp"
#include "status.hpp"
#include "vulkan_functions.hpp"

namespace baton::interop {

// The longest one vkWaitSemaphores of a watcher lasts; see above.
constexpr uint64_t kWatchTimeoutNs = 10'000'000;

class VulkanMirror final : public ForwardingTimeline {
 public:
  // `external`: in native mode, the VkSemaphore as imported into a baton device, whose queues
  // then signal and wait for it GPU-side; null in bridged mode.
  VulkanMirror(const VulkanFunctions& fns, VkDevice device, VkSemaphore semaphore,
               VulkanFailurePolicy policy, InteropMode mode, std::string reason,
               uint64_t initialValue, core::Ref<core::DeviceTimeline> external = {});
  ~VulkanMirror() override;

  // Starts forwarding and watching. `semaphore` is the baton semaphore this mirrors; it must
  // stay alive until detach() returns. ErrorInvalidState when the VkSemaphore is already
  // imported, ErrorOutOfHostMemory when no thread can be started.
  core::Status attach(core::Semaphore* semaphore);

  // core::ExternalTimeline
  Kind kind() const noexcept override { return Kind::Vulkan; }
  void onReached(core::Semaphore& semaphore, uint64_t value) override;
  void onFailed(core::Semaphore& semaphore) override;
  void detach() override;
  void onWaitLinked(uint64_t value) override;
  void refresh(core::Semaphore& semaphore) override;
  core::DeviceTimeline* onDevice(uint64_t deviceHandle) noexcept override {
    return external_ && external_->deviceHandle() == deviceHandle ? external_.get() : nullptr;
  }

  InteropMode mode() const noexcept { return mode_; }
  const std::string& reason() const noexcept { return reason_; }
  VkDevice device() const noexcept { return device_; }
  VkSemaphore vulkanSemaphore() const noexcept { return vkSemaphore_; }
  VulkanFailurePolicy policy() const noexcept { return policy_; }

 private:
  void watch();
  // The next value worth waiting for on the Vulkan side, or 0 when this mirror is not forwarding.
  uint64_t nextVulkanTarget();
  // Bridged: returns once something in baton waits on the semaphore, or detach() began.
  void awaitDemand();

  const VulkanFunctions fns_;
  const VkDevice device_;
  const VkSemaphore vkSemaphore_;
  const VulkanFailurePolicy policy_;
  const InteropMode mode_;
  const std::string reason_;
  const core::Ref<core::DeviceTimeline> external_;

  // (ForwardingTimeline's mutex_ guards stoppedIdle_'s wait.)
  std::condition_variable stoppedIdle_;  // a stopped watcher sleeps here until detach
  std::thread watcher_;

  // On-demand watching (bridged). demandMutex_ is a leaf lock: onWaitLinked takes it under the
  // semaphore's lock, and nothing is locked while it is held.
  std::atomic<bool> watching_{true};  // the watcher is not asleep in awaitDemand
  std::mutex demandMutex_;
  std::condition_variable demandCv_;
  bool demand_ = false;    // a waiter linked (or detach began) since the watcher last slept
  bool stopping_ = false;  // detach began (under demandMutex_)
};

}  // namespace baton::interop
