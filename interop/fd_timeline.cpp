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
    : ForwardingTimeline(initialValue),
      external_(std::move(external)),
      reason_(std::move(reason)),
      watched_(core::makeRef<Observed>()) {}

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
    observer_ = std::thread([this] { observeWatches(); });
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
    std::lock_guard<std::mutex> lock(watched_->mutex);
    watched_->stopping = true;
  }
  watched_->cv.notify_all();
  // The observer never blocks in the driver for long: a watch only enqueues.
  observer_.join();
}

void VulkanFdTimeline::onWaitLinked(uint64_t value) {
  {
    std::lock_guard<std::mutex> lock(watched_->mutex);
    if (value <= watched_->reported) return;
    watched_->demand.push_back(value);
  }
  watched_->cv.notify_one();
}

void VulkanFdTimeline::observeWatches() {
  std::set<uint64_t> watching;  // values a watch is pending for
  uint64_t handled = 0;         // the highest reported value passed to observe
  std::unique_lock<std::mutex> lock(watched_->mutex);
  for (;;) {
    watched_->cv.wait(lock, [&] {
      return watched_->stopping || !watched_->demand.empty() || watched_->reported > handled;
    });
    if (watched_->stopping) return;
    const uint64_t reported = watched_->reported;
    std::vector<uint64_t> demand = std::move(watched_->demand);
    watched_->demand.clear();
    lock.unlock();
    if (reported > handled) {
      handled = reported;
      observe(reported);
      // Watches for values up to it have ended or are about to (the driver saw the value).
      watching.erase(watching.begin(), watching.upper_bound(reported));
    }
    std::sort(demand.begin(), demand.end());
    demand.erase(std::unique(demand.begin(), demand.end()), demand.end());
    const uint64_t known = semaphore_->value(false);
    for (uint64_t value : demand) {
      if (value <= known || value <= handled || watching.count(value)) continue;
      Status st = external_->watch(value, watched_.get(), core::Ref<core::Object>(watched_));
      if (!st.ok()) {
        std::string why = format("watching for value %llu through the device failed: %s",
                                 static_cast<unsigned long long>(value), st.message().c_str());
        core::message(semaphore_->instance(), MessageSeverity::Error,
                      "semaphore '" + semaphore_->name() + "': " + why);
        lose(why);
        break;
      }
      watching.insert(value);
    }
    lock.lock();
  }
}

void VulkanFdTimeline::onReached(core::Semaphore& semaphore, uint64_t value) {
  std::string problem;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!attached_ || detached_ || stopped_) return;
    if (takeDeviceSignal(value)) return;
    if (value <= forwarded_ || value <= observed_) return;
    Status st = external_->hostSignal(value);
    if (st.ok()) {
      forwarded_ = value;
      return;
    }
    problem = format("signalling %llu through the device failed: %s",
                     static_cast<unsigned long long>(value), st.message().c_str());
    stopped_ = true;
  }
  forwardingFailed(semaphore, problem);
}

void VulkanFdTimeline::onFailed(core::Semaphore& semaphore) {
  uint64_t known = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bool quiet = !attached_ || detached_ || stopped_;
    stopped_ = true;
    if (quiet) return;
    known = std::max(forwarded_, observed_);
  }
  core::message(semaphore.instance(), MessageSeverity::Warning,
                format("semaphore '%s' failed; baton no longer signals its Vulkan timeline, so "
                       "Vulkan work waiting for values above %llu stays blocked (a timeline "
                       "imported from its descriptor alone is held: releasing it would need its "
                       "VkDevice's maxTimelineSemaphoreValueDifference)",
                       semaphore.name().c_str(), static_cast<unsigned long long>(known)));
}

}  // namespace baton::interop
