// A Vulkan timeline semaphore known by its descriptor alone (importVulkanSemaphoreFd): a renderer
// in another process exported it (vkGetSemaphoreFdKHR, OPAQUE_FD) and handed it over. One baton
// device imports it (DeviceImpl::importTimelineFd), and only through that device is it seen:
//
//   - that device's queues wait for it and signal it GPU-side, in stream order, as in native mode;
//   - values baton reaches anywhere else (host signals, host queues, other devices) are passed on
//     with a signal on a stream of the import's own (DeviceTimeline::hostSignal), on the thread
//     that reached them;
//   - values the other side reaches are learnt only when something in baton waits for them: a
//     waiter that links (a host wait about to sleep, a held submission of another device) hands
//     its value to the observer thread ("baton-vkfd"), which asks the device to watch for it
//     (DeviceTimeline::watch: a wait on a stream of its own, then a host function); when the watch
//     fires, the observer reaches the value in baton.
//
// Neither the driver nor baton can read the Vulkan counter, so baton's value is the highest value
// it knows was reached: a lower bound, never ahead of Vulkan. Vulkan has no failure and the other
// process is not baton's: a failed baton semaphore stops forwarding (VulkanFailurePolicy::Hold).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "external_timeline.hpp"
#include "forwarding.hpp"
#include "semaphore.hpp"
#include "status.hpp"

namespace baton::interop {

class VulkanFdTimeline final : public ForwardingTimeline {
 public:
  VulkanFdTimeline(core::Ref<core::DeviceTimeline> external, uint64_t initialValue,
                   std::string reason);
  ~VulkanFdTimeline() override;

  // Starts the observer. `semaphore` must stay alive until detach() returns.
  // ErrorOutOfHostMemory when no thread can be started.
  core::Status attach(core::Semaphore* semaphore);

  // core::ExternalTimeline
  Kind kind() const noexcept override { return Kind::VulkanFd; }
  void onReached(core::Semaphore& semaphore, uint64_t value) override;
  void onFailed(core::Semaphore& semaphore) override;
  void detach() override;
  void onWaitLinked(uint64_t value) override;
  core::DeviceTimeline* onDevice(uint64_t deviceHandle) noexcept override {
    return external_->deviceHandle() == deviceHandle ? external_.get() : nullptr;
  }

  const std::string& reason() const noexcept { return reason_; }

 private:
  // What the watches report and what the waiters ask for; a reference outlives the timeline while
  // a watch is pending (the device holds it).
  class Observed;

  void observeWatches();

  const core::Ref<core::DeviceTimeline> external_;
  const std::string reason_;
  const core::Ref<Observed> watched_;

  std::thread observer_;
};

}  // namespace baton::interop
