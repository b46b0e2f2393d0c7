#include "fd_timeline.hpp"

#include <pthread.h>

#include <algorithm>
#include <iterator>
#include <system_error>
#include <utility>

#include "report.hpp"

namespace baton::interop {

using core::error;
using core::format;
using core::Status;

class VulkanFdTimeline::Observed final : public core::Object, public core::WatchSink {
 public:
  // On a driver thread (DeviceTimeline::watch): note the value and wake the observer.
  void reached(uint64_t value) override {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (value <= reported) return;
      reported = value;
    }
    cv.notify_one();
  }

  std::mutex mutex;  // a leaf lock: onWaitLinked takes it under the semaphore's lock
  std::condition_variable cv;
  uint64_t reported = 0;         // the highest value a watch reported
  std::vector<uint64_t> demand;  // values waiters linked for, not yet handed to a watch
  bool stopping = false;         // detach() began
};

VulkanFdTimeline::VulkanFdTimeline(core::Ref<core::DeviceTimeline> external, uint64_t initialValue,
                                   std::string reason)
    : external_(std::move(external)),
      reason_(std::move(reason)),
      observed_(core::makeRef<Observed>()),
      forwarded_(initialValue),
      seen_(initialValue) {}

VulkanFdTimeline::~VulkanFdTimeline() {
  // As VulkanMirror's: detach() has run unless a path forgot it.
  if (observer_.joinable()) detach();
}

Status VulkanFdTimeline::attach(core::Semaphore* semaphore) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    semaphore_ = semaphore;
    attached_ = true;
  }
  try {
    observer_ = std::thread([this] { observe(); });
    pthread_setname_np(observer_.native_handle(), "baton-vkfd");
  } catch (const std::system_error& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    attached_ = false;
    return error(Result::ErrorOutOfHostMemory, "could not start the observer thread: %s", e.what());
  }
  return Status();
}

void VulkanFdTimeline::detach() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!attached_ || detached_) return;
    detached_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(observed_->mutex);
    observed_->stopping = true;
  }
  observed_->cv.notify_all();
  // The observer never blocks in the driver for long: a watch only enqueues.
  observer_.join();
}

void VulkanFdTimeline::onWaitLinked(uint64_t value) {
  {
    std::lock_guard<std::mutex> lock(observed_->mutex);
    if (value <= observed_->reported) return;
    observed_->demand.push_back(value);
  }
  observed_->cv.notify_one();
}

void VulkanFdTimeline::observe() {
  std::set<uint64_t> watching;  // values a watch is pending for
  uint64_t handled = 0;         // the highest reported value passed to reachObserved
  std::unique_lock<std::mutex> lock(observed_->mutex);
  for (;;) {
    observed_->cv.wait(lock, [&] {
      return observed_->stopping || !observed_->demand.empty() || observed_->reported > handled;
    });
    if (observed_->stopping) return;
    const uint64_t reported = observed_->reported;
    std::vector<uint64_t> demand = std::move(observed_->demand);
    observed_->demand.clear();
    lock.unlock();
    if (reported > handled) {
      handled = reported;
      reachObserved(reported);
      // Watches for values up to it have ended or are about to (the driver saw the value).
      watching.erase(watching.begin(), watching.upper_bound(reported));
    }
    std::sort(demand.begin(), demand.end());
    demand.erase(std::unique(demand.begin(), demand.end()), demand.end());
    const uint64_t known = semaphore_->value(false);
    for (uint64_t value : demand) {
      if (value <= known || value <= handled || watching.count(value)) continue;
      Status st = external_->watch(value, observed_.get(), core::Ref<core::Object>(observed_));
      if (!st.ok()) {
        stopWith(format("watching for value %llu through the device failed: %s",
                        static_cast<unsigned long long>(value), st.message().c_str()));
        break;
      }
      watching.insert(value);
    }
    lock.lock();
  }
}

void VulkanFdTimeline::reachObserved(uint64_t value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (detached_ || value <= seen_) return;
    // Recorded before reach(), so that onReached(value), which reach() calls, does not signal the
    // value back.
    seen_ = value;
    if (stopped_) return;
  }
  // A failed semaphore stays failed.
  if (!semaphore_->failed()) semaphore_->reach(value);
}

void VulkanFdTimeline::stopWith(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (detached_ || stopped_) return;
    stopped_ = true;
  }
  core::message(semaphore_->instance(), MessageSeverity::Error,
                "semaphore '" + semaphore_->name() + "': " + why);
  semaphore_->fail(Result::ErrorSemaphoreFailed, why);
}

void VulkanFdTimeline::onReached(core::Semaphore& semaphore, uint64_t value) {
  std::string problem;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!attached_ || detached_ || stopped_) return;
    // Values a queue of the device signalled GPU-side are the Vulkan timeline's already.
    auto above = std::upper_bound(deviceSignalled_.begin(), deviceSignalled_.end(), value);
    bool signalledByDevice = above != deviceSignalled_.begin() && *std::prev(above) == value;
    deviceSignalled_.erase(deviceSignalled_.begin(), above);
    if (signalledByDevice) {
      forwarded_ = std::max(forwarded_, value);
      return;
    }
    if (value <= forwarded_ || value <= seen_) return;
    Status st = external_->hostSignal(value);
    if (st.ok()) {
      forwarded_ = value;
      return;
    }
    problem = format("signalling %llu through the device failed: %s",
                     static_cast<unsigned long long>(value), st.message().c_str());
    stopped_ = true;
  }
  std::string why = "forwarding to its Vulkan timeline failed: " + problem;
  core::message(semaphore.instance(), MessageSeverity::Error,
                "semaphore '" + semaphore.name() + "': " + why);
  semaphore.fail(Result::ErrorSemaphoreFailed, why);
}

void VulkanFdTimeline::onDeviceSignal(uint64_t value) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (detached_) return;
  auto at = std::upper_bound(deviceSignalled_.begin(), deviceSignalled_.end(), value);
  deviceSignalled_.insert(at, value);
}

void VulkanFdTimeline::onFailed(core::Semaphore& semaphore) {
  uint64_t known = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bool quiet = !attached_ || detached_ || stopped_;
    stopped_ = true;
    if (quiet) return;
    known = std::max(forwarded_, seen_);
  }
  core::message(semaphore.instance(), MessageSeverity::Warning,
                format("semaphore '%s' failed; baton no longer signals its Vulkan timeline, so "
                       "Vulkan work waiting for values above %llu stays blocked (a timeline "
                       "imported from its descriptor alone is held: releasing it would need its "
                       "VkDevice's maxTimelineSemaphoreValueDifference)",
                       semaphore.name().c_str(), static_cast<unsigned long long>(known)));
}

}  // namespace baton::interop
