#include "forwarding.hpp"

#include <algorithm>
#include <iterator>

#include "report.hpp"

namespace baton::interop {

void ForwardingTimeline::observe(uint64_t value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (detached_ || value <= observed_) return;
    // Recorded before reach(), so that onReached(value), which reach() calls, does not signal
    // the value back to Vulkan.
    observed_ = value;
    if (stopped_) return;
  }
  // A failed semaphore stays failed: a value that Vulkan reaches afterwards is not passed on
  // (the core would otherwise satisfy baton waits for it).
  if (!semaphore_->failed()) semaphore_->reach(value);
}

void ForwardingTimeline::lose(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (detached_ || stopped_) return;
    stopped_ = true;
  }
  semaphore_->fail(Result::ErrorSemaphoreFailed, why);
}

bool ForwardingTimeline::takeDeviceSignal(uint64_t value) {
  // Values a queue signalled GPU-side are the Vulkan semaphore's already: reading the counter to
  // find out would cost a driver call, and a read that lagged behind the GPU would make us signal
  // a value again, possibly after a higher one.
  auto above = std::upper_bound(deviceSignalled_.begin(), deviceSignalled_.end(), value);
  bool signalledByDevice = above != deviceSignalled_.begin() && *std::prev(above) == value;
  deviceSignalled_.erase(deviceSignalled_.begin(), above);
  if (signalledByDevice) forwarded_ = std::max(forwarded_, value);
  return signalledByDevice;
}

void ForwardingTimeline::onDeviceSignal(uint64_t value) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (detached_) return;
  // Sorted; signals are mostly enqueued in value order, so this is an append.
  auto at = std::upper_bound(deviceSignalled_.begin(), deviceSignalled_.end(), value);
  deviceSignalled_.insert(at, value);
}

void ForwardingTimeline::forwardingFailed(core::Semaphore& semaphore, const std::string& problem) {
  // The Vulkan side can no longer follow: fail the baton side too, so that the two do not
  // silently diverge (its waiters return with this reason).
  std::string why = "forwarding to its Vulkan semaphore failed: " + problem;
  core::message(semaphore.instance(), MessageSeverity::Error,
                "semaphore '" + semaphore.name() + "': " + why);
  semaphore.fail(Result::ErrorSemaphoreFailed, why);
}

}  // namespace baton::interop
